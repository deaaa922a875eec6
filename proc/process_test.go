//go:build linux

package proc_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/proc"
)

// waitLimit bounds every wait in these tests; it is a failure, not a pace.
const waitLimit = 10 * time.Second

// sink collects output and lets tests wait for it.
type sink struct {
	mu       sync.Mutex
	streams  map[proc.Stream][]byte
	all      []byte
	changed  chan struct{} // closed and replaced on every chunk
	afterEOF bool          // set if a chunk arrived after OutputDone (must not happen)
	done     <-chan struct{}
}

func newSink() *sink {
	return &sink{streams: make(map[proc.Stream][]byte), changed: make(chan struct{})}
}

func (s *sink) write(st proc.Stream, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		select {
		case <-s.done:
			s.afterEOF = true
		default:
		}
	}
	s.streams[st] = append(s.streams[st], b...)
	s.all = append(s.all, b...)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *sink) get(st proc.Stream) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.streams[st]...)
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.all)
}

// waitFor waits until the collected output contains sub.
func (s *sink) waitFor(t *testing.T, sub string) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		s.mu.Lock()
		ok := bytes.Contains(s.all, []byte(sub))
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("output never contained %q; got %q", sub, s.String())
		}
	}
}

// start starts spec with a collecting sink and closes the process at the
// end of the test.
func start(t *testing.T, spec proc.Spec, opts proc.Options) (*proc.Process, *sink) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	s := newSink()
	p, err := proc.Start(spec, s.write, opts)
	if err != nil {
		t.Fatalf("Start(%q): %v", spec.Argv, err)
	}
	s.mu.Lock()
	s.done = p.OutputDone()
	s.mu.Unlock()
	t.Cleanup(func() {
		p.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.afterEOF {
			t.Errorf("output delivered after OutputDone")
		}
	})
	return p, s
}

// helper returns a spec that runs the named helper of main_test.go.
func helper(name string, args ...string) proc.Spec {
	return proc.Spec{
		Argv: append([]string{selfExe()}, args...),
		Env:  []string{helperEnv + "=" + name, noRaceExitSleep},
	}
}

// noRaceExitSleep stops a -race helper from sleeping 1 s at exit.
const noRaceExitSleep = "GORACE=atexit_sleep_ms=0"

// sh returns a spec running script with /bin/sh and a minimal PATH.
func sh(script string) proc.Spec {
	return proc.Spec{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}
}

func wait(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// finish waits for exit and EOF and returns the exit code.
func finish(t *testing.T, p *proc.Process) int {
	t.Helper()
	wait(t, p.Exited(), "exit")
	wait(t, p.OutputDone(), "output EOF")
	return p.ExitCode()
}

func TestStreamString(t *testing.T) {
	for s, want := range map[proc.Stream]string{proc.StreamStdout: "stdout", proc.StreamStderr: "stderr", proc.StreamPTY: "pty"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", s, got, want)
		}
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 1, 4, 5, 44} {
		for _, mode := range []string{"open", "closed"} {
			for _, tty := range []bool{false, true} {
				name := strconv.Itoa(code) + "/" + mode + "/tty=" + strconv.FormatBool(tty)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					spec := helper("exit", strconv.Itoa(code), mode)
					spec.TTY = tty
					p, _ := start(t, spec, proc.Options{})
					if got := finish(t, p); got != code {
						t.Errorf("exit code %d, want %d", got, code)
					}
				})
			}
		}
	}
}

func TestShellExitCode(t *testing.T) {
	t.Parallel()
	p, _ := start(t, sh("exit 44"), proc.Options{})
	if got := finish(t, p); got != 44 {
		t.Errorf("exit code %d, want 44", got)
	}
}

func TestKillGives137(t *testing.T) {
	t.Parallel()
	for _, tty := range []bool{false, true} {
		spec := helper("sleep")
		spec.TTY = tty
		p, _ := start(t, spec, proc.Options{})
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		if got := finish(t, p); got != 137 {
			t.Errorf("tty=%v: exit code %d, want 137", tty, got)
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("Signal after exit: %v, want nil", err)
		}
	}
}

