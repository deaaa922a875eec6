package e2e

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestSandboxedPTYIsATerminal: a sandboxed PTY command sees its terminal
// as a terminal, under /dev/pts, and can still open new PTYs of its own.
func TestSandboxedPTYIsATerminal(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	sb := workspaceSandbox(root, "restricted")
	script, names := "tty; test -t 0 && test -t 1 && echo stdin-is-a-tty", 1
	if _, err := exec.LookPath("script"); err == nil {
		script, names = script+"; script -qec tty /dev/null", 2 // a nested PTY
	} else {
		t.Log("no script(1) on this host: the nested PTY is not tried")
	}
	out, code, _ := runSandboxed(t, c, sandboxedStart("tty", root, sb, true, script))
	if code != 0 || strings.Contains(out, "not a tty") || !strings.Contains(out, "stdin-is-a-tty") {
		t.Fatalf("code %d out %q", code, out)
	}
	m := regexp.MustCompile(`/dev/pts/[0-9]+`).FindAllString(out, -1)
	if len(m) != names || (names == 2 && m[0] == m[1]) {
		t.Fatalf("want %d distinct /dev/pts names (the terminal's, a nested PTY's), got %q in %q", names, m, out)
	}
}

// TestSandboxCannotReachHostPTY: another terminal of the host (a PTY the
// test opens, as a user's shell would have one) cannot be written from a
// sandboxed command, with or without a PTY of its own. Whatever reached
// the host terminal would be read back before the marker the test writes
// afterwards. (The host slave's number may also exist in the command's own
// devpts instance: writing there reaches only the command's terminal.)
func TestSandboxCannotReachHostPTY(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no PTY on this host: %v", err)
	}
	defer master.Close()
	defer slave.Close()
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	root := t.TempDir()
	sb := workspaceSandbox(root, "restricted")
	name := slave.Name()
	attack := "echo INTRUDER > " + name + "; printf INTRUDER2 | tee " + name + " >/dev/null; ls -l /dev/pts/ /dev/ptmx; true"
	for i, tty := range []bool{false, true} {
		out, _, _ := runSandboxed(t, c, sandboxedStart("host-pty-"+itoa(i), root, sb, tty, attack))
		t.Logf("tty %v: %s", tty, out)
	}
	if _, err := slave.Write([]byte("MARK\n")); err != nil {
		t.Fatal(err)
	}
	if err := master.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Skipf("PTY master without deadlines: %v", err)
	}
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte("MARK")) {
		n, err := master.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("reading the host terminal: %v (got %q)", err, got)
		}
	}
	if bytes.Contains(got, []byte("INTRUDER")) {
		t.Fatalf("a sandboxed command wrote into the host terminal %s: %q", name, got)
	}
}
