package escalate

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// shRequest is a Request running `/bin/sh -c script` in dir with env.
func shRequest(dir, script string, env map[string]string) Request {
	if env == nil {
		env = map[string]string{"PATH": "/usr/bin:/bin"}
	}
	return Request{File: "/bin/sh", Argv: []string{"sh", "-c", script}, Workdir: dir, Env: env}
}

// runOutput runs r with stdout and stderr on a pipe and returns the code
// and the output.
func runOutput(t *testing.T, e *Escalator, ctx context.Context, r Request) (int, string) {
	t.Helper()
	rd, w := pipe(t)
	code, err := runFile(e, ctx, r, []*os.File{nil, w, w})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	w.Close()
	out, _ := readAll(rd)
	return code, out
}

func readAll(f *os.File) (string, error) {
	var b strings.Builder
	_, err := bufio.NewReader(f).WriteTo(&b)
	return b.String(), err
}

func TestRunExitCodesAndSignals(t *testing.T) {
	e := NewEscalator(zaptest.NewLogger(t))
	for script, want := range map[string]int{
		"exit 0": 0, "exit 42": 42, "exit 255": 255,
		"kill -TERM $$": 128 + 15, "kill -KILL $$": 128 + 9, "kill -SEGV $$": 128 + 11,
	} {
		code, err := runFile(e, context.Background(), shRequest("/", script, nil), nil)
		if err != nil || code != want {
			t.Errorf("%q: %d, %v; want %d", script, code, err, want)
		}
	}
	assertNoZombies(t)
}

func TestRunRequestExactly(t *testing.T) {
	e := NewEscalator(zaptest.NewLogger(t))
	dir := t.TempDir()
	// argv[0] kept, cwd = Workdir, env the server's plus the request's
	// harmless variables and no editor (docs/shell-tool.md §11.2), SIGPIPE not ignored,
	// only fds 0-2 open.
	e.env = []string{"PATH=/usr/bin:/bin", "HOME=/srv", "PWD=/elsewhere", "LANG=en_US.UTF-8"}
	r := Request{File: "/bin/sh", Argv: []string{"custom-argv0", "-c",
		`printf '%s|' "$0" "$(pwd)"; env | sort | tr '\n' '|'; ` +
			`grep SigIgn /proc/$$/status | tr '\n' '|'; exec ls /proc/self/fd`},
		Workdir: dir, Env: map[string]string{"KEY": "VALUE", "PATH": "/evil", "LD_PRELOAD": "x.so", "BASH_ENV": "x",
			"LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "/evil/zone", "GIT_DIR": "/evil"}}
	t.Setenv("SERVER_ONLY", "leak")
	code, out := runOutput(t, e, context.Background(), r)
	parts := strings.Split(out, "|")
	if code != 0 || len(parts) < 6 {
		t.Fatalf("code %d, output %q", code, out)
	}
	if parts[0] != "custom-argv0" || parts[1] != dir {
		t.Errorf("argv0 %q cwd %q; want custom-argv0 %q", parts[0], parts[1], dir)
	}
	env := strings.Join(parts[2:len(parts)-2], "|")
	if want := "EDITOR=false|GIT_EDITOR=false|GIT_SEQUENCE_EDITOR=false|HGEDITOR=false|HOME=/srv|KUBE_EDITOR=false|" +
		"LANG=C.UTF-8|LC_ALL=C|PATH=/usr/bin:/bin|PWD=" + dir + "|SUDO_EDITOR=false|SYSTEMD_EDITOR=false|TERM=xterm|VISUAL=false"; env != want {
		t.Errorf("env %q, want %q", env, want)
	}
	ign, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(parts[len(parts)-2], "SigIgn:")), 16, 64)
	if err != nil || ign&(1<<(unix.SIGPIPE-1)) != 0 {
		t.Errorf("SigIgn %q: SIGPIPE ignored or unreadable (%v)", parts[len(parts)-2], err)
	}
	// ls's own 3 is the directory it lists.
	if fds := strings.Fields(parts[len(parts)-1]); strings.Join(fds, " ") != "0 1 2 3" {
		t.Errorf("escalated child's fds %v, want 0 1 2 (and ls's 3) only", fds)
	}
}

