package cli

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// ignoreSignals keeps SIGINT, SIGTERM and SIGQUIT from ending this process
// while a foreground child handles them; the returned function restores
// the previous handling. The signals are received and dropped (not
// SIG_IGN, which children would inherit).
func ignoreSignals() (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-c:
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(c)
		close(done)
	}
}

// surviveBrokenPipe makes a write to a stdout or stderr whose reader is
// gone fail with EPIPE instead of ending the process, the Go runtime's
// default for fds 1 and 2: a stdio server whose client died then drains
// (docs/protocol.md §1.4), its commands get their SIGTERM and the server
// exits 0, instead of dying and leaving them to the watchdog's SIGKILL.
// SIGPIPE is caught, not ignored, so a command starts with its default
// action (an ignored signal would be inherited). The returned function
// restores the default.
func surviveBrokenPipe() (stop func()) {
	c := make(chan os.Signal, 1) // never read: a caught SIGPIPE needs nothing done
	signal.Notify(c, syscall.SIGPIPE)
	return func() { signal.Stop(c) }
}

// forwardedSignals are passed on to a command running in a session of its
// own: the terminal's Ctrl-C and Ctrl-\, and the usual termination signals.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// runForwardingSignals starts cmd, which must create a new session
// (SysProcAttr.Setsid), and waits for it. Meanwhile each of
// forwardedSignals this process receives is sent to the command's process
// group instead of ending this process; signals that arrive before the
// start are delivered once it started. started, when not nil, runs right
// after the start.
func runForwardingSignals(cmd *exec.Cmd, started func()) error {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return err
	}
	if started != nil {
		started()
	}
	pgid := cmd.Process.Pid // a session leader leads its process group
	done := make(chan struct{})
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for {
			select {
			case s := <-sigs:
				_ = syscall.Kill(-pgid, s.(syscall.Signal))
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-forwarded
	return err
}
