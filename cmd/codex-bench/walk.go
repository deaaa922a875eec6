package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/codexec/codex/wire"
)

// The fs/walk group (#16): a tree of 100,000 entries walked through the
// protocol. One answer holds at most 4 MiB by the reference's count
// (wire.WalkResultBudget: about 29,000 entries of 80-character URIs), so
// the tree is five parts of exactly 20,000 entries (20 folders of 999
// files each) and a sample is the five calls in turn, the way a client
// lists the whole tree.
const (
	walkParts        = 5
	walkDirsPerPart  = 20
	walkFilesPerDir  = 999
	walkEntriesTotal = walkParts * walkDirsPerPart * (walkFilesPerDir + 1)
)

// buildWalkTree makes the tree under dir and returns the parts' roots.
func buildWalkTree(dir string) ([]string, error) {
	var roots []string
	for h := range walkParts {
		root := filepath.Join(dir, fmt.Sprintf("part%d", h))
		roots = append(roots, root)
		for d := range walkDirsPerPart {
			sub := filepath.Join(root, fmt.Sprintf("dir%02d", d))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return nil, err
			}
			for f := range walkFilesPerDir {
				fd, err := os.OpenFile(filepath.Join(sub, fmt.Sprintf("file%03d.txt", f)), os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return nil, err
				}
				fd.Close()
			}
		}
	}
	return roots, nil
}

// walkSampler times fs/walk of every part, in one connection, and checks
// that each answer lists its 20,000 entries without truncation or errors.
func walkSampler(t *Target, roots []string) sampler {
	return func(ctx context.Context) ([]time.Duration, error) {
		c, err := t.client(ctx)
		if err != nil {
			return nil, fatal(err)
		}
		start := time.Now()
		var last time.Time
		for _, root := range roots {
			ch, _, err := c.Send(ctx, wire.MethodFSWalk, map[string]any{"path": wire.FileURI(root), "sandbox": nil,
				"options": map[string]any{"maxDepth": wire.WalkMaxDepth, "maxDirectories": wire.WalkMaxDirectories,
					"maxEntries": wire.WalkMaxEntries, "followDirectorySymlinks": false}})
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
			// Counted, not decoded: the client must not be the slow part.
			n := bytes.Count(r.Result, []byte(`"kind":`))
			want := walkEntriesTotal / walkParts
			if n != want || !bytes.Contains(r.Result, []byte(`"truncated":false`)) || !bytes.Contains(r.Result, []byte(`"errors":[]`)) {
				return nil, fmt.Errorf("fs/walk %s: %d entries (want %d), %d bytes: %.200s", root, n, want, len(r.Result), r.Result)
			}
			last = r.At
		}
		return []time.Duration{last.Sub(start)}, nil
	}
}

// runWalk is #16, interleaved.
func (b *Bench) runWalk(ctx context.Context) {
	roots, err := buildWalkTree(filepath.Join(b.scratch, "walk-tree"))
	if err != nil {
		for _, t := range b.targets() {
			t.setError("fs_walk", err)
		}
		return
	}
	warm, n, rounds := 3, 30, 3
	if b.cfg.Quick {
		n = 12
	}
	logf("fs/walk: %d entries in %d calls (N=%d, %d rounds)", walkEntriesTotal, walkParts, n, rounds)
	s := interleave(ctx, []subject{
		{"ref", walkSampler(b.ref, roots)},
		{"ours", walkSampler(b.ours, roots)},
	}, 1, warm, n, rounds)
	recordErrors("fs_walk", false, b.targets(), s)
	b.ref.Res.Metrics.Walk, b.ours.Res.Metrics.Walk = s[0].latency(0), s[1].latency(0)
}
