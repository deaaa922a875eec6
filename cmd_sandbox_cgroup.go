package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
	"github.com/codexec/codex/sandbox"
)

// sandboxCgroup is a cgroup made by `codex sandbox` for one network-off
// command, under its own cgroup, so that the unix sendmsg filter
// (sandbox.DenyNamedUnixSends) applies to the command's tree only.
type sandboxCgroup struct {
	dir string
	fd  int // O_RDONLY directory fd, for CLONE_INTO_CGROUP
}

// newSandboxCgroup creates the cgroup and attaches the filter to it.
func newSandboxCgroup() (*sandboxCgroup, error) {
	mount, err := mountinfo.Cgroup2Mount()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var rel string
	for _, line := range strings.Split(string(data), "\n") {
		if r, ok := strings.CutPrefix(line, "0::"); ok && !strings.HasSuffix(r, " (deleted)") {
			rel = r
		}
	}
	if rel == "" {
		return nil, errors.New("no cgroup v2 entry in /proc/self/cgroup")
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
	cg := &sandboxCgroup{dir: dir, fd: fd}
	if err := sandbox.DenyNamedUnixSends(fd); err != nil {
		cg.remove()
		return nil, err
	}
	return cg, nil
}

// remove kills what the command left in the cgroup and removes it, best
// effort (a process that outlives the kill leaves an empty directory
// behind).
func (cg *sandboxCgroup) remove() {
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
