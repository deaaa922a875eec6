package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The mcp group (#M1, #M2) compares our MCP `shell` server in its wrapper
// mode with the 0.97.0 reference (`codex-exec-mcp-server` +
// `codex-execve-wrapper` of @openai/codex-shell-tool-mcp), both running the
// same patched Bash under a read-only sandbox.
//
// #M1, per-intercepted-exec overhead: one sample is two `shell` calls on the
// same server, `for ((i=0;i<200;i++)); do /bin/true; done` with the wrapper
// in force and the same loop after `unset BASH_EXEC_WRAPPER EXEC_WRAPPER`
// (the patched Bash then execs directly); overhead per exec = (wrapped −
// bare) / 200, from the client's wall time of each call. Two paths: /bin/true
// matches no rule (the wrapper asks, is told Run, and execs it in the
// sandbox) and, on a second server per side, an allow rule for `true` (the
// server runs it escalated, outside the sandbox, and returns its exit code).
// #M2, wrapper start-up: fork, exec and exit of the wrapper binary given a
// program but no CODEX_ESCALATE_SOCKET, so it stops at its first check;
// the floor is /bin/true.

const mcpLoop = 200

// MCPResult holds the mcp group's measurements.
type MCPResult struct {
	Loop      int               `json:"loop"`
	Servers   map[string]string `json:"servers"` // label → command line
	OursRun   *Latency          `json:"ours_run_overhead_per_exec,omitempty"`
	RefRun    *Latency          `json:"ref_run_overhead_per_exec,omitempty"`
	OursEsc   *Latency          `json:"ours_escalate_overhead_per_exec,omitempty"`
	RefEsc    *Latency          `json:"ref_escalate_overhead_per_exec,omitempty"`
	OursBare  *Latency          `json:"ours_bare_per_exec,omitempty"` // the unwrapped loop, per exec
	RefBare   *Latency          `json:"ref_bare_per_exec,omitempty"`
	OursWrap  *Latency          `json:"ours_wrapper_startup,omitempty"`
	RefWrap   *Latency          `json:"ref_wrapper_startup,omitempty"`
	TrueFloor *Latency          `json:"true_spawn_floor,omitempty"`
	// #M3 (mcp_intercept.go): per-exec and per-fork overhead per
	// interceptor, and the loops without interception.
	ExecPtrace  *Latency          `json:"m3_exec_overhead_ours_ptrace,omitempty"`
	ExecWrapper *Latency          `json:"m3_exec_overhead_ours_wrapper,omitempty"`
	ExecRef     *Latency          `json:"m3_exec_overhead_ref,omitempty"`
	ForkPtrace  *Latency          `json:"m3_fork_overhead_ours_ptrace,omitempty"`
	ForkWrapper *Latency          `json:"m3_fork_overhead_ours_wrapper,omitempty"`
	ForkRef     *Latency          `json:"m3_fork_overhead_ref,omitempty"`
	ExecNone    *Latency          `json:"m3_exec_none,omitempty"`
	ForkNone    *Latency          `json:"m3_fork_none,omitempty"`
	Errors      map[string]string `json:"errors,omitempty"`
}

func (m *MCPResult) setError(k string, err error) {
	if m.Errors == nil {
		m.Errors = map[string]string{}
	}
	m.Errors[k] = err.Error()
	logf("mcp: %s: %v", k, err)
}

// runMCP is the mcp group. Without the patched Bash and the reference paths
// (bench.sh passes them) it records why and measures nothing.
func (b *Bench) runMCP(ctx context.Context) {
	c := b.cfg
	res := &MCPResult{Loop: mcpLoop, Servers: map[string]string{}}
	b.mcp = res
	if c.MCPBash == "" || c.MCPRefServer == "" || c.MCPRefWrapper == "" || c.MCPSandboxExe == "" {
		res.setError("setup", fmt.Errorf("-mcp-bash, -mcp-ref-server, -mcp-ref-wrapper and -mcp-sandbox-exe are needed (scripts/bench.sh passes them)"))
		return
	}
	ours := []string{c.Ours, "exec-mcp-server", "--intercept", "wrapper", "--bash", c.MCPBash}
	ref := []string{c.MCPRefServer, "--execve", c.MCPRefWrapper, "--bash", c.MCPBash}
	const allowTrue = `prefix_rule(pattern=["true"], decision="allow")` + "\n" +
		`prefix_rule(pattern=["touch"], decision="allow")` + "\n"
	servers := map[string]*MCPServer{}
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	for _, sp := range []struct {
		label, rules string
		argv         []string
		exe          string
	}{
		{"ours-run", "", ours, ""}, {"ref-run", "", ref, c.MCPSandboxExe},
		{"ours-esc", allowTrue, ours, ""}, {"ref-esc", allowTrue, ref, c.MCPSandboxExe},
	} {
		res.Servers[sp.label] = strings.Join(sp.argv, " ")
		dir := filepath.Join(b.scratch, "mcp-"+sp.label)
		s, err := StartMCP(ctx, sp.label, sp.argv, dir, sp.rules, c.MCPBash, sp.exe)
		if err == nil && sp.rules != "" {
			err = checkEscalates(ctx, s, dir)
		}
		if err != nil {
			res.setError(sp.label, err)
			if s != nil {
				s.Close()
			}
			continue
		}
		servers[sp.label] = s
	}
	b.mcpOverhead(ctx, res, servers)
	b.mcpIntercept(ctx, res, servers)
	b.mcpWrapperStartup(ctx, res)
}

// checkEscalates makes sure an allow rule escalates on s: an allowed touch
// writes where the read-only sandbox lets nothing write.
func checkEscalates(ctx context.Context, s *MCPServer, dir string) error {
	probe := filepath.Join(dir, "escalation-probe")
	if _, err := s.Shell(ctx, "touch "+probe+"; echo done", "done\n"); err != nil {
		return err
	}
	if _, err := os.Stat(probe); err != nil {
		return fmt.Errorf("an allow rule did not escalate (the rules are not applied?): %w", err)
	}
	return nil
}

// loopSampler returns one sample of (wrapped, bare) call times on s.
func loopSampler(s *MCPServer) sampler {
	loop := fmt.Sprintf("for ((i=0;i<%d;i++)); do /bin/true; done; echo done", mcpLoop)
	return func(ctx context.Context) ([]time.Duration, error) {
		if s == nil {
			return nil, fatal(fmt.Errorf("server not started"))
		}
		w, err := s.Shell(ctx, loop, "done\n")
		if err != nil {
			return nil, err
		}
		bare, err := s.Shell(ctx, "unset BASH_EXEC_WRAPPER EXEC_WRAPPER; "+loop, "done\n")
		if err != nil {
			return nil, err
		}
		return []time.Duration{w, bare}, nil
	}
}

func (b *Bench) mcpOverhead(ctx context.Context, res *MCPResult, servers map[string]*MCPServer) {
	n, warm, rounds := 10, 1, 5
	if b.cfg.Quick {
		n, rounds = 4, 2
	}
	logf("mcp: %d × /bin/true per call, wrapped vs bare, run and escalate paths, ours vs ref (N=%d, %d rounds)", mcpLoop, n, rounds)
	labels := []string{"ours-run", "ref-run", "ours-esc", "ref-esc"}
	subs := make([]subject, len(labels))
	for i, l := range labels {
		subs[i] = subject{l, loopSampler(servers[l])}
	}
	s := interleave(ctx, subs, 2, warm, n, rounds)
	for i, l := range labels {
		if s[i].dead && s[i].lastErr != nil && res.Errors[l] == "" {
			res.setError(l, s[i].lastErr)
		}
	}
	res.OursRun, res.RefRun = overhead(s[0]), overhead(s[1])
	res.OursEsc, res.RefEsc = overhead(s[2]), overhead(s[3])
	res.OursBare, res.RefBare = perExec(s[0], 1), perExec(s[1], 1)
}

// overhead turns (wrapped, bare) samples into per-exec overhead in ms,
// with the per-round medians.
func overhead(s *series) *Latency {
	diff := func(w, b []float64) []float64 {
		var out []float64
		for i := range min(len(w), len(b)) {
			out = append(out, (w[i]-b[i])/mcpLoop)
		}
		return out
	}
	l := summarize(diff(s.vals[0], s.vals[1]))
	for _, r := range s.rounds {
		if d := diff(r[0], r[1]); len(d) > 0 {
			l.Rounds = append(l.Rounds, round3(median(d)))
		}
	}
	if s.dead && s.lastErr != nil {
		l.Error = s.lastErr.Error()
	}
	return l
}

// perExec is value k of s divided by the loop count.
func perExec(s *series, k int) *Latency {
	var v []float64
	for _, x := range s.vals[k] {
		v = append(v, x/mcpLoop)
	}
	return summarize(v)
}

// mcpWrapperStartup is #M2. Our wrapper is our binary under the name
// codex-execve-wrapper (a symlink in the scratch directory).
func (b *Bench) mcpWrapperStartup(ctx context.Context, res *MCPResult) {
	link := filepath.Join(b.scratch, "wrapper-bin", "codex-execve-wrapper")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		res.setError("wrapper", err)
		return
	}
	if err := os.Symlink(b.cfg.Ours, link); err != nil && !os.IsExist(err) {
		res.setError("wrapper", err)
		return
	}
	n, warm, rounds := 200, 10, 5
	if b.cfg.Quick {
		n, rounds = 60, 3
	}
	logf("mcp: wrapper start-up, ours vs ref vs /bin/true (N=%d, %d rounds)", n, rounds)
	start := func(bin string) sampler {
		return timedRun(func(ctx context.Context) error {
			cmd := floorCmd(ctx, bin, "/bin/true", "true")
			t0 := time.Now()
			err := cmd.Run()
			if _, ok := err.(*exec.ExitError); ok && time.Since(t0) < 5*time.Second {
				return nil // exiting with an error at the missing socket is the expected end
			}
			return err
		})
	}
	s := interleave(ctx, []subject{
		{"ours", start(link)}, {"ref", start(b.cfg.MCPRefWrapper)}, {"floor", start("/bin/true")},
	}, 1, warm, n, rounds)
	res.OursWrap, res.RefWrap, res.TrueFloor = s[0].latency(0), s[1].latency(0), s[2].latency(0)
}

