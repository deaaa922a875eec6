//go:build linux

package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

func TestAvailable(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("sandbox not available on this kernel: %v", err)
	}
}

func TestChildWorkspaceWrite(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root, outside := testDir(t), testDir(t)
	if err := os.MkdirAll(root+"/.git", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root+"/.git/config", []byte("orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("WriteInside", func(t *testing.T) {
		r := runPlan(t, workspacePlan(root, false, shArgv("printf sandbox-ok > inside.txt && cat inside.txt")...))
		if r.code != 0 || r.stdout != "sandbox-ok" {
			t.Fatalf("write inside: %v", r)
		}
		if got := hostFile(t, root+"/inside.txt"); got != "sandbox-ok" {
			t.Errorf("host sees %q", got)
		}
	})
	t.Run("WriteOutside", func(t *testing.T) {
		r := runPlan(t, workspacePlan(root, false, shArgv("echo x > "+outside+"/f")...))
		if r.code == 0 {
			t.Fatalf("write outside succeeded: %v", r)
		}
		mustContain(t, r, "Read-only file system")
		if !sandbox.LikelyDenied(r.code, []byte(r.stdout), []byte(r.stderr)) {
			t.Errorf("not classified as a denial: %v", r)
		}
		if _, err := os.Stat(outside + "/f"); err == nil {
			t.Error("the file exists on the host")
		}
	})
	t.Run("TmpNotWritable", func(t *testing.T) {
		r := runPlan(t, workspacePlan(root, false, shArgv("echo x > /tmp/codex-sandbox-test-$$")...))
		if r.code == 0 {
			t.Fatalf("write to /tmp succeeded: %v", r)
		}
		mustContain(t, r, "Read-only file system")
	})
	t.Run("GitConfigReadOnly", func(t *testing.T) {
		r := runPlan(t, workspacePlan(root, false, shArgv("echo ok > sibling && echo bad > .git/config")...))
		if r.code == 0 {
			t.Fatalf("overwriting .git/config succeeded: %v", r)
		}
		mustContain(t, r, "Read-only file system")
		if got := hostFile(t, root+"/.git/config"); got != "orig\n" {
			t.Errorf(".git/config is now %q", got)
		}
		if got := hostFile(t, root+"/sibling"); got != "ok\n" {
			t.Errorf("sibling is %q", got)
		}
	})
	t.Run("GitDirCannotBeRenamed", func(t *testing.T) {
		r := runPlan(t, workspacePlan(root, false, shArgv("mv .git moved")...))
		if r.code == 0 {
			t.Fatalf("renaming .git succeeded: %v", r)
		}
		if _, err := os.Stat(root + "/.git/config"); err != nil {
			t.Error(err)
		}
	})
	t.Run("ProtectedCreate", func(t *testing.T) {
		r := runPlan(t, workspacePlan(root, false, shArgv("mkdir .codex && echo x > .codex/config.toml; true")...))
		if r.code != 1 {
			t.Errorf("exit %d, want 1: %v", r.code, r)
		}
		mustContain(t, r, "sandbox blocked creation of protected workspace metadata path "+root+"/.codex")
		if _, err := os.Lstat(root + "/.codex"); err == nil {
			t.Error(".codex exists on the host")
		}
	})
	t.Run("ProtectedCreateFailureKeepsCode", func(t *testing.T) {
		r := runPlan(t, workspacePlan(root, false, shArgv("mkdir .codex; exit 5")...))
		if r.code != 5 {
			t.Errorf("exit %d, want 5: %v", r.code, r)
		}
	})
}

func TestChildPrivilegesDropped(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	r := runPlan(t, workspacePlan(root, false, "cat", "/proc/self/status"))
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	for _, want := range []string{"NoNewPrivs:\t1", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000",
		"CapInh:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "Seccomp:\t2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("/proc/self/status lacks %q", want)
		}
	}
}

func TestChildNetworkOff(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root, addr := testDir(t), listenLoopback(t)
	host, port, _ := strings.Cut(addr, ":")

	for _, mode := range [][]string{{"dial", addr}, {"udp", addr}, {"listen"}} {
		r := runPlan(t, helperPlan(t, workspacePlan(root, false), mode...))
		if r.code == 0 || !strings.Contains(r.stdout, "errno=EPERM") {
			t.Errorf("%s: want EPERM: %v", mode[0], r)
		}
	}
	r := runPlan(t, workspacePlan(root, false, "bash", "-c", "exec 3<>/dev/tcp/"+host+"/"+port))
	if r.code == 0 {
		t.Fatalf("bash connect succeeded: %v", r)
	}
	mustContain(t, r, "Operation not permitted")

	r = runPlan(t, workspacePlan(root, false, "sh", "-c", "echo $CODEX_SANDBOX_NETWORK_DISABLED"))
	if r.stdout != "1\n" {
		t.Errorf("CODEX_SANDBOX_NETWORK_DISABLED: %v", r)
	}
}