func TestRunDescriptorsOnTargets(t *testing.T) {
	e := NewEscalator(zaptest.NewLogger(t))
	ra, wa := pipe(t)
	rb, wb := pipe(t)
	// Swapped high numbers: each target is the number of the other file
	// in this process, so a naive dup2 order would clobber one.
	const x, y = 100, 101
	if err := unix.Dup3(int(wa.Fd()), x, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(int(wb.Fd()), y, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	fa, fb := os.NewFile(x, "a"), os.NewFile(y, "b")
	stdio := make([]*os.File, y+1)
	stdio[x], stdio[y] = fb, fa // fd 100 in the child is pipe b
	r := Request{File: "/bin/bash", Argv: []string{"bash", "-c", "echo to-b >&100; echo to-a >&101"}, Workdir: "/"}
	code, err := runFile(e, context.Background(), r, stdio)
	if err != nil || code != 0 {
		t.Fatalf("Run: %d, %v", code, err)
	}
	for _, f := range []*os.File{fa, fb, wa, wb} {
		f.Close()
	}
	a, _ := readAll(ra)
	b, _ := readAll(rb)
	if a != "to-a\n" || b != "to-b\n" {
		t.Errorf("pipe a %q, b %q; want to-a, to-b", a, b)
	}
}

func TestRunStartFailure(t *testing.T) {
	e := NewEscalator(zaptest.NewLogger(t))
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if code, err := runFile(e, done, shRequest("/", "exit 0", nil), nil); err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a done context: %d, %v; want not started", code, err)
	}
	for _, r := range []Request{
		{File: "/nonexistent/prog", Argv: []string{"prog"}, Workdir: "/"},
		{File: "/bin/sh", Argv: []string{"sh"}, Workdir: "/nonexistent-dir"},
		{File: "/etc/hostname", Argv: []string{"hostname"}, Workdir: "/"},
	} {
		if code, err := runFile(e, context.Background(), r, nil); err == nil {
			t.Errorf("%+v: code %d, no error", r, code)
		}
	}
}

// startedGroup runs script (which must print a line once it has started
// its processes) in the background and returns the first line, a channel
// with Run's result, and the Escalator.
func startedGroup(t *testing.T, ctx context.Context, e *Escalator, script string) (string, chan int) {
	t.Helper()
	rd, w := pipe(t)
	done := make(chan int, 1)
	go func() {
		code, err := runFile(e, ctx, shRequest("/", script, nil), []*os.File{nil, w, w})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- code
	}()
	line, err := bufio.NewReader(rd).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v", err)
	}
	return strings.TrimSpace(line), done
}

// running reports whether pid exists and is not a zombie (killed
// processes reparented to a non-reaping init stay zombies).
func running(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && !strings.HasPrefix(string(b[i+1:]), " Z")
}

