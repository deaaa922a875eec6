package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
)

// kernelProbe is the sandboxed command of the attacks below (bash).
// Arguments: the port of a loopback listener of the test, the pid of a
// host process of uid 0 (the test), an empty directory to mount on, a
// second procfs mount of the host (as a build chroot has one), then the
// host's cgroup mount points. It prints one line per finding and DONE
// at the end. It proves a capability and stops there: a cgroup.procs
// write is made by a subshell that exits at once, a mount is undone at
// once, and the kernel knobs are only opened for writing (an open that a
// read-only mount or a missing file refuses), never written.
const kernelProbe = `
port=$1 hostpid=$2 mnt=$3 proc2=$4; shift 4
grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status
echo "NET $(readlink /proc/self/ns/net)"
echo "CGNS $(readlink /proc/self/ns/cgroup)"
echo "CG $(grep '^0::' /proc/self/cgroup)"
self=$(cat /proc/self/cgroup)
for m in /sys/fs/cgroup "$@"; do
  f=$m/cgroup.procs
  [ -e "$f" ] || continue
  echo "SEES $f"
  moved=$(bash -c 'echo $$ > "$1" 2>/dev/null && cat /proc/self/cgroup' _ "$f")
  if [ -n "$moved" ] && [ "$moved" != "$self" ]; then echo "MOVED $f"; fi
done
if mount -t cgroup -o pids none "$mnt" 2>/dev/null; then echo "V1MOUNT"; umount "$mnt"; fi
if mount -t cgroup2 none "$mnt" 2>/dev/null; then echo "V2MOUNT"; umount "$mnt"; fi
for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/modprobe /proc/sys/kernel/hotplug \
    /proc/sys/kernel/poweroff_cmd /sys/kernel/uevent_helper /sys/fs/cgroup/release_agent \
    "$proc2/sys/kernel/core_pattern" "$proc2/sysrq-trigger" \
    "${@/%//release_agent}"; do
  [ -e "$f" ] && (exec 3>>"$f") 2>/dev/null && echo "KNOB $f"
done
unshare -U -r true 2>/dev/null && echo "USERNS-ROOT"
kill -0 "$hostpid" 2>/dev/null && echo "SIGNALS $hostpid"
(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && echo "CONNECTED"
echo DONE
`

// kernelAttack holds what every run of kernelProbe needs: the loopback
// listener, the host's network namespace and cgroup mounts, and a
// directory to mount on that is unmounted again whatever happens.
type kernelAttack struct {
	port           int
	hostNS, hostCG string
	proc2          string
	cgs            []string
}

func newKernelAttack(t *testing.T) *kernelAttack {
	t.Helper()
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no bash")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	cg, err := os.Readlink("/proc/self/ns/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	cgs, _ := mountinfo.CgroupMountPoints()
	return &kernelAttack{port: ln.Addr().(*net.TCPAddr).Port, hostNS: ns, hostCG: cg, proc2: secondProc(t), cgs: cgs}
}

// secondProc mounts a procfs in a directory of the test, as a build
// chroot (mock, sbuild) has one below its root, and unmounts it at the
// end. Its /proc/sys must be as far out of a sandboxed command's reach
// as the host's /proc/sys.
func secondProc(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proc")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Skipf("cannot mount a second procfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// mountpoint returns an empty directory inside dir for the probe's mount
// attempts, unmounted at the end of the test should a mount survive.
func (k *kernelAttack) mountpoint(t *testing.T, dir string) string {
	t.Helper()
	mnt := filepath.Join(dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for unix.Unmount(mnt, unix.MNT_DETACH) == nil {
			t.Errorf("a sandboxed mount on %s outlived the command", mnt)
		}
	})
	return mnt
}

// argv is the probe's command line for a run in dir.
func (k *kernelAttack) argv(t *testing.T, dir string) []string {
	args := []string{"/bin/bash", "--norc", "-c", kernelProbe, "probe",
		strconv.Itoa(k.port), strconv.Itoa(os.Getpid()), k.mountpoint(t, dir), k.proc2}
	return append(args, k.cgs...)
}

