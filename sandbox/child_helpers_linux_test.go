//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/sandbox"
)

// testHelperArg0 is the argv[0] under which the test binary plays a small
// program inside the sandbox (see runTestHelper).
const testHelperArg0 = "sandbox-test-helper"

// init dispatches before TestMain (which belongs to the policy tests): as
// HelperName the test binary is the sandbox helper, as testHelperArg0 a
// helper program, like os/exec's tests re-execute themselves.
func init() {
	switch filepath.Base(os.Args[0]) {
	case sandbox.HelperName:
		os.Exit(sandbox.ChildMain(sandbox.ChildOptions{FSHelper: testFSHelper}))
	case testHelperArg0:
		os.Exit(runTestHelper(os.Args[1:]))
	case testLauncherArg0:
		os.Exit(runTestLauncher())
	}
}

// runTestHelper runs one helper program and returns its exit status. Each
// prints "errno=<NAME>" for a failed syscall, or "ok".
func runTestHelper(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "no helper mode")
		return 2
	}
	report := func(what string, err error) int {
		if err != nil {
			fmt.Printf("%s errno=%s\n", what, errnoName(err))
			return 1
		}
		fmt.Println("ok")
		return 0
	}
	switch args[0] {
	case "dial": // dial ADDR: a TCP connect from Go
		c, err := net.DialTimeout("tcp", args[1], 5*time.Second)
		if err == nil {
			c.Close()
		}
		return report("dial", err)
	case "udp": // udp ADDR: one datagram
		c, err := net.Dial("udp", args[1])
		if err == nil {
			_, err = c.Write([]byte("x"))
			c.Close()
		}
		return report("udp", err)
	case "listen": // listen: bind a TCP port
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			l.Close()
		}
		return report("listen", err)
	case "iouring": // io_uring_setup(1, &params)
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e == 0 {
			unix.Close(int(fd))
			return report("io_uring_setup", nil)
		}
		return report("io_uring_setup", e)
	case "socketpair": // AF_UNIX datagram and stream pairs
		return report("socketpair", unixPairs())
	case "fds": // list the open fds, write to a kept fd 4
		return listFDs()
	case "vsock": // socket(AF_VSOCK)
		fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return report("vsock", err)
	}
	if code, ok := runProxyTestHelper(args); ok {
		return code
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", args[0])
	return 2
}

// unixPairs checks that AF_UNIX socketpairs work: SOCK_DGRAM with write
// and recvfrom, SOCK_STREAM with write and recv.
func unixPairs() error {
	for _, typ := range []int{unix.SOCK_DGRAM, unix.SOCK_STREAM} {
		fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if _, err := unix.Write(fds[0], []byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 8)
		n, _, err := unix.Recvfrom(fds[1], buf, 0)
		if err != nil {
			return err
		}
		if string(buf[:n]) != "ping" {
			return fmt.Errorf("got %q", buf[:n])
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
	return nil
}

// errnoName gives the symbolic name of err's errno ("EPERM").
func errnoName(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		if name := unix.ErrnoName(en); name != "" {
			return name
		}
	}
	return "unknown(" + err.Error() + ")"
}

// runResult is what a sandboxed run produced.
type runResult struct {
	code           int
	stdout, stderr string
}

// String renders r for failure messages.
func (r runResult) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// helperCmd builds the exec.Cmd that runs plan under the helper, the way
// the process spawner does. The caller runs it and closes the plan file.
func helperCmd(t *testing.T, ctx context.Context, plan sandbox.Plan) (*exec.Cmd, func()) {
	t.Helper()
	plan.RecordIdentities() // as Resolve does for the server's plans
	w, err := sandbox.Wrap(plan)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	cmd := w.Command(ctx)
	cmd.WaitDelay = 5 * time.Second
	return cmd, func() {
		for _, f := range w.ExtraFiles {
			f.Close()
		}
	}
}

// runPlan runs plan to completion (30 s at most) and collects its output.
func runPlan(t *testing.T, plan sandbox.Plan) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, closePlan := helperCmd(t, ctx, plan)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	closePlan()
	return runResult{code: helperExitCode(t, cmd, err), stdout: stdout.String(), stderr: stderr.String()}
}

// helperExitCode maps the helper's wait status like the server does.
func helperExitCode(t *testing.T, cmd *exec.Cmd, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running the helper: %v", err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// testEnv is the environment of sandboxed commands.
var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}

// devFiles are the device files a command may write.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// workspacePlan is workspace-write on root (with /tmp and $TMPDIR
// excluded), with root/.git read-only and root/.codex protected, running
// argv in root. The network is off unless network.
func workspacePlan(root string, network bool, argv ...string) sandbox.Plan {
	p := sandbox.Plan{
		Argv:            argv,
		Dir:             root,
		Env:             testEnv,
		NewMountNS:      true,
		NewPIDNS:        true,
		NewNetNS:        !network,
		ReadOnlyRoot:    true,
		WritableRoots:   []sandbox.WritableRoot{{Path: root, ReadOnly: []string{root + "/.git"}}},
		ProtectedCreate: []string{root + "/.codex"},
		Landlock:        &sandbox.LandlockRules{ReadDirs: []string{"/"}, WriteDirs: []string{root}, WriteFiles: devFiles},
		Seccomp:         sandbox.SeccompRestricted,
		NetworkDisabled: !network,
	}
	if network {
		p.Seccomp = sandbox.SeccompVMSocketRestricted
	}
	return p
}

// shArgv is a shell command line as argv.
func shArgv(script string) []string { return []string{"/bin/sh", "-c", script} }

// testDir returns a fresh canonical temporary directory.
func testDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// selfArgv is argv running the test binary as helper program mode.
func selfArgv(t *testing.T, mode ...string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{self}, mode...)
}

// helperPlan runs the test binary's helper program mode inside p.
func helperPlan(t *testing.T, p sandbox.Plan, mode ...string) sandbox.Plan {
	p.Argv = selfArgv(t, mode...)
	p.Arg0 = testHelperArg0
	return p
}

// requireSandbox skips when the kernel truly lacks what the helper needs.
func requireSandbox(t *testing.T) {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Skipf("sandbox not available on this kernel: %v", err)
	}
}

// listenLoopback opens a TCP listener on 127.0.0.1 that accepts and closes
// connections until the test ends.
func listenLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}

// hostFile returns the content of path, failing the test on error.
func hostFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustContain fails unless r's combined output contains each of want.
func mustContain(t *testing.T, r runResult, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(r.stdout+r.stderr, w) {
			t.Errorf("output lacks %q: %v", w, r)
		}
	}
}

// readUntil reads from rd until the accumulated text contains want.
func readUntil(t *testing.T, rd io.Reader, want string) string {
	t.Helper()
	var acc []byte
	buf := make([]byte, 256)
	for !strings.Contains(string(acc), want) {
		n, err := rd.Read(buf)
		acc = append(acc, buf[:n]...)
		if err != nil {
			t.Fatalf("reading until %q: %v (got %q)", want, err, acc)
		}
	}
	return string(acc)
}
