package agenttool_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec/agenttool"
)

func ptr[T any](v T) *T { return &v }

func TestToolOutputTextGolden(t *testing.T) {
	exited := &agenttool.ExecCommandOutput{
		ChunkID: "7acbf0", RawOutput: []byte("to-stdout\nto-stderr"),
		MaxOutputTokens: 10000, ExitCode: ptr(7), OriginalTokenCount: 5,
	}
	want := "Chunk ID: 7acbf0\nWall time: 0.0000 seconds\nProcess exited with code 7\nOriginal token count: 5\nOutput:\nto-stdout\nto-stderr"
	if got := exited.Text(); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	running := &agenttool.ExecCommandOutput{
		ChunkID: "d0f1c0", WallTime: 500800 * time.Microsecond,
		MaxOutputTokens: 10000, SessionID: ptr(13942),
	}
	want = "Chunk ID: d0f1c0\nWall time: 0.5008 seconds\nProcess running with session ID 13942\nOriginal token count: 0\nOutput:\n"
	if got := running.Text(); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	noChunk := &agenttool.ExecCommandOutput{MaxOutputTokens: 10}
	if got := noChunk.Text(); strings.Contains(got, "Chunk ID") {
		t.Fatalf("empty chunk id rendered: %q", got)
	}
}

func TestToolOutputLargeTruncation(t *testing.T) {
	raw := strings.Repeat("token token \n", 1000)
	o := &agenttool.ExecCommandOutput{RawOutput: []byte(raw), MaxOutputTokens: 100}
	re := regexp.MustCompile(`(?s)^Total output lines: \d+\n\n(token token \n){5,}.*…\d+ tokens truncated….*(token token \n){5,}$`)
	if got := o.TruncatedOutput(); !re.MatchString(got) {
		t.Fatalf("no match: %q", got)
	}
}