// check asserts the probe's output: no capability in any set,
// no_new_privs, no cgroup filesystem or usermode-helper knob in sight, no
// mount, no user namespace with uid 0 mapped (which needs CAP_SETFCAP and
// would give back capabilities over root's files), no host process to
// signal, a cgroup namespace rooted at the
// command's own cgroup, and with the network off a network namespace of
// its own and no loopback connection.
func (k *kernelAttack) check(t *testing.T, name, out string, networkOff bool) {
	t.Helper()
	if !strings.Contains(out, "\nDONE\n") {
		t.Errorf("%s: the probe did not run to its end: %q", name, out)
		return
	}
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if !strings.Contains(out, set+":\t0000000000000000\n") {
			t.Errorf("%s: %s is not empty: %q", name, set, line(out, set+":"))
		}
	}
	if !strings.Contains(out, "NoNewPrivs:\t1\n") {
		t.Errorf("%s: no_new_privs is not set", name)
	}
	for _, bad := range []string{"SEES ", "MOVED ", "V1MOUNT", "V2MOUNT", "KNOB ", "SIGNALS ", "USERNS-ROOT"} {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, bad) {
				t.Errorf("%s: %s", name, l)
			}
		}
	}
	if got := line(out, "CGNS "); got == "CGNS "+k.hostCG {
		t.Errorf("%s: the command is in the host's cgroup namespace (%s)", name, got)
	}
	if got := line(out, "CG "); got != "CG 0::/" {
		t.Errorf("%s: the cgroup namespace is not rooted at the command's cgroup: %q", name, got)
	}
	if networkOff {
		if got := line(out, "NET "); got == "NET "+k.hostNS {
			t.Errorf("%s: network off, but the command is in the host's network namespace (%s)", name, got)
		}
		if strings.Contains(out, "\nCONNECTED\n") {
			t.Errorf("%s: network off, but the command connected to the test's loopback listener", name)
		}
	}
}

// line returns the first line of out that starts with prefix.
func line(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// managed is a managed permission profile with a restricted file system
// of :root at access, or an unrestricted one for access "unrestricted".
func managed(access, network string) map[string]any {
	fs := map[string]any{"type": "unrestricted"}
	if access != "unrestricted" {
		fs = map[string]any{"type": "restricted", "entries": []any{
			map[string]any{"path": map[string]any{"type": "special", "value": map[string]any{"kind": "root"}}, "access": access},
		}}
	}
	return map[string]any{"type": "managed", "file_system": fs, "network": network}
}

// Red team, round 4 (issue 17 item 8; docs/sandbox.md §7): a profile with
// :root = write and the network off needs no mount layer, so the plan was
// the seccomp filter alone: the command kept root's capabilities
// (CapEff=000001fffeffffff) in the host's mount, network and PID
// namespaces, moved itself into the host's root cgroups, mounted a cgroup
// v1 hierarchy (whose release_agent the kernel runs as root outside every
// sandbox) and could write kernel.core_pattern. Must hold for every
// sandboxed command, whatever its profile: no capability in any set
// (bounding included), no_new_privs, no cgroup filesystem or
// usermode-helper knob, no way out of its cgroup leaf, and with the
// network off a network namespace of its own.
func TestRedteamNoCapabilitiesProcessStart(t *testing.T) {
	k := newKernelAttack(t)
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	for _, tc := range []struct {
		name, access, network string
	}{
		{"full-write network off", "write", "restricted"},
		{"full-write network on", "write", "enabled"},
		{"unrestricted files network off", "unrestricted", "restricted"},
		{"read-only network off", "read", "restricted"},
		{"workspace-write network off", "workspace", "restricted"},
		{"workspace-write network on", "workspace", "enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			id := strings.ReplaceAll(tc.name, " ", "-")
			p := startParams(id, k.argv(t, root)...)
			p["cwd"] = "file://" + root
			sb := workspaceSandbox(root, tc.network)
			if tc.access != "workspace" {
				sb["permissions"] = managed(tc.access, tc.network)
			}
			p["sandbox"] = sb
			out, _, _ := runSandboxed(t, c, p)
			k.check(t, tc.name, out, tc.network == "restricted")
		})
	}
	// A terminal still works in the kernel layer of a full-write plan
	// (its own devpts instance).
	root := t.TempDir()
	sb := workspaceSandbox(root, "restricted")
	sb["permissions"] = managed("write", "restricted")
	out, code, _ := runSandboxed(t, c, sandboxedStart("full-write-pty", root, sb, true, "stty size; tty"))
	if code != 0 || !strings.Contains(out, "24 80") || !strings.Contains(out, "/dev/pts/") {
		t.Errorf("full-write PTY: code %d out %q", code, out)
	}
}

