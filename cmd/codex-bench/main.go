// Command codex-bench drives our exec-server and the reference `codex exec-server`
// side by side with one WebSocket client, measures the metrics of
// docs/benchmarking.md §3 together with the machine's raw floors (docs/benchmarking.md §4), and
// reports both servers, the floors and the ratios ours/reference and
// ours/floor, with pass/fail against the targets of docs/benchmarking.md §6.
//
// Usage:
//
//	go run ./cmd/codex-bench -ours bin/codex -ref /path/to/reference/codex [-quick] [-json out.json] [-md out.md]
//
// Both servers are started as `<bin> exec-server --listen ws://127.0.0.1:0`
// with a clean environment and stopped with SIGTERM at the end (or on ^C).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Config holds the command line and the iteration counts it implies.
type Config struct {
	Ours, Ref     string
	Base          string // optional second build of ours (fairness group)
	Quick         bool
	JSONOut       string
	MDOut         string
	QuickAck      bool
	CR32          bool
	Keep          bool
	Only          string
	Warm          int   // latency warm-ups per subject
	N             int   // measured latency samples per subject
	Rounds        int   // interleaved rounds the N samples are split into
	PipeSize      int64 // #4 bytes per run
	PipeRounds    int
	PTYSize       int64 // #5 bytes per run
	PTYRounds     int
	ConcKs        []int // #6 K values
	ConcRounds    int
	MemK          int           // #7 idle children
	Stall         time.Duration // #8 time without reading
	TailOurs      int           // #9 runs per mode for ours
	TailRef       int           // #9 runs per mode for the reference
	SandWarm      int           // #11 warm-ups per subject
	SandN         int           // #11 measured samples per subject
	FairKs        []int         // fairness: streams on one connection
	FairSize      int64         // fairness: bytes per stream
	FairRounds    int
	TeardownN     int         // teardown: processes terminated at once
	TeardownNoRef bool        // teardown: leave the reference out (it stalls near 1,800 live processes)
	TeardownPerf  string      // teardown: a `perf record --control fifo:` FIFO, enabled around each terminate-all
	Scale         ScaleConfig // scale group (scale.go)

	PTYPairedRounds int   // ptypaired: rounds
	PTYPairedSize   int64 // ptypaired: bytes per run

	MCPBash, MCPRefServer, MCPRefWrapper, MCPSandboxExe string // mcp group (#M1, #M2)
}

// Mode describes the iteration counts in one line.
func (c Config) Mode() string {
	m := "full"
	if c.Quick {
		m = "quick"
	}
	return fmt.Sprintf("%s: latency %d warm-ups + N=%d in %d rounds; sandboxed %d warm-ups + N=%d; pipe %d MiB × %d; PTY %d MiB × %d; concurrency K=%v × %d rounds; memory K=%d; stall %v; tail %d (ours) / %d (ref) runs per mode",
		m, c.Warm, c.N, c.Rounds, c.SandWarm, c.SandN, c.PipeSize>>20, c.PipeRounds, c.PTYSize>>20, c.PTYRounds, c.ConcKs, c.ConcRounds, c.MemK, c.Stall, c.TailOurs, c.TailRef)
}

