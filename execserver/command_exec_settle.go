package execserver

// settledRun reports whether a command/exec run needs nothing more from
// Process.Close before its response: the child exited by itself (no
// timeout), every output stream reached EOF, so no output can follow and
// Close kills nothing, and no host guard waits for the tree to end. Then the
// response goes out first and the process's cleanup (joining its
// goroutines, removing its cgroup leaf) follows it, off the round trip.
func settledRun(e *cmdExec, timedOut bool) bool {
	if timedOut || e.protect != nil {
		return false
	}
	select {
	case <-e.pr.OutputDone():
		return true
	default:
		return false
	}
}
