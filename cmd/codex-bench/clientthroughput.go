package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"
)

// ClientRate is the client side of a large output (docs/benchmarking.md §6): our
// `codex exec run -- head -c SIZE /dev/zero`, read to the end like `| wc
// -c`, over its private in-process server and over --server (WebSocket to our
// bench server), against our server's own pipe throughput (#4, measured by
// the bench client, which only counts the base64) of the same size in the
// same rounds. The target: each client at least half the server's.
type ClientRate struct {
	Server *Throughput `json:"server_pipe"`
	Stdio  *Throughput `json:"exec_run_stdio"`
	WS     *Throughput `json:"exec_run_websocket"`
}

// clientThroughputSize is the output of each run: 512 MiB, as in the issue.
const clientThroughputSize = 512 << 20

// runClientThroughput measures ClientRate on our server, the three
// subjects interleaved round by round.
func (b *Bench) runClientThroughput(ctx context.Context) {
	size, rounds := int64(clientThroughputSize), b.cfg.PipeRounds
	cmd := fmt.Sprintf("head -c %d /dev/zero", size)
	ct := &ClientRate{
		Server: &Throughput{Command: "sh -c '" + cmd + "'", Size: size},
		Stdio:  &Throughput{Command: "codex exec run -- " + cmd + " | wc -c", Size: size},
		WS:     &Throughput{Command: "codex exec run --server URL -- " + cmd + " | wc -c", Size: size},
	}
	t := b.ours
	bin := t.Res.Binary
	logf("clientthroughput: %d MiB × %d rounds (server, exec run stdio, exec run --server)", size>>20, rounds)
	for r := range rounds {
		for _, i := range order(3, r) {
			if ctx.Err() != nil {
				break
			}
			var run ThroughputRun
			var err error
			switch i {
			case 0:
				run, _, err = throughputRun(ctx, t, false, size)
			case 1:
				run, err = execRunThroughput(ctx, bin, "", size)
			default:
				run, err = execRunThroughput(ctx, bin, t.Srv.URL, size)
			}
			if err != nil {
				run.FirstError = err.Error()
				t.setError("client_throughput", err)
			}
			[]*Throughput{ct.Server, ct.Stdio, ct.WS}[i].add(run)
		}
	}
	t.Res.Metrics.ClientThroughput = ct
}

// execRunThroughput runs `BIN exec run [--server URL] -- head -c SIZE
// /dev/zero` and counts its stdout to the end; the time is from the start
// of the client to its exit.
func execRunThroughput(ctx context.Context, bin, url string, size int64) (ThroughputRun, error) {
	args := []string{"exec", "run"}
	if url != "" {
		args = append(args, "--server", url)
	}
	args = append(args, "--", "head", "-c", strconv.FormatInt(size, 10), "/dev/zero")
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second+time.Duration(size/(1<<20))*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return ThroughputRun{}, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return ThroughputRun{}, err
	}
	n, cerr := countAll(out)
	werr := cmd.Wait()
	d := time.Since(t0)
	if cerr != nil {
		return ThroughputRun{}, cerr
	}
	if werr != nil {
		return ThroughputRun{}, fmt.Errorf("codex exec run: %w", werr)
	}
	run := newRun(n, d, 0, n == size)
	if n != size {
		run.FirstError = fmt.Sprintf("received %d bytes, want %d", n, size)
	}
	return run, nil
}

// countAll reads r to the end in 256 KiB reads (as `wc -c` would, and
// unlike io.Copy to io.Discard, which reads 8 KiB at a time) and returns
// the byte count.
func countAll(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// clientRows are the report rows of ClientRate: each client against
// the server's pipe throughput as its floor.
func clientRows(o Metrics) []Row {
	ct := o.ClientThroughput
	if ct == nil {
		ct = &ClientRate{}
	}
	return []Row{
		tpRow("#13 client throughput, codex exec run -- head -c 512M (private server)", ct.Stdio, nil, ct.Server),
		tpRow("#13 client throughput, codex exec run --server -- head -c 512M (WebSocket)", ct.WS, nil, ct.Server),
	}
}

// clientTargets checks the target of docs/benchmarking.md §6: each client within 2× of the server.
func clientTargets(rows []Row) []TargetCheck {
	return []TargetCheck{
		ratioTarget(rows, "#13 client throughput, codex exec run -- head -c 512M (private server)", "codex exec run (stdio) output throughput ≥ 0.5× the server's pipe throughput", 0, 0, 0, 0.5),
		ratioTarget(rows, "#13 client throughput, codex exec run --server -- head -c 512M (WebSocket)", "codex exec run --server output throughput ≥ 0.5× the server's pipe throughput", 0, 0, 0, 0.5),
	}
}
