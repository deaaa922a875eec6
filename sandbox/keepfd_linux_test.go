//go:build linux

package sandbox_test

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/sandbox"
)

// listFDs is the helper program mode "fds": it prints "N TARGET" for every
// open descriptor, found with fcntl (opening /proc/self/fd would add one),
// then writes "kept" to fd 4 when it is open.
func listFDs() int {
	for fd := 0; fd < 4096; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			continue
		}
		target, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		fmt.Printf("%d %s\n", fd, target)
	}
	if _, err := unix.FcntlInt(4, unix.F_GETFD, 0); err == nil {
		_, _ = unix.Write(4, []byte("kept"))
	}
	return 0
}

// keepPlans are the two ways the helper runs a command: exec in place
// (seccomp only) and fork as PID 1 of a namespace.
func keepPlans(t *testing.T) map[string]sandbox.Plan {
	root := testDir(t)
	return map[string]sandbox.Plan{
		"exec": {Env: testEnv, Dir: root, Seccomp: sandbox.SeccompRestricted, NetworkDisabled: true},
		"pid1": workspacePlan(root, false),
	}
}

// TestKeepFDOnlyTheSocket is the attack test of Plan.KeepFD: a command run
// with one kept socket finds exactly fds 0-2 and that socket, whatever else
// the helper inherited (here a file planted on fd 5 without close-on-exec),
// and the kept fd is the very socket the spawner passed.
func TestKeepFDOnlyTheSocket(t *testing.T) {
	requireSandbox(t)
	for name, base := range keepPlans(t) {
		t.Run(name, func(t *testing.T) {
			pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			ours, theirs := os.NewFile(uintptr(pair[0]), "ours"), os.NewFile(uintptr(pair[1]), "theirs")
			defer ours.Close()
			defer theirs.Close()
			secret, err := os.Open("/etc/hostname")
			if err != nil {
				t.Fatal(err)
			}
			defer secret.Close()

			plan := helperPlan(t, base, "fds")
			// The Go runtime keeps cgroup files open to follow CPU limits:
			// those would be the program's own fds, not inherited ones.
			plan.Env = append(slices.Clone(plan.Env), "GODEBUG=containermaxprocs=0,updatemaxprocs=0")
			plan.KeepFD = sandbox.KeepFDFor(&plan)
			if plan.KeepFD != 4 {
				t.Fatalf("KeepFDFor = %d, want 4", plan.KeepFD)
			}
			r := runPlanWith(t, plan, theirs, secret)
			if r.code != 0 {
				t.Fatalf("helper: %v", r)
			}
			var st unix.Stat_t
			if err := unix.Fstat(pair[1], &st); err != nil {
				t.Fatal(err)
			}
			var fds []string
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				fd, target, _ := strings.Cut(line, " ")
				fds = append(fds, fd)
				if fd == "4" && target != fmt.Sprintf("socket:[%d]", st.Ino) {
					t.Errorf("fd 4 is %q, want our socket socket:[%d]", target, st.Ino)
				}
			}
			if got := strings.Join(fds, ","); got != "0,1,2,4" {
				t.Errorf("open fds %s, want 0,1,2,4 (%v)", got, r)
			}
			buf := make([]byte, 16)
			_ = unix.SetNonblock(pair[0], true)
			n, err := unix.Read(pair[0], buf)
			if err != nil || string(buf[:n]) != "kept" {
				t.Errorf("read from our end: %q %v, want kept", buf[:max(n, 0)], err)
			}
		})
	}
}

// TestKeepFDNotASocket: the helper refuses to run the command when the kept
// fd is not a Unix socket (a file, an inet socket) or is missing (fail
// closed: nothing but a Unix socket may cross the exec).
func TestKeepFDNotASocket(t *testing.T) {
	requireSandbox(t)
	f, err := os.Open("/etc/hostname")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	inet, err := udp.(*net.UDPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer inet.Close()
	for _, extra := range [][]*os.File{{f}, nil, {inet}} {
		plan := helperPlan(t, keepPlans(t)["exec"], "fds")
		plan.KeepFD = sandbox.KeepFDFor(&plan)
		r := runPlanWith(t, plan, extra...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "kept fd 4") {
			t.Errorf("extra %v: %v, want exit 1 with a kept-fd error and no command", extra, r)
		}
	}
}

// TestKeepFDWrapRejects: Wrap refuses a kept fd other than the one right
// after the plan's own files.
func TestKeepFDWrapRejects(t *testing.T) {
	for _, fd := range []int{1, 3, 5} {
		if _, err := sandbox.Wrap(sandbox.Plan{Argv: []string{"true"}, KeepFD: fd}); err == nil {
			t.Errorf("KeepFD %d: Wrap accepted it", fd)
		}
	}
}

// runPlanWith is runPlan with extra files after the plan (the first
// becomes fd 4).
func runPlanWith(t *testing.T, plan sandbox.Plan, extra ...*os.File) runResult {
	t.Helper()
	cmd, closePlan := helperCmd(t, t.Context(), plan)
	cmd.ExtraFiles = append(cmd.ExtraFiles, extra...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	closePlan()
	return runResult{code: helperExitCode(t, cmd, err), stdout: stdout.String(), stderr: stderr.String()}
}
