//go:build linux

package proc_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/codexec/codex/proc"
)

// Starts forced onto the forker behave as ordinary ones, in both tree
// modes: the child inherits no fd but 0, 1 and 2, gets its exit status and
// its terminal; the forker thread's own table holds only /dev/null, the
// server's stderr and the runtime's poller fds; and the thread ends with
// its TreeKiller.
func TestForkerStarts(t *testing.T) {
	for _, mode := range []string{"cgroup", "subreaper"} {
		t.Run(mode, func(t *testing.T) {
			tree, err := proc.NewTreeKiller(nil)
			if mode == "subreaper" {
				tree, err = proc.NewSubreaperTreeKiller(nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tree.Close()
			proc.SetForkerMinFD(tree, 0)
			opts := proc.Options{Tree: tree}

			// The shell lists every fd above 2 it holds, opening none itself.
			p, s := start(t, sh(`for i in $(seq 3 1024); do [ -e /proc/$$/fd/$i ] && echo "fd $i"; done; echo done`), opts)
			if code := finish(t, p); code != 0 || s.String() != "done\n" {
				t.Fatalf("the child inherited more than 0, 1 and 2 (exit %d): %q", code, s)
			}
			tid := proc.ForkerTID(tree)
			if tid == 0 {
				t.Fatal("no forker thread after a forced start")
			}

			p, _ = start(t, helper("exit", "7"), opts)
			if code := finish(t, p); code != 7 {
				t.Fatalf("exit code %d, want 7", code)
			}
			tty := sh("tty")
			tty.TTY = true
			p, s = start(t, tty, opts)
			if code := finish(t, p); code != 0 || !strings.HasPrefix(s.String(), "/dev/pts/") {
				t.Fatalf("tty: exit %d, output %q", code, s)
			}

			stderr, _ := os.Readlink("/proc/self/fd/2")
			task := fmt.Sprintf("/proc/self/task/%d", tid)
			ents, err := os.ReadDir(task + "/fd")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				target, _ := os.Readlink(task + "/fd/" + e.Name())
				switch target {
				case os.DevNull, stderr, "anon_inode:[eventpoll]", "anon_inode:[eventfd]", "anon_inode:[pidfd]":
				default:
					t.Errorf("the forker thread holds fd %s -> %s", e.Name(), target)
				}
			}
			if len(ents) > 7 {
				t.Errorf("the forker thread holds %d fds", len(ents))
			}

			p, _ = start(t, sh("sleep 1000"), opts)
			p.Close()
			if err := tree.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(task); !os.IsNotExist(err) {
				t.Fatalf("the forker thread %d outlives its TreeKiller: %v", tid, err)
			}
			if proc.ForkerTID(tree) != 0 {
				t.Fatal("ForkerTID after Close")
			}
		})
	}
}

// The forker starts only once the server's table is large: a start whose
// fds are numbered below the threshold forks the ordinary way.
func TestForkerOnlyForLargeTables(t *testing.T) {
	tree, err := proc.NewTreeKiller(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	opts := proc.Options{Tree: tree}
	p, _ := start(t, sh("exit 0"), opts)
	finish(t, p)
	if proc.ForkerTID(tree) != 0 {
		t.Fatal("a forker started for a small table")
	}
	var held []*os.File
	defer func() {
		for _, f := range held {
			_ = f.Close()
		}
	}()
	for len(held) < 600 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r, w)
	}
	p, s := start(t, sh("echo ok"), opts)
	if code := finish(t, p); code != 0 || s.String() != "ok\n" {
		t.Fatalf("exit %d, output %q", code, s)
	}
	if proc.ForkerTID(tree) == 0 {
		t.Fatal("no forker for a start with 600 open fds")
	}
}
