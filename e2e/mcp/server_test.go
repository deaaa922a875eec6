package mcp

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// defaultRules is the rules file every server gets unless a test gives its
// own: rm forbidden; touch and sh allowed (escalated); git init and mkdir
// prompt.
const defaultRules = `prefix_rule(pattern=["rm"], decision="forbidden")
prefix_rule(pattern=["touch"], decision="allow")
prefix_rule(pattern=["sh"], decision="allow")
prefix_rule(pattern=["git", "init"], decision="prompt")
prefix_rule(pattern=["mkdir"], decision="prompt")
`

// opts configures one server. The zero value is the default server: the
// default rules, an empty HOME, the work dir as cwd, and a read-only
// sandbox-state update (sandboxCwd = the workspace) sent after initialize.
type opts struct {
	rules      string         // rules/default.rules ("" = defaultRules)
	bashrc     string         // content of $HOME/.bashrc ("" = none)
	cwd        string         // server cwd ("" = the work dir)
	env        []string       // extra environment entries
	state      map[string]any // sandbox-state/update params (nil = read-only)
	noUpdate   bool           // send no sandbox-state/update at all
	clientCaps map[string]any // initialize capabilities (nil = Codex 0.169.0's)
}

// server is one running MCP server and the client end of its stdio. Its
// methods are for the test goroutine only; the reader goroutine and the
// waiter goroutine are owned by it and stopped by the cleanup that start
// registers.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	lines  chan []byte   // complete stdout lines, closed at EOF
	exited chan struct{} // closed when the process has been waited for
	marker string        // MCPTEST_MARKER value of this server's environment

	work, ws, outside, home, codexHome, stderrPath string

	nextID int
}

// workBase is where work dirs are made: not under /tmp, which a
// workspace-write sandbox makes writable.
func workBase() string {
	if b := os.Getenv("MCPTEST_WORK_BASE"); b != "" {
		return b
	}
	return "/var/tmp"
}

// start starts a server for t with o and completes the MCP handshake.
func start(t *testing.T, o opts) *server {
	t.Helper()
	s := launch(t, o)
	s.handshake(o)
	return s
}

// launch starts a server for t with o, without any handshake.
func launch(t *testing.T, o opts) *server {
	t.Helper()
	need(t)
	s := &server{t: t, lines: make(chan []byte, 64), exited: make(chan struct{})}
	s.makeDirs(o)
	s.launch(o)
	return s
}

func (s *server) makeDirs(o opts) {
	t := s.t
	work, err := os.MkdirTemp(workBase(), "mcp-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	s.work = work
	s.ws, s.outside = filepath.Join(work, "ws"), filepath.Join(work, "outside")
	s.home, s.codexHome = filepath.Join(work, "home"), filepath.Join(work, "codex-home")
	s.stderrPath = filepath.Join(work, "server.stderr")
	for _, d := range []string{s.ws, s.outside, s.home, filepath.Join(s.codexHome, "rules")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rules := o.rules
	if rules == "" {
		rules = defaultRules
	}
	writeFile(t, filepath.Join(s.codexHome, "rules", "default.rules"), rules, 0o644)
	if o.bashrc != "" {
		writeFile(t, filepath.Join(s.home, ".bashrc"), o.bashrc, 0o644)
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// launch starts the process with a short environment, as Codex starts MCP
// servers (no SHLVL), plus the test's marker.
func (s *server) launch(o opts) {
	t := s.t
	s.marker = randomHex()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(s.stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(target.argv[0], target.argv[1:]...)
	cmd.Dir = s.work
	if o.cwd != "" {
		cmd.Dir = o.cwd
	}
	cmd.Env = append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + s.home, "CODEX_HOME=" + s.codexHome,
		"CODEX_BASH_PATH=" + target.bash, "LANG=C.UTF-8", "MCPTEST_MARKER=" + s.marker,
	}, o.env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errF
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errF.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		t.Fatalf("starting %v: %v", target.argv, err)
	}
	s.cmd, s.stdin, s.stdout = cmd, inW, outR
	go s.readLines()
	go func() { _ = cmd.Wait(); close(s.exited) }()
	t.Cleanup(s.stop)
}

// readLines feeds s.lines until EOF or until stop closes s.stdout.
func (s *server) readLines() {
	defer close(s.lines)
	buf := make([]byte, 0, 64<<10)
	chunk := make([]byte, 32<<10)
	for {
		n, err := s.stdout.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			line := append([]byte(nil), buf[:i]...)
			buf = buf[i+1:]
			s.lines <- line
		}
		if err != nil {
			if len(buf) > 0 {
				s.lines <- append([]byte(nil), buf...)
			}
			return
		}
	}
}

// stop ends the server (stdin EOF, then SIGKILL after 10 s), kills every
// process still carrying its marker, and waits for its goroutines. It logs
// the server's stderr when the test failed.
func (s *server) stop() {
	s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.t.Errorf("server did not exit within 10 s of stdin EOF; killing it")
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	for _, pid := range markedPids(s.marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	s.stdout.Close()
	for range s.lines { // drain until the reader has returned
	}
	if b, _ := os.ReadFile(s.stderrPath); s.t.Failed() && len(b) > 0 {
		s.t.Logf("server stderr:\n%s", b)
	}
}

// markedPids lists the processes whose environment holds
// MCPTEST_MARKER=marker (the server, its Bash, escalated children, ...).
func markedPids(marker string) []int {
	want := []byte("MCPTEST_MARKER=" + marker + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(env), string(want)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// strays lists the marked processes other than the server itself, waiting up
// to wait for them to go away first.
func (s *server) strays(wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for {
		var left []string
		for _, pid := range markedPids(s.marker) {
			if pid == s.cmd.Process.Pid {
				continue
			}
			cl, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
				continue // a zombie its parent has yet to reap: it runs nothing
			}
			if f := strings.Fields(string(st)); len(f) > 3 && f[3] == strconv.Itoa(s.cmd.Process.Pid) &&
				strings.HasPrefix(string(cl), "codex-exec-watchdog\x00") {
				continue // the server's own watchdog (docs/operations.md §5) lives as long as the server
			}
			left = append(left, strconv.Itoa(pid)+": "+strings.ReplaceAll(string(cl), "\x00", " "))
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// esc returns `touch <outside>/name; ` for the start of an escalated `sh -c`
// script: under the read-only sandbox only an escalated program can write
// there, so the file proves the program ran outside (checked by escalated).
func (s *server) esc(name string) string { return "touch " + s.outside + "/" + name + "; " }

// escalated fails the test unless the mark of esc(name) exists.
func (s *server) escalated(name string) {
	s.t.Helper()
	if _, err := os.Stat(filepath.Join(s.outside, name)); err != nil {
		s.t.Errorf("%s: the program did not run escalated (outside the sandbox): %v", name, err)
	}
}
