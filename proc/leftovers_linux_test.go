//go:build linux

package proc_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/codexec/codex/proc"
)

// Not parallel, as the other tree tests (see tree_test.go).

// TestLeftoversKilled: a background job that outlived a normal exit and
// let go of the output is handed over by CloseLeftovers, counted, and
// killed by Kill, which returns once it is dead; in cgroup mode the leaf
// is removed with it. Both modes.
func TestLeftoversKilled(t *testing.T) {
	for _, mode := range treeModes {
		t.Run(mode, func(t *testing.T) {
			tk := newTree(t, mode)
			p, s := start(t, sh("sleep 1000 >/dev/null 2>&1 & echo gc:$!"), proc.Options{Tree: tk})
			gc := grandchildPid(t, s)
			if code := finish(t, p); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			l := p.CloseLeftovers()
			if l == nil || l.Len() != 1 || !alive(gc) {
				t.Fatalf("leftovers %v (len %d), sleep alive %v: want the running sleep", l, l.Len(), alive(gc))
			}
			if n := l.Kill(); n != 1 {
				t.Errorf("Kill killed %d, want 1", n)
			}
			if alive(gc) {
				t.Error("the sleep still runs after Kill returned")
			}
			if l.Len() != 0 || l.Kill() != 0 {
				t.Error("a second Kill found something")
			}
			if leaf := proc.CgroupLeaf(p); leaf != "" {
				if _, err := os.Stat(leaf); !os.IsNotExist(err) {
					t.Errorf("leaf %s still exists after Kill: %v", leaf, err)
				}
			}
			eventuallyGone(t, gc, "killed leftover")
		})
	}
}

// TestLeftoversNone: a process whose tree ended with it leaves nothing:
// CloseLeftovers returns nil (and a nil *Leftovers is safe to use).
func TestLeftoversNone(t *testing.T) {
	for _, mode := range treeModes {
		t.Run(mode, func(t *testing.T) {
			tk := newTree(t, mode)
			p, s := start(t, sh("sleep 0.05 & echo gc:$!; wait"), proc.Options{Tree: tk})
			gc := grandchildPid(t, s)
			finish(t, p)
			if l := p.CloseLeftovers(); l != nil || l.Len() != 0 || l.Kill() != 0 {
				t.Fatalf("leftovers %v of a finished tree", l)
			}
			eventuallyGone(t, gc, "the waited-for sleep")
		})
	}
}

// TestLeftoversSetsidCgroup: in cgroup mode a leftover that called setsid
// (and so left the session and group of the child) is still in the leaf.
func TestLeftoversSetsidCgroup(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid tool")
	}
	tk := newTree(t, "cgroup")
	p, s := start(t, sh("setsid sleep 1000 >/dev/null 2>&1 & echo gc:$!"), proc.Options{Tree: tk})
	gc := grandchildPid(t, s)
	finish(t, p)
	l := p.CloseLeftovers()
	if l.Len() != 1 {
		t.Fatalf("%d leftovers, want the setsid sleep", l.Len())
	}
	if n := l.Kill(); n != 1 || alive(gc) {
		t.Fatalf("Kill killed %d, sleep alive %v", n, alive(gc))
	}
}

// TestTreeSize counts the child and its descendants, in both modes, and
// nothing once the tree was killed.
func TestTreeSize(t *testing.T) {
	for _, mode := range treeModes {
		t.Run(mode, func(t *testing.T) {
			tk := newTree(t, mode)
			p, _ := start(t, sh("sleep 1000 & sleep 1000; true"), proc.Options{Tree: tk})
			deadline := time.Now().Add(waitLimit)
			for p.TreeSize() != 3 {
				if time.Now().After(deadline) {
					t.Fatalf("TreeSize %d, want 3 (sh and two sleeps)", p.TreeSize())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			finish(t, p)
			if l := p.CloseLeftovers(); l != nil {
				t.Errorf("%d leftovers after a kill of the whole tree", l.Len())
			}
			if n := p.TreeSize(); n != 0 {
				t.Errorf("TreeSize %d after the kill, want 0", n)
			}
		})
	}
}
