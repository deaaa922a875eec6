// Output scenarios: pipe/PTY throughput (#4, #5), what the server retained,
// and the completeness of the output tail before process/closed (#9).

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/codexec/codex/wire"
)

// throughputRun runs `sh -c 'head -c SIZE /dev/zero'` and measures decoded
// bytes over start→closed (#4, #5).
func throughputRun(ctx context.Context, t *Target, tty bool, size int64) (ThroughputRun, *Proc, error) {
	c, err := t.client(ctx)
	if err != nil {
		return ThroughputRun{}, nil, err
	}
	argv := []string{"/bin/sh", "-c", fmt.Sprintf("head -c %d /dev/zero", size)}
	p, _, err := c.Start(ctx, argv, tty, false)
	if err != nil {
		return ThroughputRun{}, nil, err
	}
	timeout := 60*time.Second + time.Duration(size/(1<<20))*time.Second // ≥ 1 MiB/s
	if err := p.Wait(ctx, timeout); err != nil {
		t.cleanup(c, p)
		return ThroughputRun{}, nil, err
	}
	ok := t.checkExit(p, 0, "head -c")
	run := newRun(p.Bytes, p.ClosedAt.Sub(p.Start), p.Chunks, ok && p.Bytes == size)
	if p.Bytes != size {
		run.FirstError = fmt.Sprintf("received %d bytes, want %d", p.Bytes, size)
	}
	return run, p, nil
}

// retainedBytes reads back what the server retained of p (process/read from
// the start) and returns the decoded size.
func retainedBytes(ctx context.Context, t *Target, p *Proc) (int64, error) {
	c, err := t.client(ctx)
	if err != nil {
		return 0, err
	}
	r, err := c.Call(ctx, wire.MethodProcessRead, map[string]any{"processId": p.ID, "afterSeq": 0, "maxBytes": nil, "waitMs": 0})
	if err != nil {
		return 0, err
	}
	var res struct {
		Chunks []struct {
			Chunk string `json:"chunk"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return 0, err
	}
	var n int64
	for _, ch := range res.Chunks {
		n += base64Len([]byte(ch.Chunk))
	}
	return n, nil
}

// tailRun runs `head -c 1048576 /dev/zero` runs times and counts runs whose
// decoded output is exactly 1 MiB of zeros before process/closed (#9).
func tailRun(ctx context.Context, t *Target, tty bool, runs int) *Tail {
	const size = 1 << 20
	tl := &Tail{TTY: tty}
	for range runs {
		if ctx.Err() != nil {
			break
		}
		c, err := t.client(ctx)
		if err != nil {
			tl.Error = err.Error()
			break
		}
		tl.Runs++
		p, _, err := c.Start(ctx, []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}, tty, true)
		if err != nil {
			tl.Errors++
			tl.Error = err.Error()
			continue
		}
		if err := p.Wait(ctx, 60*time.Second); err != nil {
			t.cleanup(c, p)
			tl.Errors++
			tl.Error = err.Error()
			continue
		}
		exitOK := t.checkExit(p, 0, "head -c 1048576")
		if p.Bytes == size && !p.NonZero && exitOK {
			tl.Complete++
		} else {
			tl.Incomplete = append(tl.Incomplete, p.Bytes)
		}
	}
	if tl.Runs > 0 {
		tl.Fraction = round3(float64(tl.Complete) / float64(tl.Runs))
	}
	return tl
}
