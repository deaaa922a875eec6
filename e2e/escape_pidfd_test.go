package e2e

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pidfdProbe tries to copy each of the first 64 fds of PID 1 (the
// sandbox helper) with pidfd_getfd, and to compare its fds with kcmp; it
// prints how many fds it got and the errors it saw.
const pidfdProbe = `
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pidfd_open, pidfd_getfd, kcmp = (int(x) for x in sys.argv[1:4])
pfd = libc.syscall(pidfd_open, 1, 0)
if pfd < 0:
    print("pidfd_open", errno.errorcode[ctypes.get_errno()])
    sys.exit(0)
got, errs = 0, set()
for fd in range(64):
    r = libc.syscall(pidfd_getfd, pfd, fd, 0)
    if r >= 0:
        got += 1
    else:
        errs.add(errno.errorcode[ctypes.get_errno()])
print("getfd got", got, "errors", ",".join(sorted(errs)))
r = libc.syscall(kcmp, 1, os.getpid(), 0, 0, 0)
print("kcmp", "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
r = libc.ptrace(16, 1, None, None)  # PTRACE_ATTACH
print("ptrace", "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
if r == 0:
    os.waitpid(1, 0x40000000)  # __WALL
    libc.ptrace(17, 1, None, None)  # PTRACE_DETACH
`

// docs/sandbox.md §4.2, §4.4: a sandboxed command must not take the
// helper's fds (pidfd_getfd), probe them (kcmp) or trace the helper, with
// the network off or on (the network-on filter allows ptrace).
func TestEscapePidfdGetfd(t *testing.T) {
	argv := []string{"/usr/bin/python3", "-c", pidfdProbe,
		fmt.Sprint(unix.SYS_PIDFD_OPEN), fmt.Sprint(unix.SYS_PIDFD_GETFD), fmt.Sprint(unix.SYS_KCMP)}
	for _, mode := range [][]string{{"--mode", "read-only"}, {"--mode", "workspace-write"}, {"--mode", "workspace-write", "--network"}} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			out, code := sandboxCLI(t, t.TempDir(), append(append(mode, "--"), argv...)...)
			if code != 0 {
				t.Fatalf("probe exit %d: %s", code, out)
			}
			if !strings.Contains(out, "getfd got 0 errors EPERM\n") || !strings.Contains(out, "kcmp EPERM\n") || !strings.Contains(out, "ptrace EPERM\n") {
				t.Fatalf("the helper's fds are reachable: %q", out)
			}
		})
	}
}
