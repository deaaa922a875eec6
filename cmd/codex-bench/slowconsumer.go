// The slow-consumer scenario (#8): the client stops reading for a while, the
// server's RSS and the child's state are sampled, then every byte must arrive.

package main

import (
	"context"
	"fmt"
	"time"
)

// slowConsumerRun starts `head -c 1G /dev/zero`, stops reading for stall
// while sampling the server's RSS and the child's state, then resumes and
// checks that exactly 1 GiB arrives (#8).
func slowConsumerRun(ctx context.Context, t *Target, stall time.Duration) (*SlowConsumer, error) {
	const size = 1 << 30
	sc := &SlowConsumer{StallSeconds: stall.Seconds(), Expected: size}
	c, err := t.client(ctx)
	if err != nil {
		return sc, err
	}
	base, err := readProcStatus(t.Srv.Pid)
	if err != nil {
		return sc, err
	}
	sc.BaseRSSKiB = base.RSSKiB
	p, _, err := c.Start(ctx, []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}, false, false)
	if err != nil {
		return sc, err
	}
	c.Pause()
	resumed := false
	defer func() {
		if !resumed {
			c.Resume()
			t.cleanup(c, p)
		}
	}()
	sc.ChildPid = findDescendant(t.Srv.Pid, "head", 3*time.Second)
	sc.ChildNotFound = sc.ChildPid == 0
	t0 := time.Now()
	for i := 1; time.Duration(i)*500*time.Millisecond <= stall; i++ {
		select {
		case <-ctx.Done():
			return sc, ctx.Err()
		case <-time.After(time.Until(t0.Add(time.Duration(i) * 500 * time.Millisecond))):
		}
		sc.sample(time.Since(t0), t.Srv.Pid, base.RSSKiB)
	}
	resumeAt := time.Now()
	c.Resume()
	resumed = true
	if err := p.Wait(ctx, 300*time.Second); err != nil {
		t.cleanup(c, p)
		return sc, err
	}
	sc.DrainSeconds = round3(p.ClosedAt.Sub(resumeAt).Seconds())
	sc.Bytes = p.Bytes
	sc.ExitCodeOK = t.checkExit(p, 0, "head -c 1G")
	// Blocked: the last half of the samples show state S and no progress.
	half := sc.Samples[len(sc.Samples)/2:]
	sc.ChildBlocked = len(half) >= 2
	for _, s := range half {
		if s.ChildState != "S" || s.ChildWchar != half[0].ChildWchar {
			sc.ChildBlocked = false
		}
	}
	sc.Pass = sc.ChildBlocked && sc.MaxGrowthKiB <= 8<<10 && sc.Bytes == size && sc.ExitCodeOK
	return sc, nil
}

// findDescendant looks for a descendant of pid named comm for up to within,
// polling every 20 ms, and returns its pid (the last one found in a scan),
// or 0.
func findDescendant(pid int, comm string, within time.Duration) int {
	found := 0
	deadline := time.Now().Add(within)
	for found == 0 && time.Now().Before(deadline) {
		for _, d := range descendants(pid) {
			if d.Comm == comm {
				found = d.Pid
			}
		}
		if found == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return found
}

// sample appends a sample taken at elapsed: the server's RSS (and the growth
// over baseKiB) and, when the child is known, its state and bytes written.
func (sc *SlowConsumer) sample(elapsed time.Duration, serverPid int, baseKiB int64) {
	s := SlowSample{T: round3(elapsed.Seconds())}
	if st, err := readProcStatus(serverPid); err == nil {
		s.RSSKiB = st.RSSKiB
		sc.MaxGrowthKiB = max(sc.MaxGrowthKiB, st.RSSKiB-baseKiB)
	} else {
		sc.SamplingErrors++
	}
	if sc.ChildPid != 0 {
		if ps, err := readProcStat(sc.ChildPid); err == nil && ps.Comm == "head" {
			s.ChildState = string(ps.State)
		} else {
			s.ChildState = "gone"
		}
		s.ChildWchar, _ = procWchar(sc.ChildPid)
	}
	sc.Samples = append(sc.Samples, s)
}
