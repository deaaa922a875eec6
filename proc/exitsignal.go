package proc

import "syscall"

// ExitSignal returns the signal that ended the direct child, or 0 if it
// exited by itself, has not exited, or its status was lost. A sandboxed
// command's child is the sandbox helper, which exits with 128+N instead
// of dying by the command's signal N.
func (p *Process) ExitSignal() syscall.Signal {
	select {
	case <-p.exited:
		return p.exitSignal
	default:
		return 0
	}
}
