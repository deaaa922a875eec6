package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/sandbox"
)

// pidnsProbe looks at and signals a process outside the sandbox ($1),
// and prints what it saw: its own PID, whether /proc shows $1, what
// kill -0 and kill -TERM of $1 returned, and what prlimit of $1 did.
const pidnsProbe = `v=$1
echo "self=$$"
if [ -d /proc/$v ]; then echo seen; else echo unseen; fi
kill -0 $v 2>/dev/null; echo "probe=$?"
kill -TERM $v 2>/dev/null; echo "term=$?"
prlimit --pid $v --core=0:0 2>/dev/null; echo "prlimit=$?"`

// runPIDProbe runs pidnsProbe against victim in a workspace sandbox with
// the network network, and returns its output.
func runPIDProbe(t *testing.T, c *client, id string, victim int, network string) string {
	t.Helper()
	root := t.TempDir()
	p := sandboxedStart(id, root, workspaceSandbox(root, network), false, pidnsProbe)
	p["argv"] = []string{"/bin/bash", "--norc", "-c", pidnsProbe, "probe", fmt.Sprint(victim)}
	out, code, _ := runSandboxed(t, c, p)
	if code != 0 {
		t.Fatalf("probe exit %d: %s", code, out)
	}
	return out
}

// startVictim starts a process of the test outside any sandbox, killed at
// the end of the test.
func startVictim(t *testing.T) *exec.Cmd {
	t.Helper()
	v := exec.Command("sleep", "60")
	if err := v.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Process.Kill(); _ = v.Wait() })
	return v
}

// coreLimit returns the RLIMIT_CORE line of pid's /proc limits.
func coreLimit(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Max core file size") {
			return l
		}
	}
	return ""
}

// docs/sandbox.md §4.2: --linux-sandbox-pid-namespace. isolate (the
// default): the command is PID 2 of its own namespace and cannot see or
// signal a process of the test. inherit: it sees the host's processes
// (the test's, by PID), as the reference shows them, but [ours] it still
// cannot signal one outside its sandbox nor change its limits.
func TestPIDNamespaceModes(t *testing.T) {
	if sandbox.SignalScopeAvailable() != nil {
		t.Skip("Landlock signal scoping (ABI 6, Linux 6.12) is missing: TestPIDNamespaceInheritRefused covers this kernel")
	}
	victim := startVictim(t)
	before := coreLimit(t, victim.Process.Pid)
	for _, mode := range []string{"isolate", "inherit"} {
		t.Run(mode, func(t *testing.T) {
			s := startServer(t, "--linux-sandbox-pid-namespace", mode)
			c := dial(t, s.URL, nil)
			defer c.close()
			c.handshake()
			for _, network := range []string{"restricted", "enabled"} {
				out := runPIDProbe(t, c, "p-"+network, victim.Process.Pid, network)
				var self int
				_, _ = fmt.Sscanf(out, "self=%d", &self)
				if mode == "isolate" {
					// The helper is PID 1 of the command's namespace.
					if self < 2 || self > 64 || !strings.Contains(out, "unseen\n") {
						t.Errorf("isolate, network %s: %q, want a PID of its own namespace and the victim unseen", network, out)
					}
				} else if self <= victim.Process.Pid || !strings.HasPrefix(strings.SplitN(out, "\n", 3)[1], "seen") {
					t.Errorf("inherit, network %s: %q, want a host PID (after the victim's %d) and the victim seen", network, out, victim.Process.Pid)
				}
				if !strings.Contains(out, "probe=1\n") || !strings.Contains(out, "term=1\n") || !strings.Contains(out, "prlimit=1\n") {
					t.Errorf("%s, network %s: %q: a sandboxed command reached a process outside its sandbox", mode, network, out)
				}
			}
			// command/exec takes the same path (sandboxSpec), in a PTY too.
			for _, tty := range []bool{false, true} {
				params := map[string]any{"command": []string{"/bin/bash", "--norc", "-c", pidnsProbe, "probe", fmt.Sprint(victim.Process.Pid)},
					"sandboxPolicy": map[string]any{"type": "readOnly"}}
				if tty {
					params["tty"], params["processId"] = true, "exec-tty"
				}
				r := c.call("command/exec", params)
				var res struct{ Stdout string }
				if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
					t.Fatalf("command/exec tty %v: %+v %s", tty, r.Error, r.Result)
				}
				if tty {
					res.Stdout = strings.Join(c.execDeltas("exec-tty"), "")
				}
				out := strings.ReplaceAll(res.Stdout, "\r\n", "\n")
				seen := strings.Contains(out, "\nseen\n")
				if seen != (mode == "inherit") || !strings.Contains(out, "probe=1\n") || !strings.Contains(out, "term=1\n") {
					t.Errorf("%s, command/exec tty %v: %q", mode, tty, out)
				}
			}
			if !alive(victim.Process.Pid) {
				t.Fatalf("%s: the victim was killed", mode)
			}
			if got := coreLimit(t, victim.Process.Pid); got != before {
				t.Errorf("%s: the victim's core limit changed: %q, was %q", mode, got, before)
			}
		})
	}
}

