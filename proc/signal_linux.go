//go:build linux

// Signals: delivering them to a started process (Signal, Kill) and
// resetting the dispositions a child would otherwise inherit as ignored.

package proc

import (
	"fmt"
	"os"
	ossignal "os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ClaimIgnoredSignals makes sure children start with every signal at its
// default disposition (docs/protocol.md §7.4), even when the server inherited
// some ignored (nohup, a background job of a non-interactive shell, a
// supervisor). execve passes SIG_IGN on, and the Go runtime keeps an
// inherited SIG_IGN, so without this every child would ignore them too.
//
// Standard signals are claimed through os/signal: the runtime installs its
// handler (the fork then resets it to SIG_DFL in the child) and delivers
// them to a channel nobody reads, so the server still ignores them in
// effect. Real-time signals the runtime leaves alone (32 and 33) are set to
// SIG_DFL directly; nothing sends them to a server. Signals the runtime
// already handles, for example after signal.NotifyContext, need nothing.
//
// Call it once at start-up (cli.Main) before starting processes. The returned function
// restores the inherited state.
func ClaimIgnoredSignals() (restore func()) {
	var claimed []os.Signal
	var raw []int
	for sig := 1; sig <= 64; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) || !sigIgnored(sig) {
			continue
		}
		if sig < 32 {
			claimed = append(claimed, syscall.Signal(sig))
		} else if setSigaction(sig, sigDFL) == nil {
			raw = append(raw, sig)
		}
	}
	c := make(chan os.Signal, 1) // never read: a full channel drops signals
	if len(claimed) > 0 {
		ossignal.Notify(c, claimed...)
	}
	return func() {
		if len(claimed) > 0 {
			ossignal.Stop(c) // the runtime restores the inherited SIG_IGN
		}
		for _, sig := range raw {
			_ = setSigaction(sig, sigIGN)
		}
	}
}

const (
	sigDFL = 0
	sigIGN = 1
)

// kernelSigaction is struct sigaction as the rt_sigaction system call
// takes it on Linux.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sigIgnored reports whether sig is currently SIG_IGN.
func sigIgnored(sig int) bool {
	var old kernelSigaction
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	return errno == 0 && old.handler == sigIGN
}

// setSigaction sets sig to SIG_DFL or SIG_IGN.
func setSigaction(sig int, handler uintptr) error {
	act := kernelSigaction{handler: handler}
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// Signal sends sig to the child's process group. It is a no-op returning
// nil once the child was reaped (or if the group is already gone).
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil
	}
	if err := unix.Kill(-p.pid, sig); err != nil && err != unix.ESRCH {
		return fmt.Errorf("proc: signal %v: %w", sig, os.NewSyscallError("kill", err))
	}
	return nil
}

// Kill sends SIGKILL to the whole tree: the process group and, with a
// TreeKiller, every descendant, including those that called setsid. If the
// output has not reached EOF KillGrace after the first Kill, the parent's
// read ends are force-closed so that OutputDone fires. Kill may be called
// after the exit: it then kills what is left of the tree.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killed = true
	p.armGrace()
	var err error
	switch {
	case p.tree == nil:
	case !p.reaped && p.tree.defersLeafKill(p.leaf):
		// The group kill below usually takes the whole leaf; the reap
		// checks that it did and kills the rest (settleTree).
		p.deferTreeKill()
	default:
		// Before the group kill: the subreaper walk must see the tree intact.
		err = p.tree.kill(p.pid, p.leaf, !p.reaped)
	}
	// After the reap the number names our group only while a member
	// holds it; once the group is empty the number is free, and a process
	// that has it now (every command we start leads its own group) is a
	// stranger's (groupOnlyOurs).
	if !p.reaped || (p.openOut > 0 && groupOnlyOurs(p.pid)) {
		if kerr := unix.Kill(-p.pid, unix.SIGKILL); kerr != nil && kerr != unix.ESRCH && err == nil {
			err = os.NewSyscallError("kill", kerr)
		}
	}
	if err != nil {
		return fmt.Errorf("proc: kill: %w", err)
	}
	return nil
}