func TestChildNetworkOn(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root, addr := testDir(t), listenLoopback(t)
	host, port, _ := strings.Cut(addr, ":")
	r := runPlan(t, helperPlan(t, workspacePlan(root, true), "dial", addr))
	if r.code != 0 || r.stdout != "ok\n" {
		t.Errorf("dial with the network on: %v", r)
	}
	r = runPlan(t, workspacePlan(root, true, "bash", "-c", "exec 3<>/dev/tcp/"+host+"/"+port+" && echo connected"))
	if r.code != 0 || r.stdout != "connected\n" {
		t.Errorf("bash connect with the network on: %v", r)
	}
	r = runPlan(t, helperPlan(t, workspacePlan(root, true), "vsock"))
	if !strings.Contains(r.stdout, "errno=EPERM") {
		t.Errorf("AF_VSOCK with the network on: want EPERM: %v", r)
	}
	r = runPlan(t, workspacePlan(root, true, "sh", "-c", "echo ${CODEX_SANDBOX_NETWORK_DISABLED-unset}"))
	if r.stdout != "unset\n" {
		t.Errorf("CODEX_SANDBOX_NETWORK_DISABLED with the network on: %v", r)
	}
}

func TestChildUnixSocketpair(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	r := runPlan(t, helperPlan(t, workspacePlan(testDir(t), false), "socketpair"))
	if r.code != 0 || r.stdout != "ok\n" {
		t.Errorf("socketpair with the network off: %v", r)
	}
}

func TestChildIOURingDenied(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	for _, network := range []bool{false, true} {
		r := runPlan(t, helperPlan(t, workspacePlan(testDir(t), network), "iouring"))
		if !strings.Contains(r.stdout, "errno=EPERM") {
			t.Errorf("io_uring_setup (network %v): want EPERM: %v", network, r)
		}
	}
}

func TestChildDenyMasks(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	mustWrite(t, root+"/blocked/secret.txt", "secret")
	mustWrite(t, root+"/secret.env", "KEY=1")
	mustWrite(t, root+"/AGENTS.md", "agents")
	p := workspacePlan(root, false)
	p.DenyPaths = []string{root + "/blocked", root + "/secret.env"}

	for _, script := range []string{
		"cat blocked/secret.txt", "ls blocked", "cat secret.env",
		"echo x > blocked/new", "echo x > secret.env", "rm -rf blocked",
	} {
		p.Argv = shArgv(script)
		if r := runPlan(t, p); r.code == 0 {
			t.Errorf("%q succeeded: %v", script, r)
		}
	}
	p.Argv = shArgv("cat AGENTS.md")
	if r := runPlan(t, p); r.code != 0 || r.stdout != "agents" {
		t.Errorf("reading AGENTS.md: %v", r)
	}
	if got := hostFile(t, root+"/secret.env"); got != "KEY=1" {
		t.Errorf("host secret.env is %q", got)
	}
	if got := hostFile(t, root+"/blocked/secret.txt"); got != "secret" {
		t.Errorf("host secret.txt is %q", got)
	}
}

func TestChildDenyWithWritableChild(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	mustWrite(t, root+"/blocked/secret.txt", "secret")
	if err := os.MkdirAll(root+"/blocked/allowed", 0o755); err != nil {
		t.Fatal(err)
	}
	p := workspacePlan(root, false, shArgv("echo note > blocked/allowed/note.txt && cat blocked/allowed/note.txt")...)
	p.DenyPaths = []string{root + "/blocked"}
	p.WritableRoots = append(p.WritableRoots, sandbox.WritableRoot{Path: root + "/blocked/allowed"})
	p.Landlock.WriteDirs = append(p.Landlock.WriteDirs, root+"/blocked/allowed")
	if r := runPlan(t, p); r.code != 0 || r.stdout != "note\n" {
		t.Fatalf("writing below a deny path: %v", r)
	}
	if got := hostFile(t, root+"/blocked/allowed/note.txt"); got != "note\n" {
		t.Errorf("host note.txt is %q", got)
	}
	p.Argv = shArgv("cat blocked/secret.txt")
	if r := runPlan(t, p); r.code == 0 {
		t.Errorf("reading the denied sibling succeeded: %v", r)
	}
}

func TestChildDevices(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	script := "echo blah > /dev/null && for d in null zero full random urandom tty; do test -c /dev/$d || exit 9; done" +
		" && head -c 4 /dev/zero | wc -c && test ! -e /dev/sda && test ! -e /dev/vda && test -d /dev/pts"
	r := runPlan(t, workspacePlan(testDir(t), false, shArgv(script)...))
	if r.code != 0 || strings.TrimSpace(r.stdout) != "4" {
		t.Errorf("devices: %v", r)
	}
}

func TestChildDevShmWritableRoot(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm on this machine")
	}
	name := "/dev/shm/codex-sandbox-test-" + filepath.Base(testDir(t))
	t.Cleanup(func() { os.Remove(name) })
	p := workspacePlan(testDir(t), false, shArgv("echo shm > "+name)...)
	p.WritableRoots = append(p.WritableRoots, sandbox.WritableRoot{Path: "/dev/shm"})
	p.Landlock.WriteDirs = append(p.Landlock.WriteDirs, "/dev/shm")
	if r := runPlan(t, p); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if got := hostFile(t, name); got != "shm\n" {
		t.Errorf("host /dev/shm file is %q", got)
	}
}

// mustWrite creates path (and its parents) with content.
func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