// The attack on inherit (docs/sandbox.md §4.2): a sandboxed command that
// sees the host's PIDs kills the server, kills its watchdog, or cuts the
// server's limits (RLIMIT_CORE here: RLIMIT_CPU or RLIMIT_NOFILE would
// kill or starve it the same way), raises its oom_score_adj (the OOM
// killer's first victim) or its nice value, or reads where its fds lead
// or its environment through /proc (the fd numbers themselves are listed:
// the kernel checks only the uid for that). All must fail. (kill -1 and
// kill of the server's process group are not tried: where the defence
// regressed they would kill every process of the machine's root, or this
// test.)
func TestPIDNamespaceInheritProtectsServer(t *testing.T) {
	if sandbox.SignalScopeAvailable() != nil {
		t.Skip("Landlock signal scoping (ABI 6, Linux 6.12) is missing: the server refuses inherit (TestPIDNamespaceInheritRefused)")
	}
	s := startServer(t, "--linux-sandbox-pid-namespace", "inherit")
	c := dial(t, s.URL, nil)
	defer c.close()
	c.handshake()
	attackServer(t, s, c, t.TempDir(), true)
}

// The same attack on a server run as nobody, whose commands run in a user
// namespace: there the kernel would also let them renice the server (it
// has no capability for theirs to fall short of).
func TestPIDNamespaceInheritProtectsNonRootServer(t *testing.T) {
	if sandbox.SignalScopeAvailable() != nil {
		t.Skip("Landlock signal scoping (ABI 6, Linux 6.12) is missing: the server refuses inherit (TestPIDNamespaceInheritRefused)")
	}
	requireNobody(t)
	s := startServerWith(t, nobodyBinary(t), asNobody(nobodyDir(t)), "--linux-sandbox-pid-namespace", "inherit")
	c := dial(t, s.URL, nil)
	defer c.close()
	c.handshake()
	root := nobodyDir(t)
	if r := c.call("process/start", sandboxedStart("probe", root, workspaceSandbox(root, "enabled"), false, "true")); r.Error != nil {
		t.Skipf("the server cannot sandbox as nobody here (unprivileged user namespaces?): %s", r.Error.Message)
	}
	c.events("probe", 20*time.Second)
	attackServer(t, s, c, root, false)
}

