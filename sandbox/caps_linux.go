//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// errCapsRetained is the reference's text for a capability drop that did
// not take (docs/sandbox.md §4.8).
//
//lint:ignore ST1005 the exact text the reference prints
var errCapsRetained = errors.New("Linux sandbox retained effective or permitted capabilities")

// Capabilities, the bounding set and no_new_privs are per thread in Linux.
// The command is forked from the helper's locked thread and inherits only
// that thread's state, so for a command the changes are made on that thread
// alone. The fs helper runs in-process on any thread, so there every change
// is made on all threads at once with psx (the mechanism go-landlock uses;
// it works with and without cgo). psx signals every thread per call, which
// costs milliseconds over the ~45 calls of a capability drop.

// prctlOn runs prctl(2) on the calling (locked) thread, or on every thread
// of the process when allThreads is set.
func prctlOn(allThreads bool, option, arg2 uintptr) error {
	call := unix.RawSyscall6
	if allThreads {
		call = psx.Syscall6
	}
	if _, _, e := call(unix.SYS_PRCTL, option, arg2, 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// dropCapabilities clears the ambient set, empties the bounding set (so an
// execve as uid 0 gains nothing back), and sets the effective, permitted
// and inheritable sets to zero (on every thread with allThreads;
// docs/sandbox.md §4.3 step 9).
// It then checks with capget and fails with errCapsRetained if anything is
// left. Inside a user namespace the same applies to the namespace's
// capabilities.
func dropCapabilities(allThreads bool) error {
	// EINVAL means a kernel without ambient capabilities: nothing to clear.
	if err := prctlOn(allThreads, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL); err != nil && err != unix.EINVAL {
		return fmt.Errorf("capabilities: clear ambient set: %w", os.NewSyscallError("prctl", err))
	}
	for c := uintptr(0); c < 64; c++ {
		err := prctlOn(allThreads, unix.PR_CAPBSET_DROP, c)
		if err == unix.EINVAL {
			break // past CAP_LAST_CAP
		}
		if err != nil {
			return fmt.Errorf("capabilities: drop %d from the bounding set: %w", c, os.NewSyscallError("prctl", err))
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	capset := unix.RawSyscall
	if allThreads {
		capset = psx.Syscall3
	}
	if _, _, e := capset(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capabilities: capset: %w", os.NewSyscallError("capset", e))
	}
	return verifyNoCapabilities()
}

// verifyNoCapabilities reads the calling thread's sets back with capget.
func verifyNoCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("%w: capget: %w", errCapsRetained, err)
	}
	if capsRetained(data) {
		return errCapsRetained
	}
	return nil
}

// capsRetained reports whether any effective or permitted capability is
// set in capget's two 32-bit words.
func capsRetained(data [2]unix.CapUserData) bool {
	return data[0].Effective|data[1].Effective|data[0].Permitted|data[1].Permitted != 0
}

// setNoNewPrivs sets PR_SET_NO_NEW_PRIVS (on every thread with allThreads): no execve can
// gain privileges (setuid bits, file capabilities) any more. It is also a
// precondition of unprivileged seccomp filters.
func setNoNewPrivs(allThreads bool) error {
	if err := prctlOn(allThreads, unix.PR_SET_NO_NEW_PRIVS, 1); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", os.NewSyscallError("prctl", err))
	}
	return nil
}

// lowerThreadCapabilities empties the effective set of the calling thread
// alone, which must be locked to its goroutine, and returns the function
// that gives it back (from the permitted set, which it keeps: raising the
// effective set to it needs no privilege). Permission checks use the
// effective set only, so until then the thread acts as a process without
// capabilities. The thread must not end meanwhile: a child forked from it
// with a parent-death signal (the server's sandbox helpers) would get that
// signal. A thread with no effective capability is left as it is.
func lowerThreadCapabilities() (restore func() error, err error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var saved [2]unix.CapUserData
	if err := unix.Capget(&hdr, &saved[0]); err != nil {
		return nil, fmt.Errorf("capabilities: capget: %w", err)
	}
	if saved[0].Effective|saved[1].Effective == 0 {
		return func() error { return nil }, nil
	}
	set := func(data [2]unix.CapUserData) error {
		h := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		if _, _, e := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			return fmt.Errorf("capabilities: capset: %w", os.NewSyscallError("capset", e))
		}
		return nil
	}
	lowered := saved
	lowered[0].Effective, lowered[1].Effective = 0, 0
	if err := set(lowered); err != nil {
		return nil, err
	}
	var now [2]unix.CapUserData
	if err := unix.Capget(&hdr, &now[0]); err != nil || now[0].Effective|now[1].Effective != 0 {
		_ = set(saved)
		return nil, fmt.Errorf("%w: the effective set could not be emptied", errCapsRetained)
	}
	return func() error { return set(saved) }, nil
}

// withoutCapabilities runs fn on a locked thread whose effective set is
// empty, and waits for it: a removal of what a sandboxed command may have
// put in place must not do more than the command could (delete another
// user's files, or files in folders it may not write). The thread gets
// its capabilities back after fn; if that fails it stays locked to a
// goroutine that never ends rather than serve others without them.
func withoutCapabilities(fn func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restore, err := lowerThreadCapabilities()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		fn()
		if err := restore(); err != nil {
			errc <- err
			select {} // never hand this thread back
		}
		runtime.UnlockOSThread()
		errc <- nil
	}()
	return <-errc
}
