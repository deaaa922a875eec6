package main

import (
	"context"
	"os/exec"
	"time"
)

// runExecRun measures `codex exec run -- /bin/true` (one process: the client and
// its private exec-server, with the server's watchdog) against a raw os/exec spawn
// of /bin/true, interleaved (issue target: ≤ 6× the raw spawn). The
// reference has no such command, so there is no reference column.
func (b *Bench) runExecRun(ctx context.Context) {
	c := b.cfg
	n, warm := c.SandN, c.SandWarm
	rounds := max(1, min(c.Rounds, n))
	logf("execrun: codex exec run -- /bin/true vs os/exec (N=%d, %d rounds)", n, rounds)
	bin := b.ours.Res.Binary
	s := interleave(ctx, []subject{
		{"ours", timedRun(func(ctx context.Context) error {
			return exec.CommandContext(ctx, bin, "exec", "run", "--", "/bin/true").Run()
		})},
		{"floor", timedRun(func(ctx context.Context) error {
			return exec.CommandContext(ctx, "/bin/true").Run()
		})},
	}, 1, warm, n, rounds)
	b.ours.Res.Metrics.ExecRun = s[0].latency(0)
	b.floors.ExecRunRaw = s[1].latency(0)
}

// timedRun samples the wall time of one call of f.
func timedRun(f func(context.Context) error) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		t0 := time.Now()
		if err := f(ctx); err != nil {
			return nil, err
		}
		return []time.Duration{time.Since(t0)}, nil
	}
}
