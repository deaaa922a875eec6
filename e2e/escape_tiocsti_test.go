package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// tiocstiProbe tries TIOCSTI and TIOCLINUX on fd 0 (a terminal), also with
// high bits set in the 64-bit request (the kernel only looks at the low 32
// bits), and prints "name result" lines, and whether it has a controlling
// terminal (opening /dev/tty fails with ENXIO without one).
const tiocstiProbe = `
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
for name, req in (("TIOCSTI", 0x5412), ("TIOCSTI64", 0xffffffff00005412), ("TIOCLINUX", 0x541C)):
    buf = ctypes.create_string_buffer(b"\x06")
    if name.startswith("TIOCSTI"):
        buf = ctypes.create_string_buffer(b"#")
    r = libc.ioctl(0, ctypes.c_ulong(req), buf)
    print(name, "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    print("devtty ok")
except OSError as e:
    print("devtty", errno.errorcode[e.errno])
`

// runOnPTY runs cmd with a new PTY as its controlling terminal and returns
// everything written to the terminal and the exit code. ctrlC, if set, is
// sent (as the Ctrl-C byte) once the output contains it.
func runOnPTY(t *testing.T, cmd *exec.Cmd, ctrlC string) (string, int) {
	t.Helper()
	master, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	var out bytes.Buffer
	read := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		sent := false
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if !sent && ctrlC != "" && strings.Contains(out.String(), ctrlC) {
				sent = true
				_, _ = master.Write([]byte{3})
			}
			if err != nil {
				read <- err
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("timed out; terminal so far: %q", out.String())
	}
	// The slave is closed with the last process holding it; then the
	// master reads EIO.
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatalf("terminal not closed after exit")
	}
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	return out.String(), code
}

// docs/sandbox.md §8: `codex sandbox` runs the command in a session of its
// own, and TIOCSTI/TIOCLINUX are denied whatever the terminal.
func TestEscapeTIOCSTISandboxCLI(t *testing.T) {
	for _, mode := range []string{"read-only", "workspace-write"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(binary, "sandbox", "--mode", mode, "--", "/usr/bin/python3", "-c", tiocstiProbe)
			cmd.Dir = t.TempDir()
			cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "TERM=dumb"}
			out, code := runOnPTY(t, cmd, "")
			if code != 0 {
				t.Fatalf("exit %d: %q", code, out)
			}
			for _, name := range []string{"TIOCSTI", "TIOCSTI64", "TIOCLINUX"} {
				if !strings.Contains(out, name+" EPERM") {
					t.Errorf("%s not denied with EPERM: %q", name, out)
				}
			}
			// A command in a session of its own has no controlling terminal.
			if !strings.Contains(out, "devtty ENXIO") {
				t.Errorf("the command shares the caller's session: %q", out)
			}
		})
	}
}

// Ctrl-C on the caller's terminal still ends the sandboxed command, now in
// its own session, with 130.
func TestSandboxCLICtrlC(t *testing.T) {
	cmd := exec.Command(binary, "sandbox", "--mode", "read-only", "--", "/bin/sh", "-c", "echo ready; exec sleep 30")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "TERM=dumb"}
	start := time.Now()
	out, code := runOnPTY(t, cmd, "ready")
	if code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130: %q", code, out)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("Ctrl-C did not end the command")
	}
}

// SIGINT, SIGTERM and SIGHUP sent to `codex sandbox` reach the command.
func TestSandboxCLIForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(binary, "sandbox", "--mode", "workspace-write", "--", "/bin/sh", "-c", "echo ready; exec sleep 30")
			cmd.Dir = t.TempDir()
			cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				line, _ := bufio.NewReader(stdout).ReadString('\n')
				if line == "ready\n" {
					_ = cmd.Process.Signal(sig)
				}
				_, _ = io.Copy(io.Discard, stdout)
				done <- cmd.Wait()
			}()
			select {
			case err := <-done:
				ee, ok := err.(*exec.ExitError)
				if want := 128 + int(sig); !ok || ee.ExitCode() != want {
					t.Fatalf("exit %v, want %d", err, want)
				}
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("%v was not forwarded", sig)
			}
		})
	}
}

// A sandboxed PTY process over the wire (the PTY is its controlling
// terminal) cannot use TIOCSTI or TIOCLINUX either.
func TestEscapeTIOCSTIWire(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	p := startParams("sti", "/usr/bin/python3", "-c", tiocstiProbe)
	p["cwd"] = "file://" + root
	p["sandbox"] = workspaceSandbox(root, "restricted")
	p["tty"] = true
	out, code, _ := runSandboxed(t, c, p)
	if code != 0 {
		t.Fatalf("exit %d: %q", code, out)
	}
	for _, name := range []string{"TIOCSTI", "TIOCSTI64", "TIOCLINUX"} {
		if !strings.Contains(out, name+" EPERM") {
			t.Errorf("%s not denied with EPERM: %q", name, out)
		}
	}
	if !strings.Contains(out, "devtty ok") {
		t.Errorf("a sandboxed PTY command lost its controlling terminal: %q", out)
	}
}
