package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// #M3 compares the interceptors on one shell loop per call: per-exec
// overhead (mcpInterceptLoop × /bin/true) and per-fork overhead
// (mcpInterceptLoop × `( : )`, a subshell that execs nothing), for our
// server in its default ptrace mode, ours in wrapper mode, the 0.97.0
// reference (wrapper), each minus the same loop with no interception:
// the wrapper-mode server after `unset BASH_EXEC_WRAPPER EXEC_WRAPPER`.
// All four run the same patched Bash under the same read-only sandbox,
// so the only difference is the interception.

const mcpInterceptLoop = 500

// interceptSampler returns one sample of (exec loop, fork loop) call
// times on s, each command prefixed by prefix.
func interceptSampler(s *MCPServer, prefix string) sampler {
	execLoop := fmt.Sprintf("%sfor ((i=0;i<%d;i++)); do /bin/true; done; echo done", prefix, mcpInterceptLoop)
	forkLoop := fmt.Sprintf("%sfor ((i=0;i<%d;i++)); do ( : ); done; echo done", prefix, mcpInterceptLoop)
	return func(ctx context.Context) ([]time.Duration, error) {
		if s == nil {
			return nil, fatal(fmt.Errorf("server not started"))
		}
		e, err := s.Shell(ctx, execLoop, "done\n")
		if err != nil {
			return nil, err
		}
		f, err := s.Shell(ctx, forkLoop, "done\n")
		if err != nil {
			return nil, err
		}
		return []time.Duration{e, f}, nil
	}
}

// mcpIntercept is #M3; servers holds #M1's ours-run and ref-run.
func (b *Bench) mcpIntercept(ctx context.Context, res *MCPResult, servers map[string]*MCPServer) {
	c := b.cfg
	argv := []string{c.Ours, "exec-mcp-server", "--bash", c.MCPBash}
	res.Servers["ours-ptrace"] = fmt.Sprint(argv)
	dir := filepath.Join(b.scratch, "mcp-ours-ptrace")
	pt, err := StartMCP(ctx, "ours-ptrace", argv, dir, "", c.MCPBash, "")
	if err != nil {
		res.setError("ours-ptrace", err)
	} else {
		defer pt.Close()
	}
	n, warm, rounds := 6, 1, 3
	if c.Quick {
		n, rounds = 3, 1
	}
	logf("mcp: %d × /bin/true and %d × ( : ) per call, ptrace vs wrapper vs ref vs none (N=%d, %d rounds)",
		mcpInterceptLoop, mcpInterceptLoop, n, rounds)
	s := interleave(ctx, []subject{
		{"ours-ptrace", interceptSampler(pt, "")},
		{"ours-wrapper", interceptSampler(servers["ours-run"], "")},
		{"ref", interceptSampler(servers["ref-run"], "")},
		{"none", interceptSampler(servers["ours-run"], "unset BASH_EXEC_WRAPPER EXEC_WRAPPER; ")},
	}, 2, warm, n, rounds)
	for i, l := range []string{"ours-ptrace", "ours-wrapper", "ref", "none"} {
		if s[i].dead && s[i].lastErr != nil && res.Errors["m3-"+l] == "" {
			res.setError("m3-"+l, s[i].lastErr)
		}
	}
	res.ExecPtrace, res.ExecWrapper, res.ExecRef = overheadVs(s[0], s[3], 0), overheadVs(s[1], s[3], 0), overheadVs(s[2], s[3], 0)
	res.ForkPtrace, res.ForkWrapper, res.ForkRef = overheadVs(s[0], s[3], 1), overheadVs(s[1], s[3], 1), overheadVs(s[2], s[3], 1)
	res.ExecNone, res.ForkNone = perLoop(s[3], 0), perLoop(s[3], 1)
}

// overheadVs is value k of x minus that of base, sample by sample (the
// interleaving takes them in the same rounds), per loop iteration, in ms.
func overheadVs(x, base *series, k int) *Latency {
	diff := func(a, b []float64) []float64 {
		var out []float64
		for i := range min(len(a), len(b)) {
			out = append(out, (a[i]-b[i])/mcpInterceptLoop)
		}
		return out
	}
	l := summarize(diff(x.vals[k], base.vals[k]))
	for r := range min(len(x.rounds), len(base.rounds)) {
		if d := diff(x.rounds[r][k], base.rounds[r][k]); len(d) > 0 {
			l.Rounds = append(l.Rounds, round3(median(d)))
		}
	}
	if x.dead && x.lastErr != nil {
		l.Error = x.lastErr.Error()
	}
	return l
}

// perLoop is value k of s per loop iteration, in ms.
func perLoop(s *series, k int) *Latency {
	var v []float64
	for _, x := range s.vals[k] {
		v = append(v, x/mcpInterceptLoop)
	}
	return summarize(v)
}

// Row names of #M3.
const (
	m3ExecPtrace = "#M3 MCP shell: per-exec overhead p50, ours ptrace (default) vs ref wrapper"
	m3ExecWrap   = "#M3 MCP shell: per-exec overhead p50, ours wrapper vs ref wrapper"
	m3ForkPtrace = "#M3 MCP shell: per-fork overhead p50, ours ptrace vs ref wrapper"
	m3ForkWrap   = "#M3 MCP shell: per-fork overhead p50, ours wrapper vs ref wrapper"
	m3None       = "#M3 MCP shell: no interception, per exec (ours) and per fork (ref column) (informational)"
)

// interceptRows are #M3's rows of the comparison table.
func interceptRows(m *MCPResult) []Row {
	if m == nil || m.ExecNone == nil {
		return nil
	}
	return []Row{
		latRow(m3ExecPtrace, m.ExecPtrace, m.ExecRef, nil),
		latRow(m3ExecWrap, m.ExecWrapper, m.ExecRef, nil),
		latRow(m3ForkPtrace, m.ForkPtrace, m.ForkRef, nil),
		latRow(m3ForkWrap, m.ForkWrapper, m.ForkRef, nil),
		latRow(m3None, m.ExecNone, m.ForkNone, nil),
	}
}

// interceptTargets checks the mcp target of docs/benchmarking.md §6: ours-ptrace per-exec
// overhead ≤ 0.5× the reference's wrapper overhead.
func interceptTargets(rows []Row) []TargetCheck {
	return []TargetCheck{
		ratioTarget(rows, m3ExecPtrace, "MCP shell per-exec overhead, ours ptrace ≤ 0.5× ref wrapper", 0.5, 0, 0, 0),
	}
}
