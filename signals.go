package main

import (
	"os"
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
