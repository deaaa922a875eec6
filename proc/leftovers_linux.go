//go:build linux

// What is left of a process's tree once the process is closed, handed to
// the owner of its lifetime (an exec-server session), which kills it when
// that lifetime ends; and the size of a tree, for the logs.

package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Leftovers is what is left of a process's tree after Close: the
// descendants that outlived a normal exit of the direct child and no
// longer hold its output (`server >log 2>&1 &`). Close alone leaves them
// running until TreeKiller.Close; CloseLeftovers hands them to the caller,
// which kills them when the lifetime they belong to ends (docs/protocol.md
// §7.8).
//
// In cgroup mode they are the process's leaf, exactly: nothing leaves it
// without privileges. Otherwise (subreaper mode, or a process that got no
// leaf) they are the processes in the session or process group of the
// child (it called setsid: both are its pid) and their descendants, found
// by a /proc walk. That is best effort: a leftover that called setsid
// itself and whose parent is gone cannot be attributed, and is killed by
// TreeKiller.Close. It never takes a stranger: the kernel does not reuse a
// pid while a session or group of that id has a member, so once a process
// with the child's pid exists again, nothing of the tree is left.
//
// Its methods are safe for concurrent use.
type Leftovers struct {
	t    *TreeKiller
	leaf string // the cgroup leaf; "": walk by sid
	sid  int    // the direct child's pid: its session and group id

	mu   sync.Mutex
	done bool // Kill ran: nothing is left
}

// CloseLeftovers is Close, and then returns what is left of the tree for
// the caller to kill (Leftovers.Kill), or nil when nothing is (or the
// process has no TreeKiller). The caller owns it: nothing else kills it
// before TreeKiller.Close.
func (p *Process) CloseLeftovers() *Leftovers {
	p.Close()
	if p.tree == nil || p.leaf != "" && p.leafGone {
		return nil // the leaf was removed empty: nothing is left
	}
	l := &Leftovers{t: p.tree, leaf: p.leaf, sid: p.pid}
	if l.leaf == "" && p.tree.mode == modeSubreaper && !p.tree.orphanIn(l.sid) {
		return nil
	}
	if l.Len() == 0 {
		l.Kill() // removes a leaf that emptied since Close
		return nil
	}
	return l
}

// Len returns the number of processes left (0 after Kill).
func (l *Leftovers) Len() int {
	return CountTrees(nil, []*Leftovers{l})
}

// ref returns what counting l looks at; false when nothing is left.
func (l *Leftovers) ref() (treeRef, bool) {
	if l == nil {
		return treeRef{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done || (l.leaf == "" && pidExists(l.sid)) {
		return treeRef{}, false // killed, or the pid was reused: the session and group are gone
	}
	return treeRef{t: l.t, leaf: l.leaf, sid: l.sid}, true
}

// Kill SIGKILLs every process left, waits (at most releaseWait) until they
// are gone, removes the cgroup leaf, and returns how many processes it
// found to kill. Later calls do nothing and return 0. A nil *Leftovers
// has nothing to kill.
func (l *Leftovers) Kill() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return 0
	}
	l.done = true
	if l.leaf != "" {
		pids := cgroupPids(l.leaf, nil)
		if err := l.t.killCgroup(l.leaf); err != nil {
			l.t.log.Warn("killing leftovers", zap.String("dir", l.leaf), zap.Error(err))
		}
		l.t.release(l.leaf, true) // waits until it is empty, and removes it
		// A task leaves its cgroup a moment before it is a zombie.
		l.t.awaitDeath(pids)
		return len(pids)
	}
	if pidExists(l.sid) {
		return 0 // the pid was reused: the session and group are gone
	}
	n := countRefs([]treeRef{{t: l.t, sid: l.sid}})
	if n > 0 {
		l.t.awaitDeath(l.t.killWalk(nil, l.sid))
	}
	return n
}

