//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSmallestLimit: the walk takes the smallest limit from the cgroup up
// to the mount, whatever the level; "max", a missing file and anything
// above the mount set nothing.
func TestSmallestLimit(t *testing.T) {
	root := t.TempDir()
	mnt := filepath.Join(root, "mnt")
	leaf := filepath.Join(mnt, "a", "b", "c")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(dir, v string) {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ram := MemoryCeiling{Bytes: 16 << 30, Source: "physical memory"}
	if got := smallestLimit(mnt, leaf, "memory.max", ram); got != ram {
		t.Errorf("no files: %+v", got)
	}
	write(root, "1024") // above the mount: not ours to read
	write(leaf, "max")  // no limit
	write(filepath.Join(mnt, "a"), "2147483648")
	write(filepath.Join(mnt, "a", "b"), "4294967296")
	want := MemoryCeiling{Bytes: 2 << 30, Source: filepath.Join(mnt, "a", "memory.max")}
	if got := smallestLimit(mnt, leaf, "memory.max", ram); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	write(mnt, "68719476736") // larger than RAM: RAM stays
	if got := smallestLimit(mnt, mnt, "memory.max", ram); got != ram {
		t.Errorf("a limit above RAM: %+v", got)
	}
}

// TestMemoryLimitHere: on this host the ceiling is positive, never above
// physical memory, and names its source.
func TestMemoryLimitHere(t *testing.T) {
	ram, err := PhysicalMemory()
	if err != nil {
		t.Fatal(err)
	}
	got, err := MemoryLimit()
	if err != nil || got.Bytes <= 0 || got.Bytes > ram || got.Source == "" {
		t.Fatalf("MemoryLimit() = %+v, %v (RAM %d)", got, err, ram)
	}
	t.Logf("memory ceiling %d bytes from %s", got.Bytes, got.Source)
}
