// The memory scenario (#7): the server's RSS, fds and threads with idle children.

package main

import (
	"context"
	"fmt"
	"time"
)

// memoryRun measures the server's RSS, fds and threads with k idle
// `sleep 1000` children, then terminates them (#7).
func memoryRun(ctx context.Context, t *Target, tty bool, k int) (*Memory, error) {
	m := &Memory{K: k, TTY: tty, ExitCodes: map[string]int{}}
	c, err := t.client(ctx)
	if err != nil {
		return m, err
	}
	time.Sleep(300 * time.Millisecond)
	if m.Before, err = readProcStatus(t.Srv.Pid); err != nil {
		return m, err
	}
	var procs []*Proc
	defer func() { // make sure nothing is left running, even on errors
		for _, p := range procs {
			select {
			case <-p.Closed():
			default:
				t.cleanup(c, p)
			}
		}
	}()
	for range k {
		p, _, err := c.Start(ctx, []string{"/bin/sleep", "1000"}, tty, false)
		if err != nil {
			return m, err
		}
		procs = append(procs, p)
	}
	time.Sleep(time.Second)
	if m.With, err = readProcStatus(t.Srv.Pid); err != nil {
		return m, err
	}
	m.KiBPerChild = round3(float64(m.With.RSSKiB-m.Before.RSSKiB) / float64(k))
	m.FDsPerChild = round3(float64(m.With.FDs-m.Before.FDs) / float64(k))
	m.ThreadsPerChild = round3(float64(m.With.Threads-m.Before.Threads) / float64(k))
	for _, p := range procs {
		running, err := c.Terminate(ctx, p)
		if err != nil {
			return m, fmt.Errorf("process/terminate: %w", err)
		}
		if !running {
			return m, fmt.Errorf("process/terminate of an idle sleep returned running:false")
		}
	}
	for _, p := range procs {
		if err := p.Wait(ctx, 20*time.Second); err != nil {
			return m, err
		}
		code := "null"
		if p.ExitCode != nil {
			code = fmt.Sprint(*p.ExitCode)
		}
		m.ExitCodes[code]++
		if t.checkExit(p, 137, "terminated sleep 1000") {
			m.TerminatedOK++
		}
	}
	time.Sleep(500 * time.Millisecond)
	m.After, err = readProcStatus(t.Srv.Pid)
	return m, err
}