func TestSignalInterrupt(t *testing.T) {
	t.Parallel()
	p, _ := start(t, helper("sleep"), proc.Options{})
	if err := p.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if got, err := p.Wait(ctx); err != nil || got != 130 {
		t.Errorf("Wait: %d, %v; want 130", got, err)
	}
	if got := finish(t, p); got != 130 {
		t.Errorf("exit code %d, want 130", got)
	}
}

func TestIgnoredSIGTERMNeedsKill(t *testing.T) {
	t.Parallel()
	p, s := start(t, helper("ignoreterm"), proc.Options{})
	s.waitFor(t, "ready")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
		t.Fatalf("exited on an ignored SIGTERM with %d", p.ExitCode())
	case <-time.After(50 * time.Millisecond):
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if got := finish(t, p); got != 137 {
		t.Errorf("exit code %d, want 137", got)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		spec proc.Spec
		want error
	}{
		{"missing program", proc.Spec{Argv: []string{"no-such-program-xyz"}, Env: []string{"PATH=/bin:/usr/bin"}}, syscall.ENOENT},
		{"missing absolute program", proc.Spec{Argv: []string{"/no/such/program"}}, syscall.ENOENT},
		{"missing dir", proc.Spec{Argv: []string{"/bin/sh", "-c", "true"}, Dir: filepath.Join(dir, "gone")}, syscall.ENOENT},
		{"missing dir, relative program", proc.Spec{Argv: []string{"./x"}, Dir: filepath.Join(dir, "gone")}, syscall.ENOENT},
		{"not executable", proc.Spec{Argv: []string{"noexec"}, Env: []string{"PATH=" + dir}}, syscall.EACCES},
		{"not executable, by path", proc.Spec{Argv: []string{noexec}}, syscall.EACCES},
		{"empty argv", proc.Spec{}, nil},
	}
	for _, c := range cases {
		p, err := proc.Start(c.spec, nil, proc.Options{})
		if err == nil {
			p.Close()
			t.Errorf("%s: Start succeeded", c.name)
			continue
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want errors.Is %v", c.name, err, c.want)
		}
	}
}

