// The floors group (issue 22 item 6): the four floors of ours, the base
// build of ours (-base) and the reference in one run, side by side.

package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// runFloors measures, interleaved in rounds with their floors: start →
// closed of /bin/true (pipes) and start → first byte of `echo hi` against
// os/exec; `codex exec run -- /bin/true` of ours (and base) against a raw
// os/exec spawn, in wall time and in CPU time of the process tree; and the
// server's RSS per idle child (pipes and PTY), each on a fresh server per
// side. It logs one table with the ratios (the median of the per-round
// ratios for the latencies) and the load average.
func (b *Bench) runFloors(ctx context.Context) {
	c := b.cfg
	ts := b.targets()
	if b.base != nil {
		ts = append(ts, b.base)
	}
	load0 := readTrim("/proc/loadavg")
	logf("floors: start→closed, first byte (N=%d, %d rounds), exec run (N=%d), idle RSS (K=%d); load %s", c.N, c.Rounds, c.SandN, c.MemK, load0)

	var subs []subject
	for _, t := range ts {
		subs = append(subs, subject{t.Role, spawnSampler(t, false)})
	}
	subs = append(subs, subject{"floor", floorSpawn})
	closed := interleave(ctx, subs, 2, c.Warm, c.N, c.Rounds)
	recordErrors("floors_closed", false, ts, closed)

	subs = nil
	for _, t := range ts {
		subs = append(subs, subject{t.Role, firstByteSampler(t)})
	}
	subs = append(subs, subject{"floor", floorFirstByte})
	first := interleave(ctx, subs, 1, c.Warm, c.N, c.Rounds)
	recordErrors("floors_first_byte", false, ts, first)

	var ours []*Target // the builds of ours: exec run has no reference
	for _, t := range ts {
		if t != b.ref {
			ours = append(ours, t)
		}
	}
	subs = nil
	for _, t := range ours {
		subs = append(subs, subject{t.Role, timedTreeRun(t.Res.Binary, "exec", "run", "--", "/bin/true")})
	}
	subs = append(subs, subject{"floor", timedTreeRun("/bin/true")})
	execRun := interleave(ctx, subs, 2, c.SandWarm, c.SandN, max(1, min(c.Rounds, c.SandN)))
	recordErrors("floors_exec_run", false, ours, execRun)

	mem := map[*Target][2]*Memory{}
	for _, tty := range []bool{false, true} {
		for _, t := range ts {
			if ctx.Err() != nil {
				return
			}
			m, err := b.memoryFresh(ctx, t, tty)
			if err != nil {
				t.setError(fmt.Sprintf("floors_memory_tty_%v", tty), err)
			}
			pair := mem[t]
			pair[map[bool]int{false: 0, true: 1}[tty]] = m
			mem[t] = pair
		}
	}

	// The table.
	fl := len(ts) // the floor's index in the latency series
	row := func(name string, s []*series, k, i, floor int) string {
		l, f := s[i].latency(k), s[floor].latency(0)
		r := roundRatio(l.Rounds, f.Rounds)
		rs := "–"
		if r != nil {
			rs = fmt.Sprintf("%.2f×", *r)
		}
		return fmt.Sprintf("%-7s %-22s p50 %7.2f ms (min %6.2f)  floor p50 %6.2f ms  ratio %s  rounds %v / %v", s2role(ts, i), name, l.P50, l.Min, f.P50, rs, l.Rounds, f.Rounds)
	}
	var lines []string
	for i := range ts {
		lines = append(lines, row("start→closed", closed, 1, i, fl))
	}
	for i := range ts {
		lines = append(lines, row("first byte", first, 0, i, fl))
	}
	for i, t := range ours {
		l, f := execRun[i].latency(0), execRun[len(ours)].latency(0)
		r := roundRatio(l.Rounds, f.Rounds)
		rs := "–"
		if r != nil {
			rs = fmt.Sprintf("%.2f×", *r)
		}
		lc, fc := execRun[i].latency(1), execRun[len(ours)].latency(1)
		cs := "–"
		if r := roundRatio(lc.Rounds, fc.Rounds); r != nil {
			cs = fmt.Sprintf("%.2f×", *r)
		}
		lines = append(lines, fmt.Sprintf("%-7s %-22s p50 %7.2f ms (min %6.2f)  raw spawn p50 %6.2f ms  ratio %s  rounds %v / %v", t.Role, "exec run -- /bin/true", l.P50, l.Min, f.P50, rs, l.Rounds, f.Rounds))
		lines = append(lines, fmt.Sprintf("%-7s %-22s p50 %7.2f ms CPU (min %6.2f)  raw spawn p50 %6.2f ms CPU  ratio %s  (user+system of the whole tree)", t.Role, "exec run -- /bin/true", lc.P50, lc.Min, fc.P50, cs))
	}
	refMem := mem[b.ref]
	for k, mode := range []string{"pipes", "PTY"} {
		for _, t := range ts {
			m := mem[t][k]
			if m == nil {
				continue
			}
			rs := "–"
			if rm := refMem[k]; rm != nil && rm.KiBPerChild > 0 {
				rs = fmt.Sprintf("%.2f× ref", m.KiBPerChild/rm.KiBPerChild)
			}
			lines = append(lines, fmt.Sprintf("%-7s idle RSS per child, %-5s %6.1f KiB  %s  (fds %.1f, threads %.2f per child)", t.Role, mode, m.KiBPerChild, rs, m.FDsPerChild, m.ThreadsPerChild))
		}
	}
	lines = append(lines, fmt.Sprintf("load average: %s at the start, %s at the end", load0, readTrim("/proc/loadavg")))
	logf("floors:\n  %s", strings.Join(lines, "\n  "))
}

// timedTreeRun samples the wall time of running argv and the CPU time
// (user + system) of its whole process tree: the rusage of a reaped child
// includes that of the descendants it reaped (for exec run: the
// watchdog of its private server), which is steadier than wall time on a shared
// machine.
func timedTreeRun(argv ...string) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		wall := time.Since(t0)
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return []time.Duration{wall, cpu}, nil
	}
}

// s2role names the i-th subject of ts.
func s2role(ts []*Target, i int) string {
	if i < len(ts) {
		return ts[i].Role
	}
	return "floor"
}