func parseFlags() Config {
	var c Config
	var n, rounds, tailRef int
	var ks string
	flag.StringVar(&c.Ours, "ours", "", "our codex binary (required)")
	flag.StringVar(&c.Ref, "ref", "", "reference codex 0.169.0 binary (required)")
	flag.StringVar(&c.Base, "base", "", "fairness, teardown, ptypaired, floors and scale groups: also run this build of ours (e.g. the branch's base) as \"base\"")
	flag.IntVar(&c.FairRounds, "fair-rounds", 3, "fairness and teardown groups: rounds")
	flag.IntVar(&c.TeardownN, "teardown-n", 200, "teardown group: processes terminated at once (above 1,000 ours gets --max-processes to match)")
	flag.BoolVar(&c.TeardownNoRef, "teardown-no-ref", false, "teardown group: ours and base only")
	flag.StringVar(&c.TeardownPerf, "teardown-perf", "", "teardown group: control FIFO of a `perf record -D -1 --control fifo:FIFO -p PID`: sent enable/disable around each terminate-all, so the profile holds the teardown only")
	flag.IntVar(&c.PTYPairedRounds, "pty-rounds", 15, "ptypaired group: paired rounds")
	flag.Int64Var(&c.PTYPairedSize, "pty-size", 64<<20, "ptypaired group: bytes per run")
	flag.BoolVar(&c.Quick, "quick", false, "fewer iterations (a full run of both servers in a few minutes)")
	flag.StringVar(&c.JSONOut, "json", "", "write the full results (with raw samples) to this JSON file")
	flag.StringVar(&c.MDOut, "md", "", "write a Markdown section for docs/BENCHMARKS.md to this file")
	flag.BoolVar(&c.QuickAck, "quickack", true, "set TCP_QUICKACK after every socket read")
	flag.BoolVar(&c.CR32, "cr32", true, "also run the concurrency metric on the reference with --concurrent-requests 32")
	flag.BoolVar(&c.Keep, "keep", false, "keep the scratch directory (server stderr logs, CODEX_HOME)")
	flag.StringVar(&c.Only, "only", "", "comma-separated metric groups: memory,latency,sandbox,execrun,cmdexec,http,throughput,clientthroughput,concurrency,tail,slow,robust,walk,handles,proxy,mcp,fairness,teardown,ptypaired,floors,scale (default all)")
	flag.StringVar(&c.MCPBash, "mcp-bash", "", "mcp group: the patched Bash (scripts/patched-bash.sh)")
	flag.StringVar(&c.MCPRefServer, "mcp-ref-server", "", "mcp group: the 0.97.0 codex-exec-mcp-server")
	flag.StringVar(&c.MCPRefWrapper, "mcp-ref-wrapper", "", "mcp group: the 0.97.0 codex-execve-wrapper")
	flag.StringVar(&c.MCPSandboxExe, "mcp-sandbox-exe", "", "mcp group: codex 0.97.0 linked as codex-linux-sandbox (the reference's helper)")
	flag.IntVar(&n, "n", 0, "override the measured latency samples per subject")
	flag.IntVar(&rounds, "rounds", 0, "override the number of interleaved latency rounds")
	flag.IntVar(&tailRef, "tail-ref", 0, "override the tail-completeness runs for the reference")
	flag.StringVar(&ks, "k", "", "override the concurrency K values (comma-separated)")
	scaleSandboxed := flag.Bool("scale-sandboxed", false, "scale group: the N live processes run under workspace-write, as the real Codex CLI starts commands (the peer check then knows N sandboxes)")
	scaleFull := flag.Bool("scale-full", false, "scale group: the full counts (N up to 4,000 live processes with W=250, C up to 300 connections, K up to 50 streams of 64 MiB, 3 rounds)")
	scaleN := flag.String("scale-n", "", "scale group: live-process counts N (comma-separated; default 10,200,1000)")
	scaleC := flag.String("scale-c", "", "scale group: idle-connection counts C (default 1,100,300)")
	scaleK := flag.String("scale-k", "", "scale group: stream counts K on one connection (default 1,10,50)")
	scaleSize := flag.Int64("scale-size", 0, "scale group: MiB per stream (default 16)")
	scaleRounds := flag.Int("scale-rounds", 0, "scale group: rounds (default 2)")
	scaleW := flag.Int("scale-w", 0, "scale group: ramp starts timed at each end of a ramp to N, at most N/4 (default 100)")
	flag.Parse()
	if c.Ours == "" || c.Ref == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: bench -ours BIN -ref BIN [-quick] [-json FILE] [-md FILE]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	for _, p := range []*string{&c.Ours, &c.Ref} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
	c.Warm, c.N, c.Rounds = 10, 100, 5
	c.PipeSize, c.PipeRounds = 256<<20, 5
	c.PTYSize, c.PTYRounds = 256<<20, 3
	c.ConcKs, c.ConcRounds = []int{50, 100}, 3
	c.MemK, c.Stall = 100, 8*time.Second
	c.TailOurs, c.TailRef = 100, 100
	c.SandWarm, c.SandN = 10, 50
	c.FairKs, c.FairSize = []int{10, 50}, 64<<20
	if c.Quick {
		c.SandWarm, c.SandN = 3, 20
		c.N, c.Rounds = 30, 3
		c.PipeRounds = 3
		c.PTYSize, c.PTYRounds = 128<<20, 2
		c.ConcRounds = 2
		c.TailRef = 40
	}
	if n > 0 {
		c.N = n
	}
	if rounds > 0 {
		c.Rounds = rounds
	}
	if tailRef > 0 {
		c.TailRef = tailRef
	}
	if ks != "" {
		c.ConcKs = nil
		for _, f := range strings.Split(ks, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k <= 0 {
				fmt.Fprintf(os.Stderr, "bad -k value %q\n", f)
				os.Exit(2)
			}
			c.ConcKs = append(c.ConcKs, k)
		}
	}
	c.Rounds = max(1, min(c.Rounds, c.N))
	c.Scale = scaleDefaults(*scaleFull)
	if c.Quick && !*scaleFull {
		c.Scale.Ns, c.Scale.Rounds = []int{10, 500}, 1
	}
	for _, l := range []struct {
		flag, s string
		dst     *[]int
	}{{"-scale-n", *scaleN, &c.Scale.Ns}, {"-scale-c", *scaleC, &c.Scale.Cs}, {"-scale-k", *scaleK, &c.Scale.Ks}} {
		if l.s == "" {
			continue
		}
		v, err := parseCounts(l.s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", l.flag, err)
			os.Exit(2)
		}
		*l.dst = v
	}
	if *scaleSize > 0 {
		c.Scale.Size = *scaleSize << 20
	}
	if *scaleW > 0 {
		c.Scale.W = *scaleW
	}
	if *scaleRounds > 0 {
		c.Scale.Rounds = *scaleRounds
	}
	c.Scale.Sandboxed = *scaleSandboxed
	return c
}

