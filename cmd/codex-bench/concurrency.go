// Concurrency scenarios (#6): many short processes on one connection and
// across several connections.

package main

import (
	"context"
	"errors"
	"sync"
	"time"
)

// concurrencyOneConn starts k `sleep 0.2` at once on the main connection and
// times until every one is closed (#6).
func concurrencyOneConn(ctx context.Context, t *Target, k int) (time.Duration, error) {
	c, err := t.client(ctx)
	if err != nil {
		return 0, err
	}
	return runConcurrent(ctx, t, func(int) *Client { return c }, k)
}

// concurrencyKConns opens k connections, then starts one `sleep 0.2` on each
// at once and times until every one is closed (#6).
func concurrencyKConns(ctx context.Context, t *Target, k int) (time.Duration, error) {
	clients := make([]*Client, k)
	var wg sync.WaitGroup
	errs := make([]error, k)
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i], errs[i] = t.dial(ctx)
		}()
	}
	wg.Wait()
	defer func() {
		var cw sync.WaitGroup
		for _, c := range clients {
			if c != nil {
				cw.Add(1)
				go func() { defer cw.Done(); c.Close() }()
			}
		}
		cw.Wait()
	}()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return runConcurrent(ctx, t, func(i int) *Client { return clients[i] }, k)
}

// runConcurrent starts k `sleep 0.2` from k goroutines, process i on
// client(i), and returns the time from the first request to the last close.
func runConcurrent(ctx context.Context, t *Target, client func(int) *Client, k int) (time.Duration, error) {
	procs := make([]*Proc, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client(i)
			p, _, err := c.Start(ctx, []string{"/bin/sleep", "0.2"}, false, false)
			if err != nil {
				errs[i] = err
				return
			}
			procs[i] = p
			if err := p.Wait(ctx, 120*time.Second); err != nil {
				t.cleanup(c, p)
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	var last time.Time
	for _, p := range procs {
		t.checkExit(p, 0, "sleep 0.2")
		if p.ClosedAt.After(last) {
			last = p.ClosedAt
		}
	}
	return last.Sub(t0), nil
}
