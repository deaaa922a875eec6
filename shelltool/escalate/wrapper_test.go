package escalate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// refWrapper is the reference codex-execve-wrapper of the npm package
// @openai/codex-shell-tool-mcp 0.97.0, when installed (test oracle).
const refWrapper = "/tmp/codex-shell-tool-mcp-0.97.0/node_modules/@openai/codex-shell-tool-mcp/vendor/x86_64-unknown-linux-musl/codex-execve-wrapper"

// ourWrapper returns the codex binary linked as codex-execve-wrapper.
func ourWrapper(t *testing.T) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), WrapperName)
	if err := os.Symlink(codexBinary, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// wrappers returns the wrappers to test: ours, and the reference when
// installed (the server side must serve it too).
func wrappers(t *testing.T) map[string]string {
	w := map[string]string{"ours": ourWrapper(t)}
	if _, err := os.Stat(refWrapper); err == nil {
		w["reference"] = refWrapper
	} else {
		t.Logf("reference wrapper not tested: %v (npm install @openai/codex-shell-tool-mcp@0.97.0 in /tmp/codex-shell-tool-mcp-0.97.0)", err)
	}
	return w
}

// wrapperRun is one wrapper execution.
type wrapperRun struct {
	code           int
	stdout, stderr string
}

// runWrapper runs wrapper with args in dir, the escalate socket child as
// fd 3, and env plus the wrapper variables.
func runWrapper(t *testing.T, wrapper string, child *os.File, dir string, env []string, args ...string) wrapperRun {
	t.Helper()
	cmd := exec.Command(wrapper, args...)
	cmd.Dir = dir
	cmd.Env = append(env, WrapperEnv(wrapper, 3)...)
	cmd.ExtraFiles = []*os.File{child}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running %s: %v", wrapper, err)
	}
	return wrapperRun{code, stdout.String(), stderr.String()}
}

var baseEnv = []string{"PATH=/usr/bin:/bin", "FOO=bar", "TERM=xterm-test"}