// Signal sends sig to every process left (a drain's SIGTERM, before the
// Kill that ends the lifetime) and returns how many it reached. A
// process forked while it runs may be missed: Kill takes it. Nothing
// after Kill.
func (l *Leftovers) Signal(sig syscall.Signal) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return 0
	}
	var pids []int
	if l.leaf != "" {
		pids = cgroupPids(l.leaf, nil)
	} else if !pidExists(l.sid) {
		pids = indexProcs(scanProcs()).tree(nil, l.sid, nil, l.t.selfPid)
	}
	n := 0
	for _, pid := range pids {
		if unix.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

// TreeSize returns the number of processes in p's tree now, as Kill would
// find them: those in its cgroup leaf, or the child (until it is reaped),
// the members of its session and group, and their descendants. 0 without
// a TreeKiller.
func (p *Process) TreeSize() int {
	return CountTrees([]*Process{p}, nil)
}

// ref returns what counting p's tree looks at; false when nothing can be
// counted.
func (p *Process) ref() (treeRef, bool) {
	if p.tree == nil {
		return treeRef{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := treeRef{t: p.tree, leaf: p.leaf, sid: p.pid}
	if !p.reaped {
		r.roots = []int{p.pid}
	} else if r.leaf == "" && pidExists(p.pid) {
		return treeRef{}, false
	}
	return r, true
}

// treeRef is a tree to count: a cgroup leaf, or else the roots and the
// members of session or group sid with their descendants.
type treeRef struct {
	t     *TreeKiller
	leaf  string
	roots []int
	sid   int
}

// CountTrees returns the number of live processes in the trees of ps and
// in ls: the sum of their TreeSize and Len, a process found twice counted
// once, with one /proc scan for all the trees without a cgroup leaf. For
// the logs of a session's end, which can cover many processes.
func CountTrees(ps []*Process, ls []*Leftovers) int { return len(TreePids(ps, ls)) }

// TreePids is the set of the processes CountTrees counts.
func TreePids(ps []*Process, ls []*Leftovers) map[int]bool {
	refs := make([]treeRef, 0, len(ps)+len(ls))
	for _, p := range ps {
		if r, ok := p.ref(); ok {
			refs = append(refs, r)
		}
	}
	for _, l := range ls {
		if r, ok := l.ref(); ok {
			refs = append(refs, r)
		}
	}
	return refPids(refs)
}

// countRefs is CountTrees of refs.
func countRefs(refs []treeRef) int { return len(refPids(refs)) }

// refPids is TreePids of refs.
func refPids(refs []treeRef) map[int]bool {
	seen := make(map[int]bool)
	var x *procIndex
	for _, r := range refs {
		if r.leaf != "" {
			for _, pid := range cgroupPids(r.leaf, nil) {
				seen[pid] = true
			}
			continue
		}
		if x == nil {
			x = indexProcs(scanProcs())
		}
		for _, pid := range x.tree(r.roots, r.sid, nil, r.t.selfPid) {
			if dying, scanned := x.dying[pid]; scanned && !dying {
				seen[pid] = true
			}
		}
	}
	return seen
}

// orphanIn reports whether a child of the server (in subreaper mode,
// where orphans re-parent to it) runs in session or group sid. Every tree
// left behind by a dead child has such an orphan at its top, so this
// spares the full /proc walk of the usual process, which leaves nothing.
func (t *TreeKiller) orphanIn(sid int) bool {
	for _, pid := range childPids(t.selfPid) {
		if st, err := readStat(pid); err == nil && !st.dying() && (st.sid == sid || st.pgrp == sid) {
			return true
		}
	}
	return false
}

// awaitDeath waits up to releaseWait until none of pids runs (gone or a
// zombie), asking the orphan reaper to reap them afterwards.
func (t *TreeKiller) awaitDeath(pids []int) {
	deadline := time.Now().Add(releaseWait)
	for _, pid := range pids {
		for {
			st, err := readStat(pid)
			if err != nil || st.state == 'Z' || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	if t.mode == modeSubreaper {
		t.kickReaper()
	}
}

// cgroupPids appends to pids the processes in the cgroup dir and the
// cgroups below it (none once it is removed).
func cgroupPids(dir string, pids []int) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return pids
	}
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			pids = cgroupPids(filepath.Join(dir, e.Name()), pids)
		}
	}
	return pids
}

// groupOnlyOurs reports whether the session and group numbered pid, whose
// leader we reaped, can only be what that leader left: the kernel keeps
// the number allocated while any process is in the group or session, so
// a process of that number can exist only once both are empty and the
// number was given to someone else. The check and a signal after it are
// not atomic; the number must be freed and taken again in between.
func groupOnlyOurs(pid int) bool { return !pidExists(pid) }

// pidExists reports whether a process or thread with id pid exists.
func pidExists(pid int) bool {
	var st unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(pid), &st) == nil
}