func main() {
	// Hidden modes of the proxy group (proxybed.go, proxyclient.go): the
	// network test bed, and the client that runs inside a sandbox.
	if os.Getenv(netBedEnv) != "" {
		os.Exit(netBedMain())
	}
	if len(os.Args) > 1 && os.Args[1] == netClientCommand {
		os.Exit(netClientMain(os.Args[2:], os.Getenv, os.Stdout, os.Stderr))
	}
	cfg := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, cfg)
	stop()
	os.Exit(code)
}

// scratchDir makes a private directory outside /tmp (the reference refuses
// some setup when CODEX_HOME is under /tmp).
func scratchDir() (string, error) {
	base := "/work/scratch"
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(base, "codex-bench-")
}

func run(ctx context.Context, cfg Config) int {
	for _, bin := range []string{cfg.Ours, cfg.Ref} {
		if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "bench: %s is not an executable file\n", bin)
			return 2
		}
	}
	scratch, err := scratchDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if cfg.Keep {
		logf("scratch directory kept: %s", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	b := &Bench{cfg: cfg, scratch: scratch, floors: &Floors{}}
	defer b.stopAll()
	logf("%s", cfg.Mode())
	started := time.Now()
	mach := machine()
	refVersion, oursVersion := binaryVersion(cfg.Ref, scratch), binaryVersion(cfg.Ours, scratch)
	if b.ref, err = b.startTarget(ctx, "ref", "reference", cfg.Ref, nil, nil); err != nil {
		fmt.Fprintln(os.Stderr, "bench: reference:", err)
		return 1
	}
	var oursExtra []string
	if b.wants("teardown") && cfg.TeardownN > 1000 {
		// Our default --max-processes (1,024 per session) would refuse the ramp.
		oursExtra = []string{"--max-processes", strconv.Itoa(cfg.TeardownN + 100)}
	}
	if b.ours, err = b.startTarget(ctx, "ours", "ours", cfg.Ours, oursExtra, nil); err != nil {
		fmt.Fprintln(os.Stderr, "bench: ours:", err)
		return 1
	}
	if cfg.Base != "" && (b.wants("fairness") || b.wants("teardown") || b.wants("ptypaired") || b.wants("floors") || b.wants("scale")) {
		if abs, err := filepath.Abs(cfg.Base); err == nil {
			cfg.Base = abs
		}
		if b.base, err = b.startTarget(ctx, "base", "ours (base build)", cfg.Base, oursExtra, nil); err != nil {
			fmt.Fprintln(os.Stderr, "bench: base:", err)
			return 1
		}
		defer b.stopTarget(b.base)
	}
	b.ref.Res.Version, b.ours.Res.Version = refVersion, oursVersion
	b.ref.Res.Machine, b.ours.Res.Machine = mach, mach
	b.execute(ctx)
	for _, t := range b.targets() {
		if !t.Srv.Running() {
			t.setError("server", fmt.Errorf("the server exited during the run (stderr: %s)", t.Srv.Stderr))
		}
		b.stopTarget(t)
		finishChecks(t)
	}
	interrupted := ctx.Err() != nil
	rep := buildReport(cfg, mach, b, started, interrupted)
	rep.print(os.Stdout)
	code := 0
	if cfg.JSONOut != "" {
		if err := rep.writeJSON(cfg.JSONOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			code = 1
		}
	}
	if cfg.MDOut != "" {
		if err := os.WriteFile(cfg.MDOut, []byte(rep.markdown()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			code = 1
		}
	}
	if interrupted {
		return 130
	}
	return code
}
