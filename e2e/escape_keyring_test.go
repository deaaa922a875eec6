package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// keyringProbe is run inside the sandbox: it tries to read and search the
// host's key (id and description in argv) in the user keyring, to request
// it, and to plant a key of its own, and prints "op result" lines.
const keyringProbe = `
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
add_key, request_key, keyctl = (int(x) for x in sys.argv[1:4])
key_id, desc = int(sys.argv[4]), sys.argv[5].encode()
def res(r):
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
buf = ctypes.create_string_buffer(64)
print("read", res(libc.syscall(keyctl, 11, ctypes.c_long(key_id), buf, 64)))
print("search", res(libc.syscall(keyctl, 10, ctypes.c_long(-4), b"user", desc, 0)))
print("request", res(libc.syscall(request_key, b"user", desc, None, 0)))
print("add", res(libc.syscall(add_key, b"user", b"planted-" + desc, b"x", 1, ctypes.c_long(-4))))
`

// docs/sandbox.md §4.4: a sandboxed command must not reach the host's kernel
// keyring, in every filter mode (network off, network on, and network on
// with full write, which installs no network filter).
func TestEscapeKeyring(t *testing.T) {
	desc := fmt.Sprintf("codex-e2e-%d", time.Now().UnixNano())
	id, err := unix.AddKey("user", desc, []byte("host-secret"), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Skipf("cannot add a key to the user keyring here: %v", err)
	}
	t.Cleanup(func() {
		_, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
		if pid, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", "planted-"+desc, 0); err == nil {
			_, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, pid, 0, 0, 0)
		}
	})
	dir := t.TempDir()
	argv := []string{"/usr/bin/python3", "-c", keyringProbe,
		fmt.Sprint(unix.SYS_ADD_KEY), fmt.Sprint(unix.SYS_REQUEST_KEY), fmt.Sprint(unix.SYS_KEYCTL), fmt.Sprint(id), desc}
	cases := []struct{ name, profile string }{
		{"network off", `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}`},
		{"network on", `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"enabled"}`},
		{"network on, full write", `{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"write"},{"path":{"type":"path","path":"` + dir + `/nothing"},"access":"none"}]},"network":"enabled"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := sandboxCLI(t, dir, append([]string{"--profile-json", c.profile, "--"}, argv...)...)
			if code != 0 {
				t.Fatalf("probe exit %d: %s", code, out)
			}
			for _, op := range []string{"read", "search", "request", "add"} {
				if !strings.Contains(out, op+" EPERM\n") {
					t.Errorf("%s: want EPERM; probe said:\n%s", op, out)
				}
			}
			// Not even the description of a host key shows through /proc.
			out, _ = sandboxCLI(t, dir, append([]string{"--profile-json", c.profile, "--"}, "/bin/sh", "-c", "cat /proc/keys /proc/key-users 2>&1; true")...)
			if strings.Contains(out, desc) {
				t.Errorf("/proc/keys shows the host key %s:\n%s", desc, out)
			}
		})
	}
}