// attackServer runs the attack of TestPIDNamespaceInheritProtectsServer
// on s from sandboxes of every kind, rooted at root (the profiles with
// full write only when fullWrite).
func attackServer(t *testing.T, s *server, c *client, root string, fullWrite bool) {
	t.Helper()
	srv := s.cmd.Process.Pid
	wd := watchdogOf(srv)
	if wd == 0 {
		t.Fatal("no watchdog child")
	}
	before := coreLimit(t, srv)
	withProfile := func(prof map[string]any) map[string]any {
		sb := workspaceSandbox(root, "restricted")
		sb["permissions"] = prof
		return sb
	}
	sandboxes := []struct {
		name string
		sb   map[string]any
	}{
		{"workspace network off", workspaceSandbox(root, "restricted")},
		{"workspace network on", workspaceSandbox(root, "enabled")},
	}
	if fullWrite {
		sandboxes = append(sandboxes, []struct {
			name string
			sb   map[string]any
		}{
			// No read-only root: the host's /proc would be writable.
			{"unrestricted files network off", withProfile(managed("unrestricted", "restricted"))},
			{"root write network on", withProfile(managed("write", "enabled"))},
		}...)
	}
	for i, sbx := range sandboxes {
		probe := fmt.Sprintf("prlimit --pid %[1]d --core=0:0; echo lim=$?; echo 1000 > /proc/%[1]d/oom_score_adj; echo oom=$?; renice -n 19 -p %[1]d >/dev/null; echo nice=$?; for f in /proc/%[1]d/fd/*; do readlink $f >/dev/null 2>&1 && echo fds=open; done; cat /proc/%[1]d/environ >/dev/null 2>&1 && echo environ=read; kill -9 %[2]d; echo wd=$?; kill -9 %[1]d; echo srv=$?", srv, wd)
		out, _, _ := runSandboxed(t, c, sandboxedStart(fmt.Sprint("atk", i), root, sbx.sb, false, probe))
		for _, want := range []string{"lim=1", "oom=1", "nice=1", "wd=1", "srv=1"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("%s: %q, want %s: the sandboxed command reached the server", sbx.name, out, want)
			}
		}
		if strings.Contains(out, "fds=open") || strings.Contains(out, "environ=read") {
			t.Errorf("%s: %q: the sandboxed command read the server's fd table or environment", sbx.name, out)
		}
		if !alive(srv) || !alive(wd) {
			t.Fatalf("%s: server alive %v, watchdog alive %v", sbx.name, alive(srv), alive(wd))
		}
	}
	// The peer check does not lean on the PID namespace alone: the
	// command's cgroup leaf and its helper ancestor still mark it.
	out, _, _ := runSandboxed(t, c, sandboxedStart("peer", root, workspaceSandbox(root, "enabled"), false, upgradeScript(s.URL, "")))
	if !strings.Contains(out, "STATUS HTTP/1.1 403") {
		t.Errorf("sandboxed upgrade in the server's PID namespace: got %q, want a 403 status line", out)
	}
	if got := coreLimit(t, srv); got != before {
		t.Errorf("the server's core limit changed: %q, was %q", got, before)
	}
	if adj, _ := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", srv)); strings.TrimSpace(string(adj)) == "1000" {
		t.Errorf("the server's oom_score_adj was raised to 1000")
	}
	if nice := procStatField(t, srv, 19); nice != "0" {
		t.Errorf("the server's nice value is %s, want 0", nice)
	}
}

// procStatField returns field n (1-based, as proc(5) numbers them) of
// /proc/pid/stat.
func procStatField(t *testing.T, pid, n int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[n-3]
}

// A value other than isolate or inherit is a usage error with the
// reference's text, exit 2 (recorded from 0.169.0:
// `error: invalid value 'bogus' for '--linux-sandbox-pid-namespace <MODE>':
// expected 'isolate' or 'inherit'`).
func TestPIDNamespaceFlagValue(t *testing.T) {
	out, err := exec.Command(binary, "exec-server", "--listen", "stdio", "--linux-sandbox-pid-namespace", "bogus").CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2: %s", err, out)
	}
	want := "invalid value 'bogus' for '--linux-sandbox-pid-namespace <MODE>': expected 'isolate' or 'inherit'"
	if !strings.Contains(string(out), want) || strings.Count(string(out), "\n") != 1 {
		t.Errorf("stderr %q, want one line with %q", out, want)
	}
}

// On a kernel without Landlock signal scoping the server refuses inherit
// at start-up rather than let a command signal it (exit 1).
func TestPIDNamespaceInheritRefused(t *testing.T) {
	if sandbox.SignalScopeAvailable() == nil {
		t.Skip("this kernel has Landlock signal scoping: inherit is served (TestPIDNamespaceModes)")
	}
	out, err := exec.Command(binary, "exec-server", "--listen", "stdio", "--linux-sandbox-pid-namespace", "inherit").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "Landlock signal scoping") {
		t.Fatalf("exit %v, want 1 with a reason: %s", err, out)
	}
}

// execDeltas returns the decoded command/exec/outputDelta chunks of
// processID received so far, in order.
func (c *client) execDeltas(processID string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.notifs {
		if n.Method != "command/exec/outputDelta" || n.Params["processId"] != processID {
			continue
		}
		b, _ := base64.StdEncoding.DecodeString(n.Params["deltaBase64"].(string))
		out = append(out, string(b))
	}
	return out
}