func TestResolvesWithChildPATH(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := "#!/bin/sh\necho tool:$0\n"
	if err := os.WriteFile(filepath.Join(dir, "codex-test-tool"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "rel-tool"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		spec proc.Spec
		want string
	}{
		{"child PATH", proc.Spec{Argv: []string{"codex-test-tool"}, Env: []string{"PATH=/nonexistent:" + dir}}, "tool:" + dir + "/codex-test-tool"},
		{"slash relative to Dir", proc.Spec{Argv: []string{"./codex-test-tool"}, Dir: dir}, "tool:./codex-test-tool"},
		{"relative PATH entry", proc.Spec{Argv: []string{"rel-tool"}, Dir: dir, Env: []string{"PATH=bin"}}, "tool:"},
	}
	for _, c := range cases {
		p, s := start(t, c.spec, proc.Options{})
		if code := finish(t, p); code != 0 {
			t.Errorf("%s: exit %d, output %q", c.name, code, s)
		}
		if !strings.Contains(s.String(), c.want) {
			t.Errorf("%s: output %q, want %q", c.name, s, c.want)
		}
	}
}

func TestArg0DirEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := helper("args")
	spec.Arg0 = "custom-arg0"
	spec.Dir = dir
	spec.Env = append(spec.Env, "A=1", "B=two words")
	p, s := start(t, spec, proc.Options{})
	finish(t, p)
	want := "arg0=custom-arg0\nwd=" + dir + "\nenv=" + helperEnv + "=args\nenv=" + noRaceExitSleep + "\nenv=A=1\nenv=B=two words\n"
	if got := s.String(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestStdoutStderrSeparate(t *testing.T) {
	t.Parallel()
	p, s := start(t, helper("both"), proc.Options{})
	finish(t, p)
	if got := string(s.get(proc.StreamStdout)); got != "to-stdout\n" {
		t.Errorf("stdout %q", got)
	}
	if got := string(s.get(proc.StreamStderr)); got != "to-stderr\n" {
		t.Errorf("stderr %q", got)
	}
}

func TestStdinRoundTrip(t *testing.T) {
	t.Parallel()
	data := make([]byte, 1<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	spec := proc.Spec{Argv: []string{"cat"}, Env: []string{"PATH=/bin:/usr/bin"}, PipeStdin: true}
	p, s := start(t, spec, proc.Options{})
	ctx := context.Background()
	for off, i := 0, 0; off < len(data); i++ {
		n := min(1+(i*7919)%(96<<10), len(data)-off) // varied chunk sizes
		if err := p.Write(ctx, data[off:off+n]); err != nil {
			t.Fatal(err)
		}
		off += n
	}
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if code := finish(t, p); code != 0 {
		t.Fatalf("cat exited %d", code)
	}
	if got := s.get(proc.StreamStdout); !bytes.Equal(got, data) {
		t.Fatalf("round trip: got %d bytes, want %d identical", len(got), len(data))
	}
}

func TestStdinStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Without PipeStdin, stdin is /dev/null: cat sees EOF at once.
	p, _ := start(t, proc.Spec{Argv: []string{"cat"}, Env: []string{"PATH=/bin:/usr/bin"}}, proc.Options{})
	if err := p.Write(ctx, []byte("x")); !errors.Is(err, proc.ErrStdinClosed) {
		t.Errorf("Write without stdin: %v, want ErrStdinClosed", err)
	}
	if err := p.CloseStdin(); err != nil {
		t.Errorf("CloseStdin without stdin: %v", err)
	}
	if code := finish(t, p); code != 0 {
		t.Errorf("cat on /dev/null exited %d", code)
	}

	// After CloseStdin, writes are refused; CloseStdin is idempotent.
	p, _ = start(t, proc.Spec{Argv: []string{"cat"}, Env: []string{"PATH=/bin:/usr/bin"}, PipeStdin: true}, proc.Options{})
	for range 2 {
		if err := p.CloseStdin(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Write(ctx, []byte("x")); !errors.Is(err, proc.ErrStdinClosed) {
		t.Errorf("Write after CloseStdin: %v, want ErrStdinClosed", err)
	}
	finish(t, p)

	// After the exit, writes are discarded silently.
	p, _ = start(t, proc.Spec{Argv: []string{"true"}, Env: []string{"PATH=/bin:/usr/bin"}, PipeStdin: true}, proc.Options{})
	finish(t, p)
	if err := p.Write(ctx, []byte("x")); err != nil {
		t.Errorf("Write after exit: %v, want nil", err)
	}

	// PTY: stdin cannot be closed; pipes cannot be resized.
	pt, _ := start(t, proc.Spec{Argv: []string{"cat"}, Env: []string{"PATH=/bin:/usr/bin"}, TTY: true}, proc.Options{})
	if err := pt.CloseStdin(); !errors.Is(err, proc.ErrPTYStdin) {
		t.Errorf("CloseStdin on pty: %v, want ErrPTYStdin", err)
	}
	if err := p.Resize(10, 10); !errors.Is(err, proc.ErrNotPTY) {
		t.Errorf("Resize on pipes: %v, want ErrNotPTY", err)
	}
}

func TestStdinQueueBlocks(t *testing.T) {
	t.Parallel()
	p, _ := start(t, proc.Spec{Argv: []string{"sleep", "1000"}, Env: []string{"PATH=/bin:/usr/bin"}, PipeStdin: true}, proc.Options{})
	chunk := make([]byte, 64<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var err error
	n := 0
	for ; err == nil && n < 10*proc.StdinQueueLen; n++ {
		err = p.Write(ctx, chunk)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after %d writes: %v, want DeadlineExceeded", n, err)
	}
	if n > proc.StdinQueueLen+4 {
		t.Errorf("%d writes accepted before blocking; queue is %d", n, proc.StdinQueueLen)
	}
	// Close must unblock the writer stuck on the full pipe.
}

func TestPTYEcho(t *testing.T) {
	t.Parallel()
	spec := sh("read l; echo got:$l")
	spec.TTY = true
	p, s := start(t, spec, proc.Options{})
	if err := p.Write(context.Background(), []byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if code := finish(t, p); code != 0 {
		t.Errorf("exit %d", code)
	}
	out := s.String()
	if !strings.Contains(out, "ping\r\n") || !strings.Contains(out, "got:ping\r\n") {
		t.Errorf("output %q, want ping\\r\\n and got:ping\\r\\n", out)
	}
	if len(s.get(proc.StreamStdout)) != 0 || len(s.get(proc.StreamPTY)) == 0 {
		t.Errorf("pty output must be labelled pty")
	}
}

func TestPTYSizeAndResize(t *testing.T) {
	t.Parallel()
	spec := sh("tty; stty size; read l; stty size")
	spec.TTY = true
	p, s := start(t, spec, proc.Options{})
	s.waitFor(t, "24 80\r\n")
	if !strings.HasPrefix(s.String(), "/dev/pts/") {
		t.Errorf("tty printed %q", s)
	}
	if err := p.Resize(30, 100); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(context.Background(), []byte("\n")); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "30 100\r\n")
	finish(t, p)

	spec.Rows, spec.Cols = 50, 132
	_, s = start(t, spec, proc.Options{})
	s.waitFor(t, "50 132\r\n")
}

// TestPTYBurst checks that every byte written to a PTY just before exit
// arrives before OutputDone, many times over.
func TestPTYBurst(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	want := burst(size)
	for i := range 100 {
		var got []byte
		var after bool
		var done <-chan struct{}
		var mu sync.Mutex
		spec := helper("print", strconv.Itoa(size))
		spec.TTY = true
		p, err := proc.Start(spec, func(_ proc.Stream, b []byte) {
			mu.Lock()
			defer mu.Unlock()
			if done != nil && isDone(done) {
				after = true
			}
			got = append(got, b...)
		}, proc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		done = p.OutputDone()
		mu.Unlock()
		code := finish(t, p)
		p.Close()
		mu.Lock()
		if code != 0 || after || !bytes.Equal(got, want) {
			t.Fatalf("run %d: exit %d, %d of %d bytes, equal=%v, after EOF=%v",
				i, code, len(got), size, bytes.Equal(got, want), after)
		}
		mu.Unlock()
	}
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestGrandchildKeepsOutputOpen: exit and EOF are independent, and a normal
// exit does not cut the pipes. (Pipes only: when a PTY's session leader
// exits, the kernel hangs the terminal up and SIGHUPs its foreground group.)
func TestGrandchildKeepsOutputOpen(t *testing.T) {
	t.Parallel()
	for _, tty := range []bool{false} {
		spec := helper("grandchild")
		spec.TTY = tty
		p, s := start(t, spec, proc.Options{})
		wait(t, p.Exited(), "exit")
		if p.ExitCode() != 0 {
			t.Fatalf("exit %d", p.ExitCode())
		}
		wait(t, p.OutputDone(), "output EOF")
		if !strings.Contains(s.String(), "late") {
			t.Errorf("tty=%v: output %q lacks the grandchild's late line", tty, s)
		}
	}
}

// TestNoInheritedFDs: the child sees fds 0, 1 and 2 only, even while the
// server holds an fd without close-on-exec. ls(1) is used rather than a Go
// helper, whose runtime keeps cgroup files open.
func TestNoInheritedFDs(t *testing.T) {
	t.Parallel()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	leak, err := unix.Dup(int(f.Fd())) // dup(2) does not set FD_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	for _, tty := range []bool{false, true} {
		spec := proc.Spec{Argv: []string{"ls", "-l", "/proc/self/fd/"}, Env: []string{"PATH=/bin:/usr/bin"}, TTY: tty, PipeStdin: true}
		p, s := start(t, spec, proc.Options{})
		if code := finish(t, p); code != 0 {
			t.Fatalf("ls exited %d: %q", code, s)
		}
		var fds []string
		for _, line := range strings.Split(s.String(), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 3 || fields[len(fields)-2] != "->" {
				continue // "total 0"
			}
			fd, target := fields[len(fields)-3], fields[len(fields)-1]
			if fd != "0" && fd != "1" && fd != "2" && !strings.HasPrefix(target, "/proc/") {
				t.Errorf("tty=%v: child inherited fd %s -> %s", tty, fd, target)
			}
			fds = append(fds, fd)
		}
		if len(fds) < 3 || len(fds) > 4 || strings.Join(fds[:3], ",") != "0,1,2" {
			t.Errorf("tty=%v: child fds %q, want 0,1,2 and ls's own directory fd", tty, s)
		}
	}
}

// TestForceCloseAfterKill: without a TreeKiller, a setsid grandchild
// survives the group kill and holds stdout; KillGrace later the read end is
// cut so OutputDone still fires.
func TestForceCloseAfterKill(t *testing.T) {
	t.Parallel()
	p, s := start(t, helper("setsid-grandchild"), proc.Options{})
	gc := grandchildPid(t, s)
	killAtEnd(t, gc)
	killed := time.Now()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	wait(t, p.Exited(), "exit")
	wait(t, p.OutputDone(), "forced output EOF")
	if d := time.Since(killed); d < proc.KillGrace-100*time.Millisecond {
		t.Errorf("OutputDone after %v, before the %v grace", d, proc.KillGrace)
	}
	if !alive(gc) {
		t.Errorf("escaped grandchild died without a TreeKiller; test premise broken")
	}
}

func TestCloseKillsAndIsIdempotent(t *testing.T) {
	t.Parallel()
	p, err := proc.Start(helper("sleep"), nil, proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if !isDone(p.Exited()) || !isDone(p.OutputDone()) || p.ExitCode() != 137 {
		t.Errorf("after Close: exited=%v eof=%v code=%d", isDone(p.Exited()), isDone(p.OutputDone()), p.ExitCode())
	}
	p.Close()
	if err := p.Write(context.Background(), []byte("x")); !errors.Is(err, proc.ErrStdinClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

// TestIdleCost measures server memory and threads per idle child.
func TestIdleCost(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	for _, tty := range []bool{false, true} {
		t.Run("tty="+strconv.FormatBool(tty), func(t *testing.T) { idleCost(t, tty) })
	}
}

func idleCost(t *testing.T, tty bool) {
	const k = 100
	before, thrBefore := goMemory(), threads()
	procs := make([]*proc.Process, 0, k)
	defer func() {
		for _, p := range procs {
			p.Close()
		}
	}()
	for range k {
		p, err := proc.Start(proc.Spec{Argv: []string{"/bin/sleep", "1000"}, TTY: tty}, func(proc.Stream, []byte) {}, proc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	time.Sleep(50 * time.Millisecond) // let the goroutines park
	after, thrAfter := goMemory(), threads()
	perChild := (after - before) / k
	t.Logf("tty=%v: %d B of Go heap+stacks per idle child, threads %d -> %d", tty, perChild, thrBefore, thrAfter)
	if perChild > 31<<10 {
		t.Errorf("%d B per idle child, want <= 31 KiB", perChild)
	}
	if thrAfter-thrBefore > 8 {
		t.Errorf("threads grew from %d to %d for %d idle children", thrBefore, thrAfter, k)
	}
}

func goMemory() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

func threads() int {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

// grandchildPid reads the "gc:<pid>" line a helper prints.
func grandchildPid(t *testing.T, s *sink) int {
	t.Helper()
	s.waitFor(t, "\n")
	line, _, _ := strings.Cut(s.String(), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "gc:")))
	if err != nil {
		t.Fatalf("no grandchild pid in %q", s)
	}
	return pid
}

// killAtEnd kills pid, alive now, when the test ends, through a pidfd
// opened now: by then the process may have died and its number gone to a
// stranger (pid_max may be 32768, and TestKillAfterReapSparesReusedPid
// hands freed numbers out again at once through ns_last_pid), and a kill
// by number would reach the processes of other test packages running
// beside this one.
func killAtEnd(t *testing.T, pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Logf("no pidfd for %d: %v", pid, err)
		return
	}
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		_ = unix.Close(fd)
	})
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] != 'Z'
}

// BenchmarkPipeThroughput reads `head -c 256M /dev/zero` through a pipe.
func BenchmarkPipeThroughput(b *testing.B) {
	benchThroughput(b, false)
}

// BenchmarkPTYThroughput reads 64 MiB through a PTY.
func BenchmarkPTYThroughput(b *testing.B) {
	benchThroughput(b, true)
}

func benchThroughput(b *testing.B, tty bool) {
	size := 256 << 20
	if tty {
		size = 64 << 20
	}
	b.SetBytes(int64(size))
	for range b.N {
		var n atomic.Int64
		spec := proc.Spec{Argv: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}, Env: []string{"PATH=/usr/bin:/bin"}, TTY: tty}
		p, err := proc.Start(spec, func(_ proc.Stream, c []byte) { n.Add(int64(len(c))) }, proc.Options{})
		if err != nil {
			b.Fatal(err)
		}
		<-p.OutputDone()
		p.Close()
		if n.Load() != int64(size) {
			b.Fatalf("read %d bytes, want %d", n.Load(), size)
		}
	}
}

// TestSignalStateDefault: the child starts with an empty signal mask and
// no ignored signals, in its own session and process group.
func TestSignalStateDefault(t *testing.T) {
	t.Parallel()
	p, s := start(t, proc.Spec{Argv: []string{"cat", "/proc/self/status", "/proc/self/stat"}, Env: []string{"PATH=/bin:/usr/bin"}}, proc.Options{})
	finish(t, p)
	out := s.String()
	for _, want := range []string{"SigBlk:\t0000000000000000\n", "SigIgn:\t0000000000000000\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("child status lacks %q:\n%s", want, out)
		}
	}
	pid := strconv.Itoa(p.Pid())
	if !strings.Contains(out, " "+pid+" "+pid+" ") { // pgrp and session after ppid
		t.Errorf("child is not its own group and session leader: %s", out[strings.LastIndex(out, "\n"+pid)+1:])
	}
}

// TestClaimIgnoredSignals: a server started with SIGHUP and SIGINT ignored
// passes SIG_IGN on to its children, unless it claims them first.
func TestClaimIgnoredSignals(t *testing.T) {
	t.Parallel()
	for mode, want := range map[string]string{"plain": "SigIgn:\t0000000000000003", "claim": "SigIgn:\t0000000000000000"} {
		spec := sh(`trap "" HUP INT; exec "$0" "$1"`)
		spec.Argv = append(spec.Argv, selfExe(), mode)
		spec.Env = append(spec.Env, helperEnv+"=sigign", noRaceExitSleep)
		p, s := start(t, spec, proc.Options{})
		if code := finish(t, p); code != 0 {
			t.Fatalf("%s: helper exited %d: %q", mode, code, s)
		}
		if got := strings.TrimSpace(s.String()); got != want {
			t.Errorf("%s: child %q, want %q", mode, got, want)
		}
	}
}

// TestParentDeathSignal: when the server dies, its children get SIGTERM.
// The helper's child is in its own session, so only Pdeathsig reaches it.
func TestParentDeathSignal(t *testing.T) {
	t.Parallel()
	p, s := start(t, helper("pdeath"), proc.Options{})
	gc := grandchildPid(t, s)
	killAtEnd(t, gc)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	finish(t, p)
	deadline := time.Now().Add(waitLimit)
	for alive(gc) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the killed server still runs", gc)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
