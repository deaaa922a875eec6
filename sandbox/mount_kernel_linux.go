//go:build linux

package sandbox

import (
	"errors"

	"golang.org/x/sys/unix"
)

// kernelKnobs are the host kernel's writable files, kept read-only for
// every command with a mount layer, as bubblewrap's --proc keeps the /proc
// ones. A uid-0 command without capabilities may still write most of them
// (for sysctls the kernel checks the file mode only), and some name a
// program the kernel runs as root outside every namespace
// (kernel.core_pattern): a full-write plan would otherwise let a command
// leave the sandbox, deny masks included.
var kernelKnobs = [...]string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/sys"}

// protectKernelKnobs covers each existing kernelKnobs path with a
// read-only clone of its mount tree (after /proc is mounted).
func protectKernelKnobs() error {
	return readOnlyTrees(kernelKnobs[:])
}

// protectHostProc makes the whole /proc read-only, for a command in the
// server's PID namespace (Plan.InheritPIDNS): that /proc is the host's,
// and a uid-0 command without capabilities may still write the files
// its uid owns there, such as another process's oom_score_adj (the
// server's, to make it the OOM killer's first victim).
func protectHostProc() error {
	return readOnlyTrees([]string{"/proc"})
}

// readOnlyTrees covers each existing path with a read-only clone of its
// mount tree.
func readOnlyTrees(paths []string) error {
	for _, path := range paths {
		tree, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return mountErr("clone", path, err)
		}
		err = setReadOnly(tree, "", true, true)
		if err == nil {
			err = unix.MoveMount(tree, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH)
			if err != nil {
				err = mountErr("protect", path, err)
			}
		}
		unix.Close(tree)
		if err != nil {
			return err
		}
	}
	return nil
}
