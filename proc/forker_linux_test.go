//go:build linux

package proc_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
			newTree := proc.NewTreeKiller
			if mode == "subreaper" {
				newTree = proc.NewSubreaperTreeKiller
			}
			tree, err := newTree(nil)
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
			for _, e := range ents {
				if e.Name() == "0" || e.Name() == "1" || e.Name() == "2" {
					continue
				}
				info, _ := os.ReadFile(task + "/fdinfo/" + e.Name())
				var flags string
				for _, line := range strings.Split(string(info), "\n") {
					if v, ok := strings.CutPrefix(line, "flags:"); ok {
						flags = strings.TrimSpace(v)
					}
				}
				fl, err := strconv.ParseUint(flags, 8, 64)
				if err != nil || fl&syscall.O_CLOEXEC == 0 {
					t.Errorf("the forker thread's fd %s is not close-on-exec (flags %q)", e.Name(), flags)
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
			// Close returns once the forker's goroutine has ended; the
			// runtime then takes its thread down.
			for deadline := time.Now().Add(waitLimit); ; time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(task); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the forker thread %d outlives its TreeKiller by %v", tid, waitLimit)
				}
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
	holdFDs(t, 600)
	p, s := start(t, sh("echo ok"), opts)
	if code := finish(t, p); code != 0 || s.String() != "ok\n" {
		t.Fatalf("exit %d, output %q", code, s)
	}
	if proc.ForkerTID(tree) == 0 {
		t.Fatal("no forker for a start with 600 open fds")
	}
}

// A busy forker (a start whose exec hangs on a stuck mount, say) does not
// hold up other starts: they fork the ordinary way meanwhile.
func TestForkerBusyDoesNotBlock(t *testing.T) {
	tree, err := proc.NewTreeKiller(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	proc.SetForkerMinFD(tree, 0)
	release, err := proc.HoldForker(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	started := make(chan error, 1)
	go func() {
		p, err := proc.Start(sh("exit 3"), nil, proc.Options{Tree: tree})
		if err == nil {
			<-p.Exited()
			<-p.OutputDone()
			if code := p.ExitCode(); code != 3 {
				err = fmt.Errorf("exit code %d, want 3", code)
			}
			p.Close()
		}
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		release()
		<-started
		t.Fatal("a start waited for the busy forker")
	}
}

// holdFDs opens n extra fds in the test process (ends of pipes, each its
// own open file, as the read ends of live processes are), closed when the
// test or benchmark ends.
func holdFDs(tb testing.TB, n int) {
	tb.Helper()
	var held []*os.File
	tb.Cleanup(func() {
		for _, f := range held {
			_ = f.Close()
		}
	})
	for len(held) < n {
		r, w, err := os.Pipe()
		if err != nil {
			tb.Fatal(err)
		}
		held = append(held, r, w)
	}
}