// execCase is one command/exec request of the attack: its extra params
// and whether its network is off.
type execCase struct {
	name string
	kv   []any
	off  bool
}

// The same attack through command/exec: the legacy policies, named
// full-write profiles of config.toml, and the requests for no sandbox
// that still run in a sandbox masking the configured deny entries
// (docs/operations.md §7).
func TestRedteamNoCapabilitiesCommandExec(t *testing.T) {
	k := newKernelAttack(t)
	profiles := `
[permissions.full.filesystem]
":root" = "write"
[permissions.full.network]
enabled = false
[permissions.fullnet.filesystem]
":root" = "write"
[permissions.fullnet.network]
enabled = true
`
	for _, kept := range []bool{false, true} {
		t.Run(fmt.Sprintf("kept=%v", kept), func(t *testing.T) {
			base := t.TempDir()
			home, work, secret := filepath.Join(base, "home"), filepath.Join(base, "work"), filepath.Join(base, "secret")
			writeFiles(t, work, "a.txt")
			writeFiles(t, secret, "key")
			config := profiles
			if kept {
				config = "default_permissions = \"dev\"\n[permissions.dev.filesystem]\n\":root\" = \"read\"\n\"" + secret + "\" = \"none\"\n" + profiles
			}
			if err := os.MkdirAll(home, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			c := cxConfigured(t, false, home, work)
			cases := []execCase{
				{"default", nil, true},
				{"readOnly", []any{"sandboxPolicy", map[string]any{"type": "readOnly"}}, true},
				{"readOnly network", []any{"sandboxPolicy", map[string]any{"type": "readOnly", "networkAccess": true}}, false},
				{"workspaceWrite", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite"}}, true},
				{"workspaceWrite network", []any{"sandboxPolicy", map[string]any{"type": "workspaceWrite", "networkAccess": true}}, false},
				{"full-write profile", []any{"permissionProfile", "full"}, true},
				{"full-write profile network", []any{"permissionProfile", "fullnet"}, false},
			}
			if kept {
				cases = append(cases,
					execCase{"dangerFullAccess masking sandbox", []any{"sandboxPolicy", map[string]any{"type": "dangerFullAccess"}}, false},
					execCase{":danger-full-access masking sandbox", []any{"permissionProfile", ":danger-full-access"}, false})
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p := map[string]any{"command": k.argv(t, work)}
					for i := 0; i < len(tc.kv); i += 2 {
						p[tc.kv[i].(string)] = tc.kv[i+1]
					}
					var r struct{ Stdout, Stderr string }
					if err := json.Unmarshal([]byte(result(t, c.call("command/exec", p))), &r); err != nil {
						t.Fatal(err)
					}
					k.check(t, tc.name, r.Stdout, tc.off)
				})
			}
		})
	}
}

// The same attack through `codex sandbox`.
func TestRedteamNoCapabilitiesCLI(t *testing.T) {
	k := newKernelAttack(t)
	prof := func(access, network string) string {
		b, _ := json.Marshal(managed(access, network))
		return string(b)
	}
	for _, tc := range []struct {
		name string
		args []string
		off  bool
	}{
		{"read-only", []string{"--mode", "read-only"}, true},
		{"workspace-write", []string{"--mode", "workspace-write"}, true},
		{"workspace-write network", []string{"--mode", "workspace-write", "--network"}, false},
		{"full-write network off", []string{"--profile-json", prof("write", "restricted")}, true},
		{"full-write network on", []string{"--profile-json", prof("write", "enabled")}, false},
		{"unrestricted files network off", []string{"--profile-json", prof("unrestricted", "restricted")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out, _ := sandboxCLI(t, dir, append(append(tc.args, "--"), k.argv(t, dir)...)...)
			k.check(t, tc.name, out, tc.off)
		})
	}
}