func TestWrapperRun(t *testing.T) {
	for name, wrapper := range wrappers(t) {
		t.Run(name, func(t *testing.T) {
			d := &fakeDecider{dec: Decision{Action: Run}}
			child, stop := startServe(t, d)
			dir := t.TempDir()
			script := filepath.Join(dir, "prog.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"prog $1 $FOO [$CODEX_ESCALATE_SOCKET] $(basename \"$BASH_EXEC_WRAPPER\")\"\nexit 5\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			got := runWrapper(t, wrapper, child, dir, baseEnv, "./prog.sh", "./prog.sh", "arg")
			stop()
			// Run: the program ran in place, with the wrapper's own
			// environment (wrapper variables kept).
			if want := "prog arg bar [3] " + WrapperName + "\n"; got.code != 5 || got.stdout != want {
				if name == "ours" || got.code != 5 {
					t.Errorf("got %+v, want exit 5 and %q", got, want)
				}
			}
			reqs := d.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.File != script || r.Workdir != dir || strings.Join(r.Argv, " ") != "./prog.sh arg" {
				t.Errorf("request %q %q in %q; want %q in %q", r.File, r.Argv, r.Workdir, script, dir)
			}
			if r.Env["FOO"] != "bar" || r.Env["PATH"] != "/usr/bin:/bin" {
				t.Errorf("request env %v", r.Env)
			}
			for _, k := range []string{SocketEnv, BashExecWrapperEnv, ExecWrapperEnv} {
				if _, ok := r.Env[k]; ok && (name == "ours" || k != ExecWrapperEnv) {
					t.Errorf("request env has %s", k)
				}
			}
		})
	}
}

func TestWrapperEscalate(t *testing.T) {
	for name, wrapper := range wrappers(t) {
		t.Run(name, func(t *testing.T) {
			child, _ := startServe(t, &fakeDecider{dec: Decision{Action: Escalate}})
			got := runWrapper(t, wrapper, child, "/", baseEnv,
				"/bin/sh", "sh", "-c", `echo "out $FOO $TERM $PPID"; echo err >&2; exit 42`)
			// Run by the server (our process), on the wrapper's stdio, with
			// the server's environment and the request's TERM only.
			want := "out  xterm-test " + strconv.Itoa(os.Getpid()) + "\n"
			if got.code != 42 || got.stdout != want || got.stderr != "err\n" {
				t.Errorf("got %+v, want exit 42, %q, err", got, want)
			}
		})
	}
}

func TestWrapperDeny(t *testing.T) {
	reason := "Execution forbidden by policy"
	for name, wrapper := range wrappers(t) {
		for _, c := range []struct {
			reason *string
			want   string
		}{{&reason, "Execution denied: " + reason + "\n"}, {nil, "Execution denied\n"}} {
			t.Run(name, func(t *testing.T) {
				child, _ := startServe(t, &fakeDecider{dec: Decision{Action: Deny, Reason: c.reason}})
				got := runWrapper(t, wrapper, child, "/", baseEnv, "/bin/true", "true")
				if got.code != 1 || got.stderr != c.want || got.stdout != "" {
					t.Errorf("got %+v, want exit 1 and %q", got, c.want)
				}
			})
		}
	}
}

// fakeServer answers one wrapper session on a raw socketpair: Escalate,
// then exit code code after the descriptors arrive; with code < -1000 it
// closes the session before answering anything.
func fakeServer(t *testing.T, code int64) (child *os.File, done chan struct{}) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	child = os.NewFile(uintptr(fds[1]), "child")
	t.Cleanup(func() { child.Close() })
	done = make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(fds[0])
		_, got, err := recvDatagram(fdConn(fds[0]))
		if err != nil || len(got) != 1 {
			t.Errorf("datagram: %v, %d fds", err, len(got))
			closeFDs(got)
			return
		}
		s := fdConn(got[0])
		defer unix.Close(got[0])
		// The reference wrapper's end comes non-blocking (tokio).
		if err := unix.SetNonblock(got[0], false); err != nil {
			t.Error(err)
		}
		var req wireRequest
		if err := readMessage(s, &req); err != nil || code < -1000 {
			return
		}
		_ = writeMessage(s, wireResponse{Decision{Action: Escalate}}, nil)
		payload, passed, err := readFrame(s)
		closeFDs(passed)
		if err != nil || string(payload) != `{"fds":[0,1,2]}` || len(passed) != 3 {
			t.Errorf("SuperExecMessage %q with %d fds: %v", payload, len(passed), err)
		}
		_ = writeMessage(s, superExecResult{ExitCode: code}, nil)
	}()
	return child, done
}

func TestWrapperExitCodeModulo256(t *testing.T) {
	for name, wrapper := range wrappers(t) {
		for code, want := range map[int64]int{300: 44, -1: 255, 0: 0, 256: 0} {
			child, done := fakeServer(t, code)
			got := runWrapper(t, wrapper, child, "/", baseEnv, "/bin/true", "true")
			<-done
			if got.code != want {
				t.Errorf("%s: exit_code %d → exit %d, want %d", name, code, got.code, want)
			}
		}
	}
}

func TestWrapperErrors(t *testing.T) {
	wrapper := ourWrapper(t)
	child, stop := startServe(t, &fakeDecider{dec: Decision{Action: Run}})
	defer stop()
	closed, done := fakeServer(t, -2000)
	cases := []struct {
		name  string
		child *os.File
		env   []string
		args  []string
	}{
		{"exec failure", child, baseEnv, []string{"/nonexistent/prog", "prog"}},
		{"empty program", child, baseEnv, []string{"", ""}},
		{"no arguments", child, baseEnv, nil},
		{"session closed", closed, baseEnv, []string{"/bin/true", "true"}},
	}
	for _, c := range cases {
		got := runWrapper(t, wrapper, c.child, "/", c.env, c.args...)
		if got.code != 1 || !strings.HasPrefix(got.stderr, "Error: ") || strings.Count(got.stderr, "\n") != 1 {
			t.Errorf("%s: got %+v, want exit 1 and one Error: line", c.name, got)
		}
	}
	<-done
	// No or a bad socket variable.
	for _, v := range []string{"", "x", "-1", "99"} {
		cmd := exec.Command(wrapper, "/bin/true", "true")
		cmd.Env = append(baseEnv, SocketEnv+"="+v)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 1 || !strings.HasPrefix(string(out), "Error: ") {
			t.Errorf("%s=%q: %q, %v; want exit 1 and an Error: line", SocketEnv, v, out, err)
		}
	}
}
