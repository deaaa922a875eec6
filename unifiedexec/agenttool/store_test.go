package agenttool

import (
	"strings"
	"testing"
	"time"
)

func ages(exited ...int) []pruneCandidate {
	now := time.Unix(1000, 0)
	var c []pruneCandidate
	for i := 1; i <= 10; i++ {
		// #1 is 40 s old, #10 is 13 s old.
		c = append(c, pruneCandidate{ID: i, LastUsed: now.Add(-time.Duration(40-3*(i-1)) * time.Second)})
	}
	for _, e := range exited {
		c[e-1].Exited = true
	}
	return c
}

func TestPickPrune(t *testing.T) {
	tests := []struct {
		name   string
		exited []int
		want   int
	}{
		{"exited outside the protected set", []int{2}, 2},
		{"no exited entry: LRU", nil, 1},
		{"exited entries are protected", []int{3, 10}, 1},
	}
	for _, tt := range tests {
		if got, ok := pickPrune(ages(tt.exited...)); !ok || got != tt.want {
			t.Errorf("%s: pruned %d (%v), want %d", tt.name, got, ok, tt.want)
		}
	}
	if _, ok := pickPrune(ages()[:8]); ok {
		t.Error("pruned a protected entry")
	}
}

func TestReserveIDs(t *testing.T) {
	s := newProcessStore(true)
	if a, b := s.reserve(), s.reserve(); a != 1000 || b != 1001 {
		t.Fatalf("deterministic ids %d %d", a, b)
	}
	s.release(1001)
	if c := s.reserve(); c != 1001 {
		t.Fatalf("after release: %d", c)
	}
	r := newProcessStore(false)
	for range 100 {
		if id := r.reserve(); id < 1000 || id >= 100000 {
			t.Fatalf("random id %d out of range", id)
		}
	}
	if len(r.reserved) != 100 {
		t.Fatalf("reserved %d, want 100 unique", len(r.reserved))
	}
}

func TestProcessCountWarning(t *testing.T) {
	w := processCountWarning(61)
	if !strings.Contains(w, "is 60 and you currently have 61 processes open") {
		t.Fatalf("warning %q", w)
	}
}
