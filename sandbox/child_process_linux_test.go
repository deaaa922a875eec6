//go:build linux

package sandbox_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/sandbox"
)

func TestChildExitCodes(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 44", 44},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
		{"exec 1>&- 2>&-; exit 4", 4},
	} {
		if r := runPlan(t, workspacePlan(root, false, shArgv(tc.script)...)); r.code != tc.want {
			t.Errorf("%q: exit %d, want %d (%v)", tc.script, r.code, tc.want, r)
		}
	}
}

func TestChildCommandNotFound(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	r := runPlan(t, workspacePlan(testDir(t), false, "no-such-command-codex"))
	if r.code != 127 {
		t.Errorf("exit %d, want 127: %v", r.code, r)
	}
	mustContain(t, r, "No such file or directory")
}

func TestChildEmptyCommand(t *testing.T) {
	t.Parallel()
	r := runPlan(t, sandbox.Plan{Seccomp: sandbox.SeccompRestricted})
	if r.code != 1 || r.stderr != "No command specified to execute.\n" || r.stdout != "" {
		t.Errorf("empty command: %v", r)
	}
}

func TestChildArg0AndDir(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	if r := runPlan(t, workspacePlan(root, false, "pwd")); r.code != 0 || r.stdout != root+"\n" {
		t.Errorf("dir: %v", r)
	}
	// The helper program is selected by argv[0], so this runs only if
	// the command sees Arg0 as its argv[0].
	if r := runPlan(t, helperPlan(t, workspacePlan(root, false), "socketpair")); r.code != 0 {
		t.Errorf("arg0: %v", r)
	}
}

// TestChildSeccompOnly is a hand-made plan that asks for the network
// filter and nothing else: the helper still gets the kernel layer (issue
// 17 item 8): mount, PID, IPC, cgroup and network namespaces, PID 1, no
// capability in any set, no_new_privs, the cgroup filesystems hidden and
// /proc/sys read-only.
func TestChildSeccompOnly(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root, addr := testDir(t), listenLoopback(t)
	p := sandbox.Plan{Dir: root, Env: testEnv, Seccomp: sandbox.SeccompRestricted, NetworkDisabled: true}
	w, err := sandbox.Wrap(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range w.ExtraFiles {
		f.Close()
	}
	const want = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP | unix.CLONE_NEWNET
	if w.Cloneflags&want != want {
		t.Errorf("seccomp-only plan: namespaces %#x, want at least %#x", w.Cloneflags, want)
	}
	if r := runPlan(t, helperPlan(t, p, "dial", addr)); !strings.Contains(r.stdout, "errno=EPERM") {
		t.Errorf("dial: want EPERM: %v", r)
	}
	p.Argv = shArgv("echo $$ $CODEX_SANDBOX_NETWORK_DISABLED > out && grep -E '^(NoNewPrivs|Seccomp|Cap...):' /proc/self/status; " +
		"ls /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs; true > /proc/sys/kernel/core_pattern || echo ro; " +
		"echo pid1=$(tr '\\0' ' ' </proc/1/cmdline)")
	r := runPlan(t, p)
	for _, s := range []string{"NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapInh:\t0000000000000000", "CapAmb:\t0000000000000000", "\nro\n",
		"pid1=" + sandbox.HelperName + " "} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("no %q: %v", s, r)
		}
	}
	if strings.Contains(r.stdout, "cgroup.procs") {
		t.Errorf("cgroupfs visible: %v", r)
	}
	if out := hostFile(t, root+"/out"); strings.HasPrefix(out, "1 ") || !strings.HasSuffix(out, " 1\n") {
		t.Errorf("pid and marker: %q", out)
	}
}

// TestChildSignalInterrupt sends SIGINT to the process group, as the server's
// process/signal does: the helper survives it and reports the command's
// status.
func TestChildSignalInterrupt(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"echo ready; exec sleep 30", 130},
		{`trap "exit 7" INT; echo ready; while :; do sleep 0.05; done`, 7},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd, closePlan := helperCmd(t, ctx, workspacePlan(root, false, shArgv(tc.script)...))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		closePlan()
		readUntil(t, stdout, "ready")
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, stdout)
		err = cmd.Wait()
		cancel()
		if got := helperExitCode(t, cmd, err); got != tc.want {
			t.Errorf("%q: exit %d, want %d", tc.script, got, tc.want)
		}
	}
}