// markdown adds the mcp group's set-up line (and errors) to a report.
func (m *MCPResult) markdown(b *strings.Builder) {
	if m == nil {
		return
	}
	fmt.Fprintf(b, "- MCP shell (#M1, #M2): %d × /bin/true per call, read-only sandbox, overhead = (wrapped − wrapper unset) / %d; servers: ours `%s`, reference `%s`\n",
		m.Loop, m.Loop, m.Servers["ours-run"], m.Servers["ref-run"])
	for k, v := range m.Errors {
		fmt.Fprintf(b, "  - error in mcp %s: %s\n", k, v)
	}
}

// mcpRows are the mcp group's rows of the comparison table.
func mcpRows(m *MCPResult) []Row {
	if m == nil {
		return nil
	}
	return append([]Row{
		latRow("#M1 MCP shell: per-intercepted-exec overhead p50, run in sandbox", m.OursRun, m.RefRun, nil),
		latRow("#M1 MCP shell: per-intercepted-exec overhead p50, escalated", m.OursEsc, m.RefEsc, nil),
		latRow("#M1 MCP shell: /bin/true with the wrapper unset, per exec (informational)", m.OursBare, m.RefBare, nil),
		latRow("#M2 execve wrapper start-up p50", m.OursWrap, m.RefWrap, m.TrueFloor),
	}, interceptRows(m)...)
}

// mcpTargets checks the target: ours ≤ 1.0× the reference's
// per-intercepted-exec overhead.
func mcpTargets(rows []Row) []TargetCheck {
	return append([]TargetCheck{
		ratioTarget(rows, "#M1 MCP shell: per-intercepted-exec overhead p50, run in sandbox", "MCP shell per-intercepted-exec overhead (run) ≤ 1.0× ref", 1.0, 0, 0, 0),
		ratioTarget(rows, "#M1 MCP shell: per-intercepted-exec overhead p50, escalated", "MCP shell per-intercepted-exec overhead (escalated) ≤ 1.0× ref", 1.0, 0, 0, 0),
	}, interceptTargets(rows)...)
}
