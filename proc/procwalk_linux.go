//go:build linux

// Helpers that read /proc: a process's stat line, the list of pids, and
// the children of a process.

package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procStat is the part of /proc/<pid>/stat the walks need.
type procStat struct {
	pid, ppid, pgrp, sid int
	state                byte
	flags                uint64 // PF_* of the kernel
	start                uint64 // start time, in clock ticks after boot: with pid, names one process
}

// pfExiting is the kernel's PF_EXITING flag: the process is on its way out.
const pfExiting = 0x4

// dying reports whether the process is exiting or a zombie.
func (st procStat) dying() bool { return st.state == 'Z' || st.flags&pfExiting != 0 }

// readStat parses /proc/<pid>/stat. The command name may contain spaces
// and parentheses, so parsing starts after the last ')'.
func readStat(pid int) (procStat, error) {
	var buf [1024]byte
	data, err := readProc("/proc/"+strconv.Itoa(pid)+"/stat", buf[:], true)
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	st := procStat{pid: pid, state: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.sid, _ = strconv.Atoi(f[3])
	st.flags, _ = strconv.ParseUint(f[6], 10, 64)
	st.start, _ = strconv.ParseUint(f[19], 10, 64)
	return st, nil
}

// readProc reads a small /proc file into buf with one open, read and
// close (os.ReadFile also stats and reads again to see the end). A file
// that fills buf is read again whole when whole is set, and returned cut
// to buf otherwise.
func readProc(path string, buf []byte, whole bool) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	n, err := unix.Read(fd, buf)
	for err == unix.EINTR {
		n, err = unix.Read(fd, buf)
	}
	_ = unix.Close(fd)
	switch {
	case err != nil:
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	case n == len(buf) && whole:
		return os.ReadFile(path)
	}
	return buf[:n], nil
}

// scanProcs reads the stat of every process on the system.
func scanProcs() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := make([]procStat, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			procs = append(procs, st)
		}
	}
	return procs
}

// childPids lists the children of process pid from the per-thread
// "children" files (orphans re-parent to any thread of a subreaper), or
// from a full /proc scan where those files do not exist.
func childPids(pid int) []int {
	base := "/proc/" + strconv.Itoa(pid) + "/task/"
	if _, err := os.Stat(base + strconv.Itoa(pid) + "/children"); err != nil {
		var pids []int // CONFIG_PROC_CHILDREN is off
		for _, st := range scanProcs() {
			if st.ppid == pid {
				pids = append(pids, st.pid)
			}
		}
		return pids
	}
	tasks, _ := os.ReadDir(base)
	var pids []int
	for _, task := range tasks {
		data, err := os.ReadFile(base + task.Name() + "/children")
		if err != nil {
			continue // the thread exited
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				pids = append(pids, c)
			}
		}
	}
	return pids
}

// procIndex is one scan of /proc, indexed for tree walks.
type procIndex struct {
	kids    map[int][]int // by parent pid
	members map[int][]int // by session id and by process group id
	dying   map[int]bool  // every scanned pid: exiting or a zombie
}

func indexProcs(procs []procStat) *procIndex {
	x := &procIndex{kids: make(map[int][]int, len(procs)), members: make(map[int][]int), dying: make(map[int]bool, len(procs))}
	for _, st := range procs {
		x.kids[st.ppid] = append(x.kids[st.ppid], st.pid)
		x.members[st.sid] = append(x.members[st.sid], st.pid)
		if st.pgrp != st.sid {
			x.members[st.pgrp] = append(x.members[st.pgrp], st.pid)
		}
		x.dying[st.pid] = st.dying()
	}
	return x
}

// tree returns the pids reachable by parent links from the roots, from
// every process in session or group sid (if non-zero) and from more;
// never pid 1 or self.
func (x *procIndex) tree(roots []int, sid int, more map[int]struct{}, self int) []int {
	queue := append([]int(nil), roots...)
	if sid > 0 {
		queue = append(queue, x.members[sid]...)
	}
	for pid := range more {
		queue = append(queue, pid)
	}
	var out []int
	seen := make(map[int]bool)
	for len(queue) > 0 {
		pid := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[pid] || pid <= 1 || pid == self {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		queue = append(queue, x.kids[pid]...)
	}
	return out
}