func TestChildPTYStdio(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no PTYs on this machine: %v", err)
	}
	defer master.Close()
	if err := pty.Setsize(master, &pty.Winsize{Rows: 33, Cols: 101}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, closePlan := helperCmd(t, ctx, workspacePlan(testDir(t), false, shArgv("stty size; test -t 0 && echo tty-ok; exit 6")...))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	closePlan()
	slave.Close()
	out, _ := io.ReadAll(master) // ends with EIO once every slave fd is closed
	err = cmd.Wait()
	if got := helperExitCode(t, cmd, err); got != 6 {
		t.Errorf("exit %d, want 6; output %q", got, out)
	}
	if !strings.Contains(string(out), "33 101") || !strings.Contains(string(out), "tty-ok") {
		t.Errorf("output %q", out)
	}
}

// TestChildEscapeeDiesWithHelper kills the helper: the PID namespace takes the
// setsid escapee with it.
func TestChildEscapeeDiesWithHelper(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	marker := "987.654321"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, closePlan := helperCmd(t, ctx, workspacePlan(testDir(t), false, shArgv("setsid sleep "+marker+" & echo ready; sleep 1000")...))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	closePlan()
	readUntil(t, stdout, "ready")
	deadline := time.Now().Add(10 * time.Second)
	for len(findSleepers(marker)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the escapee never showed up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	for pids := findSleepers(marker); len(pids) > 0; pids = findSleepers(marker) {
		if time.Now().After(deadline) {
			t.Fatalf("escapees survive the helper: %v", pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// findSleepers lists host pids running "sleep <marker>".
func findSleepers(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && string(b) == "sleep\x00"+marker+"\x00" {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !isZombie(string(st)) {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// isZombie reports whether a /proc/PID/stat line is a zombie's.
func isZombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i >= 0 && strings.HasPrefix(stat[i+1:], " Z")
}

// TestChildRestrictedRead is the `minimal` case: only the readable roots and
// the writable roots exist in the command's view.
func TestChildRestrictedRead(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root, other := testDir(t), testDir(t)
	mustWrite(t, other+"/secret.txt", "secret")
	readable := []string{"/bin", "/sbin", "/usr", "/etc", "/lib", "/lib64"}
	p := workspacePlan(root, false)
	p.RestrictedRead = true
	p.ReadableRoots = readable
	p.Landlock.ReadDirs = readable
	p.Argv = shArgv("echo ok > inside && cat inside && ls / | tr '\\n' ' ' && cat " + other + "/secret.txt")
	r := runPlan(t, p)
	if r.code == 0 || !strings.HasPrefix(r.stdout, "ok\n") || strings.Contains(r.stdout, "secret") {
		t.Fatalf("restricted read: %v", r)
	}
	if strings.Contains(r.stdout, " root ") || strings.Contains(r.stdout, " work ") {
		t.Errorf("unlisted directories are visible: %v", r)
	}
	p.Argv = shArgv("echo x > /etc/codex-sandbox-test")
	if r := runPlan(t, p); r.code == 0 {
		t.Errorf("writing a readable root succeeded: %v", r)
	}
}

// TestChildUserNamespace runs the workspace plan inside a user namespace (as a
// non-root server does; here uid 0 maps to our own uid).
func TestChildUserNamespace(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root, outside := testDir(t), testDir(t)
	mustWrite(t, root+"/.git/config", "orig\n")
	mustWrite(t, root+"/blocked/secret", "secret")
	p := workspacePlan(root, false, shArgv("echo in > inside && cat /proc/self/uid_map && (echo bad > .git/config; echo x > "+outside+"/f; cat blocked/secret; true)")...)
	p.NewUserNS = true
	p.DenyPaths = []string{root + "/blocked"}
	r := runPlan(t, p)
	if r.code != 0 || !strings.Contains(r.stdout, "0") {
		t.Fatalf("%v", r)
	}
	if hostFile(t, root+"/inside") != "in\n" || hostFile(t, root+"/.git/config") != "orig\n" {
		t.Error("writes inside/outside the carve-out are wrong")
	}
	if _, err := os.Stat(outside + "/f"); !errors.Is(err, os.ErrNotExist) {
		t.Error("a write outside the roots reached the host")
	}
	if strings.Count(r.stderr, "Read-only file system") != 2 || !strings.Contains(r.stderr, "Permission denied") {
		t.Errorf("stderr %q", r.stderr)
	}
	p.Argv = shArgv("grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status")
	r = runPlan(t, p)
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	n := 0
	for sc.Scan() {
		n++
		if f := strings.Fields(sc.Text()); f[1] != "0000000000000000" && f[1] != "1" {
			t.Errorf("in the user namespace: %s", sc.Text())
		}
	}
	if n != 3 {
		t.Errorf("status lines: %v", r)
	}
}
