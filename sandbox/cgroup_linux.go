//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
)

// CommandCgroup is a cgroup v2 directory made for one network-off command
// that runs outside the server (`codex sandbox`), below the caller's own
// cgroup, so that the unix sendmsg filter (DenyNamedUnixSends) applies to
// the command's tree only. The server's processes get theirs from
// proc.TreeKiller instead. Call Remove when the command is done.
type CommandCgroup struct {
	dir string
	fd  int // O_RDONLY directory fd, for CLONE_INTO_CGROUP
}

// NewCommandCgroup creates the cgroup "codex-sandbox-<pid>" below the
// calling process's cgroup v2 and attaches the DenyNamedUnixSends filter
// to it. It fails without a cgroup v2 mount, without write access there,
// or where the kernel refuses the filter.
func NewCommandCgroup() (*CommandCgroup, error) {
	mount, err := mountinfo.Cgroup2Mount()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	rel, err := unifiedCgroup(string(data))
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(mount, rel, fmt.Sprintf("codex-sandbox-%d", os.Getpid()))
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return nil, &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	cg := &CommandCgroup{dir: dir, fd: fd}
	if err := DenyNamedUnixSends(fd); err != nil {
		cg.Remove()
		return nil, err
	}
	return cg, nil
}

// unifiedCgroup returns the cgroup v2 path of a /proc/PID/cgroup text:
// its "0::" entry, unless deleted.
func unifiedCgroup(data string) (string, error) {
	for _, line := range strings.Split(data, "\n") {
		if r, ok := strings.CutPrefix(line, "0::"); ok && r != "" && !strings.HasSuffix(r, " (deleted)") {
			return r, nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

// Apply makes a command started with sys begin inside the cgroup
// (CLONE_INTO_CGROUP).
func (cg *CommandCgroup) Apply(sys *syscall.SysProcAttr) {
	sys.UseCgroupFD, sys.CgroupFD = true, cg.fd
}

// Remove kills what the command left in the cgroup and removes it, best
// effort: it waits up to 2 s for the killed processes to be reaped, and a
// process that outlives that leaves an empty directory behind.
func (cg *CommandCgroup) Remove() {
	_ = unix.Close(cg.fd)
	_ = os.WriteFile(filepath.Join(cg.dir, "cgroup.kill"), []byte("1"), 0)
	for deadline := time.Now().Add(2 * time.Second); ; {
		err := unix.Rmdir(cg.dir)
		if err != unix.EBUSY || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond) // the killed processes are being reaped
	}
}
