package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codexec/codex/wire"
)

// The file-handle rows (docs/benchmarking.md §6): 256 MiB read through
// fs/readBlock and written through fs/writeBlock in 1 MiB blocks, one
// request at a time on one connection, as a client streaming a file does.

// HandleStream is one direction of the file-handle rows.
type HandleStream struct {
	SizeMiB int64   `json:"size_mib"`
	Seconds float64 `json:"seconds"`
	MiBps   float64 `json:"mib_per_s"`
	// ServerCPU is the server's user + system CPU time over the run.
	ServerCPU float64 `json:"server_cpu_s"`
	Error     string  `json:"error,omitempty"`
}

// cpuSeconds is the user + system CPU time pid has used.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var u, s float64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &s)
	return (u + s) / 100 // USER_HZ
}

// handleBlock is the block size of the rows: the largest the methods take.
const handleBlock = wire.MaxFileBlock

// runHandles runs both rows on every target.
func (b *Bench) runHandles(ctx context.Context) {
	size := int64(256 << 20)
	if b.cfg.Quick {
		size = 64 << 20
	}
	src := filepath.Join(b.scratch, "handles-src.bin")
	if err := writePattern(src, size); err != nil {
		for _, t := range b.targets() {
			t.setError("handles", err)
		}
		return
	}
	defer os.Remove(src)
	for _, t := range b.targets() {
		logf("fs/readBlock %d MiB: %s", size>>20, t.Role)
		rd, err := handleReadRun(ctx, t, src, size)
		if err != nil {
			rd.Error = err.Error()
			t.setError("handle_read", err)
		}
		t.Res.Metrics.HandleRead = rd
		logf("fs/writeBlock %d MiB: %s", size>>20, t.Role)
		wr, err := handleWriteRun(ctx, t, src, filepath.Join(b.scratch, t.Role+"-handles-dst.bin"), size)
		if err != nil {
			wr.Error = err.Error()
			t.setError("handle_write", err)
		}
		t.Res.Metrics.HandleWrite = wr
	}
}

// handleReadRun reads src through one read handle, block after block, and
// checks the bytes against the file.
func handleReadRun(ctx context.Context, t *Target, src string, size int64) (*HandleStream, error) {
	hs := &HandleStream{SizeMiB: size >> 20}
	c, err := t.dial(ctx)
	if err != nil {
		return hs, err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 300*time.Second)
	defer cancel()
	if _, err := c.Call(cctx, wire.MethodFSOpen, map[string]any{"handleId": "bench-read", "path": "file://" + src}); err != nil {
		return hs, err
	}
	want, got := sha256.New(), sha256.New()
	f, err := os.Open(src)
	if err != nil {
		return hs, err
	}
	defer f.Close()
	if _, err := io.Copy(want, f); err != nil {
		return hs, err
	}
	var n int64
	buf := make([]byte, handleBlock)
	cpu0 := cpuSeconds(t.Srv.Pid)
	start := time.Now()
	for off := int64(0); ; off += handleBlock {
		r, err := c.CallRaw(cctx, wire.MethodFSReadBlock, fmt.Appendf(nil, `{"handleId":"bench-read","offset":%d,"len":%d}`, off, handleBlock))
		if err != nil {
			return hs, err
		}
		// Scanned, not decoded: the rows measure the server.
		m, err := base64.StdEncoding.Decode(buf, stringAfter(r.Result, keyChunk))
		if err != nil {
			return hs, fmt.Errorf("fs/readBlock at %d: %w", off, err)
		}
		got.Write(buf[:m])
		n += int64(m)
		if bytes.Contains(r.Result, []byte(`"eof":true`)) {
			break
		}
	}
	el := time.Since(start)
	hs.ServerCPU = round3(cpuSeconds(t.Srv.Pid) - cpu0)
	_, _ = c.Call(cctx, wire.MethodFSClose, map[string]any{"handleId": "bench-read"})
	if n != size || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		return hs, fmt.Errorf("read %d bytes, want %d, content equal %v", n, size, bytes.Equal(got.Sum(nil), want.Sum(nil)))
	}
	hs.Seconds = round3(el.Seconds())
	hs.MiBps = round3(float64(size>>20) / el.Seconds())
	return hs, nil
}