// waitGone waits until pid no longer runs.
func waitGone(t *testing.T, pid string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !running(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("process %s still running", pid)
}

func TestRunContextCancelKillsGroup(t *testing.T) {
	e := NewEscalator(zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleeper, done := startedGroup(t, ctx, e, "sleep 1000 & echo $!; wait")
	cancel()
	if code := <-done; code != 128+9 {
		t.Errorf("code %d, want 137", code)
	}
	waitGone(t, sleeper)
	assertNoZombies(t)
}

func TestLeftoverGroupKilledAtContextEnd(t *testing.T) {
	e := NewEscalator(zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The leader exits at once; its background sleep stays in the group.
	sleeper, done := startedGroup(t, ctx, e, "sleep 1000 >/dev/null 2>&1 & echo $!; exit 3")
	if code := <-done; code != 3 {
		t.Errorf("code %d, want 3", code)
	}
	// A kill takes effect when the target next runs: give it time to
	// die, if it was killed, before deciding it survived.
	pidfd, err := unix.PidfdOpen(atoi(t, sleeper), 0)
	if err != nil {
		t.Fatalf("background process gone before the end of the call: %v", err)
	}
	defer unix.Close(pidfd)
	if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 300); n != 0 {
		t.Fatal("background process killed before the end of the call")
	}
	cancel()
	waitGone(t, sleeper)
	e.KillAll() // waits until the group is unregistered
	assertNoZombies(t)
}

func TestKillAll(t *testing.T) {
	e := NewEscalator(zaptest.NewLogger(t))
	ctx := context.Background()
	s1, d1 := startedGroup(t, ctx, e, "sleep 1000 & echo $!; wait")
	s2, d2 := startedGroup(t, ctx, e, "sleep 1000 >/dev/null 2>&1 & echo $!; exit 0")
	if code := <-d2; code != 0 {
		t.Errorf("second: code %d", code)
	}
	e.KillAll()
	if code := <-d1; code != 128+9 {
		t.Errorf("first: code %d, want 137", code)
	}
	waitGone(t, s1)
	waitGone(t, s2)
	assertNoZombies(t)
	// Still usable afterwards.
	if code, err := runFile(e, ctx, shRequest("/", "exit 7", nil), nil); code != 7 || err != nil {
		t.Errorf("after KillAll: %d, %v", code, err)
	}
}

// assertNoZombies fails if this process has a zombie child.
func assertNoZombies(t *testing.T) {
	t.Helper()
	self := os.Getpid()
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(self) {
			t.Errorf("zombie child: %s", strings.TrimSpace(s))
		}
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// runFile runs r as Run does, with r.File opened as the judged program.
func runFile(e *Escalator, ctx context.Context, r Request, stdio []*os.File) (int, error) {
	p, err := OpenProgram(r.File)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	return e.Run(ctx, r, p, stdio)
}

func runProgram(t *testing.T, e *Escalator, r Request, p *Program) (int, string) {
	t.Helper()
	rd, w := pipe(t)
	code, err := e.Run(context.Background(), r, p, []*os.File{nil, w, w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := readAll(rd)
	return code, out
}

// recordingPlacement is a Placement that counts its forks and can refuse
// them.
type recordingPlacement struct {
	forks  int
	refuse error
}

func (p *recordingPlacement) Fork(sys *syscall.SysProcAttr, fork func() (int, error)) (int, error) {
	p.forks++
	if sys == nil || !sys.Setpgid {
		return 0, errors.New("placement got no SysProcAttr of the program")
	}
	if p.refuse != nil {
		return 0, p.refuse
	}
	return fork()
}

// TestPlacedEscalator: every escalated program starts through the
// escalator's Placement (the call's cgroup leaf in the server), and one it
// refuses does not start.
func TestPlacedEscalator(t *testing.T) {
	p := &recordingPlacement{}
	e := NewPlacedEscalator(zaptest.NewLogger(t), p)
	dir := t.TempDir()
	code, out := runOutput(t, e, context.Background(), shRequest(dir, "echo placed", nil))
	if code != 0 || out != "placed\n" || p.forks != 1 {
		t.Errorf("code %d, output %q, forks %d", code, out, p.forks)
	}
	p.refuse = errors.New("no room")
	marker := filepath.Join(dir, "ran")
	if _, err := runFile(e, context.Background(), shRequest(dir, "touch "+marker, nil), nil); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Errorf("a refused placement: %v", err)
	}
	if _, err := os.Stat(marker); err == nil || p.forks != 2 {
		t.Errorf("the refused program ran (forks %d)", p.forks)
	}
	assertNoZombies(t)
}

// TestRunStdioJustBelowTheProgram: the descriptor the program is run from
// must survive the child's descriptor shuffle whatever numbers stdio has.
// ForkExec moves its status pipe (and any descriptor below its slot) to
// the first number above every descriptor it was given; with stdio on the
// number just below the program's copy, that move used to overwrite the
// copy, and the exec failed with "permission denied" (a pipe cannot be
// executed) — a flake of TestTracedRunLeaf in CI, where the tracee's
// descriptors landed there.
func TestRunStdioJustBelowTheProgram(t *testing.T) {
	e := NewEscalator(zaptest.NewLogger(t))
	ran := 0
	for n := 3; n < 64; n++ {
		rd, w := pipe(t)
		if _, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0); err == nil {
			rd.Close()
			w.Close()
			continue // in use here
		}
		if err := unix.Dup3(int(w.Fd()), n, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		w.Close()
		high := os.NewFile(uintptr(n), "high")
		code, err := runFile(e, context.Background(), shRequest("/", "echo ok", nil), []*os.File{nil, high, high})
		high.Close()
		out, _ := readAll(rd)
		rd.Close()
		if err != nil || code != 0 || out != "ok\n" {
			t.Errorf("stdout and stderr on fd %d: code %d, %v, output %q", n, code, err, out)
		}
		ran++
	}
	if ran == 0 {
		t.Skip("no free descriptor below 64")
	}
}

// TestRunRefusesTerminal: no escalated program is given a terminal, at
// any descriptor: on one, programs turn interactive (a pager runs the
// shell commands typed at it) for whoever holds the other side.
func TestRunRefusesTerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	dir := t.TempDir()
	e := NewEscalator(zaptest.NewLogger(t))
	for _, stdio := range [][]*os.File{{tty}, {nil, tty}, {nil, nil, tty}, {nil, nil, nil, tty}} {
		code, err := runFile(e, context.Background(), shRequest("/", "touch "+dir+"/ran", nil), stdio)
		if err == nil || !strings.Contains(err.Error(), "terminal") || code != 0 {
			t.Errorf("a terminal at %d: %d, %v; want not started", len(stdio)-1, code, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the program ran on a terminal")
	}
}

// TestEscalatedEnvNoEditor: an escalated program's editor variables all
// name "false", whatever the server's or the request's: an editor would
// read its keys from the command's stdin.
func TestEscalatedEnvNoEditor(t *testing.T) {
	env := escalatedEnv([]string{"PATH=/usr/bin", "EDITOR=vim", "GIT_EDITOR=nano"}, "/w",
		map[string]string{"VISUAL": "vi", "TERM": "xterm"})
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice in %q", k, env)
		}
		got[k] = v
	}
	for _, k := range noEditor {
		if got[k] != "false" {
			t.Errorf("%s=%q, want false", k, got[k])
		}
	}
	if got["PATH"] != "/usr/bin" || got["TERM"] != "xterm" || got["PWD"] != "/w" {
		t.Errorf("%q", env)
	}
}

// TestEscalatedEnvNoOtherEditor: programs take their editor from more
// variables than noEditor lists (svn SVN_EDITOR, gh GH_EDITOR, psql
// PSQL_EDITOR, bash's fc FCEDIT, jj JJ_EDITOR, …); one the server has
// must not name a real editor either, which would read its keys from the
// command's stdin (svn commit without -m under SVN_EDITOR=vim).
func TestEscalatedEnvNoOtherEditor(t *testing.T) {
	base := []string{"PATH=/usr/bin", "SVN_EDITOR=vim", "GH_EDITOR=vim", "PSQL_EDITOR=vim", "FCEDIT=vim", "JJ_EDITOR=vim", "CVSEDITOR=vim", "EDITORCONFIG=x"}
	got := map[string]string{}
	for _, kv := range escalatedEnv(base, "/w", nil) {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for _, k := range []string{"SVN_EDITOR", "GH_EDITOR", "PSQL_EDITOR", "FCEDIT", "JJ_EDITOR", "CVSEDITOR"} {
		if got[k] != "false" {
			t.Errorf("%s=%q, want false", k, got[k])
		}
	}
	if got["EDITORCONFIG"] != "x" || got["PATH"] != "/usr/bin" {
		t.Errorf("other variables changed: %q", got)
	}
}
