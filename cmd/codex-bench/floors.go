package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Floors are the raw costs of the machine, measured with plain Go in the
// same run as the servers (docs/benchmarking.md §4).
type Floors struct {
	Spawn           *Latency              `json:"exec_spawn_wait_true"`              // os/exec Run of /bin/true
	PTYSpawn        *Latency              `json:"pty_spawn_drain_wait_true"`         // creack/pty start + drain + wait
	FirstByte       *Latency              `json:"exec_first_byte_echo"`              // os/exec start → first stdout byte
	PipeRead        *Throughput           `json:"pipe_read_throughput"`              // 64 KiB reads of a child's stdout
	PTYRead         *Throughput           `json:"pty_read_throughput"`               // 64 KiB reads of a PTY master
	PTYReadSpin     *Throughput           `json:"pty_read_throughput_spin"`          // the same, busy-polling a non-blocking fd (informational)
	Concurrency     map[string]*Durations `json:"concurrency_goroutines"`            // K goroutines × os/exec sleep 0.2
	ConcurrencyKs   []int                 `json:"concurrency_k_values,omitempty"`    // the K values measured
	ExecRunRaw      *Latency              `json:"exec_run_raw_true,omitempty"`       // os/exec Run of /bin/true, interleaved with exec run
	CmdExecTrue     *Latency              `json:"command_exec_raw_true,omitempty"`   // os/exec Run of /bin/true, interleaved with command/exec
	HTTPBody        *Throughput           `json:"http_body,omitempty"`               // net/http GET of the 100 MiB http/request body
	ProxyDirect     *ProxyLatency         `json:"proxy_direct_request,omitempty"`    // the proxy group's client, unsandboxed, direct: new-connection GETs
	ProxyDirectBulk *Throughput           `json:"proxy_direct_bulk,omitempty"`       // the same client's 100 MiB GET, direct
	CmdExecOutput   *Throughput           `json:"command_exec_raw_output,omitempty"` // os/exec of the 64 MiB command, stdout read to the end
}

// floorEnv is the environment of floor children (as for server children).
var floorEnv = []string{"PATH=/usr/bin:/bin"}

func floorCmd(ctx context.Context, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = floorEnv
	cmd.Dir = "/tmp"
	return cmd
}

// floorSpawn times exec.Command("/bin/true").Run().
func floorSpawn(ctx context.Context) ([]time.Duration, error) {
	t0 := time.Now()
	if err := floorCmd(ctx, "/bin/true").Run(); err != nil {
		return nil, err
	}
	return []time.Duration{time.Since(t0)}, nil
}

// floorPTYSpawn times a creack/pty start of /bin/true, draining the master
// until EOF/EIO, then Wait.
func floorPTYSpawn(ctx context.Context) ([]time.Duration, error) {
	t0 := time.Now()
	cmd := floorCmd(ctx, "/bin/true")
	ptmx, err := pty.Start(cmd)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, ptmx) // ends with EIO once the child is gone
	err = cmd.Wait()
	d := time.Since(t0)
	ptmx.Close()
	if err != nil {
		return nil, err
	}
	return []time.Duration{d}, nil
}

// floorFirstByte times os/exec start of `echo hi` until its first stdout byte.
func floorFirstByte(ctx context.Context) ([]time.Duration, error) {
	cmd := floorCmd(ctx, "/bin/echo", "hi")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var b [64]byte
	n, err := out.Read(b[:])
	d := time.Since(t0)
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if n == 0 {
		return nil, fmt.Errorf("no output: %v", err)
	}
	if werr != nil {
		return nil, werr
	}
	return []time.Duration{d}, nil
}

// drain64k reads r with 64 KiB reads until EOF or EIO and returns the count.
func drain64k(r io.Reader) int64 {
	buf := make([]byte, 64<<10)
	var total int64
	for {
		n, err := r.Read(buf)
		total += int64(n)
		if err != nil {
			return total
		}
	}
}

// floorPipeRead measures Go reading `head -c SIZE /dev/zero` from a pipe.
func floorPipeRead(ctx context.Context, size int64) (ThroughputRun, error) {
	cmd := floorCmd(ctx, "head", "-c", strconv.FormatInt(size, 10), "/dev/zero")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return ThroughputRun{}, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return ThroughputRun{}, err
	}
	n := drain64k(out)
	err = cmd.Wait()
	return newRun(n, time.Since(t0), 0, n == size && err == nil), err
}

// floorPTYRead measures Go reading the same through a PTY master.
func floorPTYRead(ctx context.Context, size int64) (ThroughputRun, error) {
	cmd := floorCmd(ctx, "head", "-c", strconv.FormatInt(size, 10), "/dev/zero")
	t0 := time.Now()
	ptmx, err := pty.Start(cmd)
	if err != nil {
		return ThroughputRun{}, err
	}
	n := drain64k(ptmx)
	err = cmd.Wait()
	d := time.Since(t0)
	ptmx.Close()
	return newRun(n, d, 0, n == size && err == nil), err
}

// floorPTYReadSpin is floorPTYRead with a busy-polling reader: it never
// sleeps, so it shows what the PTY allows without the reader's wake-up
// latency (large on a VM). Informational; it burns a CPU while it runs.
func floorPTYReadSpin(ctx context.Context, size int64) (ThroughputRun, error) {
	return floorPTYReadRaw(ctx, size, true)
}

// floorPTYReadBlocking is floorPTYRead with the master in blocking mode,
// so every read blocks its OS thread in read(2) instead of parking in the
// netpoller.
func floorPTYReadBlocking(ctx context.Context, size int64) (ThroughputRun, error) {
	return floorPTYReadRaw(ctx, size, false)
}

// floorPTYReadRaw reads the master with read(2) on the calling thread:
// busy-polling a non-blocking fd with spin, blocking in read(2) without.
func floorPTYReadRaw(ctx context.Context, size int64, spin bool) (ThroughputRun, error) {
	cmd := floorCmd(ctx, "head", "-c", strconv.FormatInt(size, 10), "/dev/zero")
	t0 := time.Now()
	ptmx, err := pty.Start(cmd)
	if err != nil {
		return ThroughputRun{}, err
	}
	fd := int(ptmx.Fd()) // Fd switches the file to blocking mode
	if spin {
		if err := unix.SetNonblock(fd, true); err != nil {
			ptmx.Close()
			_ = cmd.Wait()
			return ThroughputRun{}, err
		}
	}
	buf := make([]byte, 64<<10)
	var n int64
	for ctx.Err() == nil {
		k, err := unix.Read(fd, buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if k <= 0 || err != nil {
			break
		}
		n += int64(k)
	}
	err = cmd.Wait()
	d := time.Since(t0)
	ptmx.Close()
	return newRun(n, d, 0, n == size && err == nil), err
}

// floorConcurrency runs k goroutines, each os/exec `sleep 0.2`, and times
// until all have finished.
func floorConcurrency(ctx context.Context, k int) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, k)
	t0 := time.Now()
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := floorCmd(ctx, "/bin/sleep", "0.2").Run(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	d := time.Since(t0)
	close(errs)
	var all []error
	for e := range errs {
		all = append(all, e)
	}
	return d, errors.Join(all...)
}