// handleWriteRun writes src's bytes to dst through one replace handle
// (the requests built before the clock starts) and checks dst.
func handleWriteRun(ctx context.Context, t *Target, src, dst string, size int64) (*HandleStream, error) {
	hs := &HandleStream{SizeMiB: size >> 20}
	data, err := os.ReadFile(src)
	if err != nil {
		return hs, err
	}
	defer os.Remove(dst)
	// The params are built before the clock starts.
	reqs := make([][]byte, 0, len(data)/handleBlock+1)
	for off := 0; off < len(data); off += handleBlock {
		reqs = append(reqs, fmt.Appendf(nil, `{"handleId":"bench-write","offset":%d,"chunk":"%s"}`, off, base64.StdEncoding.EncodeToString(data[off:min(off+handleBlock, len(data))])))
	}
	c, err := t.dial(ctx)
	if err != nil {
		return hs, err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 300*time.Second)
	defer cancel()
	if _, err := c.Call(cctx, wire.MethodFSOpen, map[string]any{"handleId": "bench-write", "path": "file://" + dst, "mode": "replace"}); err != nil {
		return hs, err
	}
	cpu0 := cpuSeconds(t.Srv.Pid)
	start := time.Now()
	for _, req := range reqs {
		if _, err := c.CallRaw(cctx, wire.MethodFSWriteBlock, req); err != nil {
			return hs, err
		}
	}
	el := time.Since(start)
	hs.ServerCPU = round3(cpuSeconds(t.Srv.Pid) - cpu0)
	_, _ = c.Call(cctx, wire.MethodFSClose, map[string]any{"handleId": "bench-write"})
	got, err := os.ReadFile(dst)
	if err != nil {
		return hs, err
	}
	if !bytes.Equal(got, data) {
		return hs, fmt.Errorf("the written file differs (%d bytes, want %d)", len(got), len(data))
	}
	hs.Seconds = round3(el.Seconds())
	hs.MiBps = round3(float64(size>>20) / el.Seconds())
	return hs, nil
}

// handleRows are the report rows of the file-handle metrics.
func handleRows(o, r Metrics) []Row {
	secs := func(h *HandleStream) *float64 {
		if h == nil || h.Error != "" {
			return nil
		}
		return fp(h.Seconds)
	}
	cpu := func(h *HandleStream) *float64 {
		if h == nil || h.Error != "" {
			return nil
		}
		return fp(h.ServerCPU)
	}
	size := int64(256)
	if o.HandleRead != nil {
		size = o.HandleRead.SizeMiB
	}
	return []Row{
		newRow(fmt.Sprintf("H1 %d MiB through fs/readBlock (1 MiB blocks)", size), "s", "lower", secs(o.HandleRead), secs(r.HandleRead), nil, nil, nil, nil),
		newRow(fmt.Sprintf("H2 %d MiB through fs/writeBlock (1 MiB blocks)", size), "s", "lower", secs(o.HandleWrite), secs(r.HandleWrite), nil, nil, nil, nil),
		newRow("H1 server CPU time", "s", "lower", cpu(o.HandleRead), cpu(r.HandleRead), nil, nil, nil, nil),
		newRow("H2 server CPU time", "s", "lower", cpu(o.HandleWrite), cpu(r.HandleWrite), nil, nil, nil, nil),
	}
}

// handleTargets are the targets of the file-handle rows: ≤ 0.5× the
// reference's time.
func handleTargets(rows []Row) []TargetCheck {
	var t []TargetCheck
	for _, row := range rows {
		if (strings.HasPrefix(row.Metric, "H1 ") || strings.HasPrefix(row.Metric, "H2 ")) && row.Unit == "s" && strings.Contains(row.Metric, "MiB") {
			t = append(t, ratioTarget(rows, row.Metric, row.Metric+": ≤ 0.5× the reference's time", 0.5, 0, 0, 0))
		}
	}
	return t
}
