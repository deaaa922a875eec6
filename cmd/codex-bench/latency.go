// Latency sampling: samplers for spawn and completion (#1, #2), first byte
// (#3) and metadata (#10), run interleaved in rounds so every subject takes
// each position in turn.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codexec/codex/wire"
)

// sampler produces one or more latency values per call.
type sampler func(ctx context.Context) ([]time.Duration, error)

// subject is one participant of an interleaved latency measurement.
type subject struct {
	name string
	run  sampler
}

// series collects an interleaved measurement's samples for one subject.
type series struct {
	vals    [][]float64   // [value][sample] ms
	rounds  [][][]float64 // [round][value][sample] ms
	errs    int
	lastErr error
	dead    bool
}

// latency builds the Latency of value k.
func (s *series) latency(k int) *Latency {
	l := summarize(s.vals[k])
	l.Errors = s.errs
	for _, r := range s.rounds {
		if len(r[k]) > 0 {
			l.Rounds = append(l.Rounds, round3(p50(r[k])))
		}
	}
	if s.dead && s.lastErr != nil {
		l.Error = s.lastErr.Error()
	}
	return l
}

// order returns subject indices rotated by round, so every subject takes
// each position in turn (ref, ours, floor / ours, floor, ref / …).
func order(n, round int) []int {
	out := make([]int, n)
	for i := range n {
		out[i] = (i + round) % n
	}
	return out
}

// interleave runs warm warm-ups per subject, then n measured samples each,
// split into rounds; in each round every subject runs its block in turn.
func interleave(ctx context.Context, subs []subject, nvals, warm, n, rounds int) []*series {
	out := make([]*series, len(subs))
	for i := range subs {
		out[i] = &series{vals: make([][]float64, nvals)}
	}
	maxErrs := max(5, n/4)
	for i, s := range subs {
		for range warm {
			if ctx.Err() != nil {
				return out
			}
			if _, err := s.run(ctx); err != nil {
				out[i].errs++
				out[i].lastErr = err
				if out[i].errs >= maxErrs || errors.Is(err, errFatal) {
					out[i].dead = true
					break
				}
			}
		}
		out[i].errs = 0
	}
	for r := range rounds {
		block := n / rounds
		if r < n%rounds {
			block++
		}
		for _, i := range order(len(subs), r) {
			s := out[i]
			rv := make([][]float64, nvals)
			for range block {
				if s.dead || ctx.Err() != nil {
					break
				}
				v, err := subs[i].run(ctx)
				if err != nil {
					s.errs++
					s.lastErr = err
					if s.errs >= maxErrs || errors.Is(err, errFatal) {
						s.dead = true
					}
					continue
				}
				for k := range min(nvals, len(v)) {
					rv[k] = append(rv[k], ms(v[k]))
					s.vals[k] = append(s.vals[k], ms(v[k]))
				}
			}
			s.rounds = append(s.rounds, rv)
		}
	}
	return out
}

// errFatal marks errors after which a subject is not retried (its
// connection or server is gone).
var errFatal = errors.New("fatal")

func fatal(err error) error { return fmt.Errorf("%w: %w", errFatal, err) }

// spawnSampler starts /bin/true and returns start→response and
// start→closed (metrics #1 and #2).
func spawnSampler(t *Target, tty bool) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		c, err := t.client(ctx)
		if err != nil {
			return nil, fatal(err)
		}
		p, r, err := c.Start(ctx, []string{"/bin/true"}, tty, false)
		if err != nil {
			return nil, err
		}
		if err := p.Wait(ctx, 20*time.Second); err != nil {
			t.cleanup(c, p)
			return nil, err
		}
		t.checkExit(p, 0, "/bin/true")
		return []time.Duration{r.At.Sub(p.Start), p.ClosedAt.Sub(p.Start)}, nil
	}
}

// firstByteSampler starts `echo hi` and returns start→first output (#3).
func firstByteSampler(t *Target) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		c, err := t.client(ctx)
		if err != nil {
			return nil, fatal(err)
		}
		p, _, err := c.Start(ctx, []string{"/bin/echo", "hi"}, false, false)
		if err != nil {
			return nil, err
		}
		if err := p.Wait(ctx, 20*time.Second); err != nil {
			t.cleanup(c, p)
			return nil, err
		}
		t.checkExit(p, 0, "echo hi")
		if p.FirstOutput.IsZero() || p.Bytes != 3 {
			return nil, fmt.Errorf("echo hi: got %d output bytes, want 3", p.Bytes)
		}
		return []time.Duration{p.FirstOutput.Sub(p.Start)}, nil
	}
}

// metadataSampler times fs/getMetadata of the cwd (#10).
func metadataSampler(t *Target) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		c, err := t.client(ctx)
		if err != nil {
			return nil, fatal(err)
		}
		ch, sent, err := c.Send(ctx, wire.MethodFSGetMetadata, map[string]any{"path": "file:///tmp", "sandbox": nil})
		if err != nil {
			return nil, err
		}
		r, err := c.Await(ctx, ch)
		if err != nil {
			return nil, err
		}
		if r.Err != nil {
			return nil, r.Err
		}
		var md struct {
			IsDirectory bool `json:"isDirectory"`
		}
		if err := json.Unmarshal(r.Result, &md); err != nil || !md.IsDirectory {
			return nil, fmt.Errorf("fs/getMetadata /tmp: unexpected result %s", r.Result)
		}
		return []time.Duration{r.At.Sub(sent)}, nil
	}
}
