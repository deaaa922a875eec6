//go:build linux

package proc

// The process search of the peer check (step 3 of CheckPeer): is the peer
// socket held by a process that is not sandboxed? Each process is judged
// first by facts whose cost is fixed (its cgroup path, its PID namespace,
// its parent links and their argv[0]); the fd table of a process judged
// sandboxed is never read, so a sandboxed command that holds millions of
// fds costs the search nothing. The search runs in two rounds, first over
// the processes that look like the socket's creator (its cgroup when the
// kernel reported it, its owner uid otherwise), then over the others,
// newest first, and stops at the first unsandboxed holder: a client is
// usually found before most processes are judged.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/codexec/codex/internal/reap"
	"github.com/codexec/codex/internal/sockdiag"
	"golang.org/x/sys/unix"
)

// peerScan is one search, with what it knows of our sandboxes (copied
// under t.mu) and what it learned of the processes so far.
type peerScan struct {
	sock      sockdiag.Socket
	self      int
	leaves    map[string]bool  // sandboxed leaf paths
	members   map[int]bool     // the pids the leaves' cgroup.procs listed when the full scan began
	roots     map[int]bool     // sandboxed processes, by pid
	nss       map[uint64]bool  // PID namespaces of sandboxed processes
	adoptions bool             // subreaper mode after a sandbox ran: adopted orphans are unattributable
	tracked   map[int]struct{} // subreaper mode: our own children
	selfSid   int
	mnt       string   // cgroup v2 mount; "" when unknown
	ownNS     uint64   // our PID namespace
	launchers []string // argv[0] names of confining programs (TreeKiller.launchers)

	cgPath  map[int]string         // pid → cgroup path (memo)
	lineage map[int]lineageVerdict // pid → what its ancestry says (memo)
	clean   *cleanLineage          // processes whose whole ancestry was clean, across searches
	nsMemo  map[uint64]bool        // PID namespace → sandboxed (memo)
	cgIno   map[string]uint64      // cgroup path → id (memo)
	skipped int                    // processes judged sandboxed
	hidden  int                    // walks that met an ancestor /proc hides from us
}

func (t *TreeKiller) newPeerScan(sock sockdiag.Socket) *peerScan {
	s := &peerScan{sock: sock, self: os.Getpid(), leaves: map[string]bool{}, roots: map[int]bool{},
		nss: map[uint64]bool{}, cgPath: map[int]string{}, lineage: map[int]lineageVerdict{}, nsMemo: map[uint64]bool{}, cgIno: map[string]uint64{}}
	s.mnt = t.peerMount()
	s.clean = &t.clean
	s.ownNS = ownPIDNS()
	s.launchers = t.launchers
	t.copySandboxState(s)
	return s
}

// copySandboxState copies what the search needs of t's state into s.
func (t *TreeKiller) copySandboxState(s *peerScan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for leaf := range t.sb.leaves {
		s.leaves[leaf] = true
	}
	for pid, r := range t.sb.roots {
		s.roots[pid] = true
		if r.ns != 0 {
			s.nss[r.ns] = true
		}
	}
	if t.mode == modeSubreaper && t.sb.ever {
		s.adoptions = true
		s.selfSid = t.selfSid
		s.tracked = make(map[int]struct{}, len(t.tracked))
		for pid := range t.tracked {
			s.tracked[pid] = struct{}{}
		}
	}
}

// leafSearches counts the searches that read every sandboxed leaf (a
// full scan's leafMembers, searchSandboxedLeaves): what the tests of the
// peer check's cost look at.
var leafSearches atomic.Int64

// leafMembers returns the pids listed in the cgroup.procs of leaves: one
// read per leaf instead of one per process. A process that joins a leaf
// later (a fork) is judged by its own cgroup file.
func leafMembers(leaves map[string]bool) map[int]bool {
	leafSearches.Add(1)
	members := map[int]bool{}
	for leaf := range leaves {
		data, err := os.ReadFile(filepath.Join(leaf, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				members[pid] = true
			}
		}
	}
	return members
}

// checkSocketOwners allows the peer if a process that is not sandboxed
// holds the socket, and says why not otherwise. The processes of the
// socket's own cgroup are searched first (peerfast_linux.go), then, if
// none of them is an unsandboxed holder, every process: those that look
// like the socket's creator (its cgroup, or its uid) first.
func (t *TreeKiller) checkSocketOwners(sock sockdiag.Socket) error {
	leave := acquire(peerRound)
	defer leave()
	return t.searchOwners(sock, leave)
}

// searchOwners is checkSocketOwners in a slot of the first round, which
// leave gives back before the full scan waits for a slot of its own.
func (t *TreeKiller) searchOwners(sock sockdiag.Socket, leave func()) error {
	s := t.newPeerScan(sock)
	want := "socket:[" + strconv.FormatUint(sock.Inode, 10) + "]"
	// The last holders found, if they are in the socket's cgroup: a client
	// usually connects again.
	searched := map[int]bool{}
	if s.sock.HasCgroupID && s.sock.CgroupID != 0 && s.mnt != "" {
		for _, pid := range t.holders.list() {
			if pid == s.self || !s.likelyCreator(pid) {
				continue
			}
			searched[pid] = true
			if !s.members[pid] && !s.sandboxed(pid) && holdsSocket(pid, want) {
				t.holders.add(pid)
				return nil
			}
		}
	}
	pids, ok := t.socketCgroupProcs(s)
	for _, pid := range pids {
		if searched[pid] {
			continue
		} else if s.members[pid] {
			s.skipped++
		} else if !s.sandboxed(pid) && holdsSocket(pid, want) {
			t.holders.add(pid)
			return nil
		}
	}
	for _, pid := range pids {
		searched[pid] = true
	}
	leave()
	scansQueued.Add(1)
	release := acquire(peerScanSem)
	scansQueued.Add(-1)
	defer release()
	// Every process is judged now: one read per sandboxed leaf saves one
	// or more per sandboxed process. The first rounds judge their few
	// candidates one by one, at a cost that does not grow with the leaves.
	s.members = leafMembers(s.leaves)
	var later []int
	for _, pid := range allPids() {
		if searched[pid] {
			continue
		} else if s.members[pid] {
			s.skipped++
		} else if !s.likelyCreator(pid) {
			later = append(later, pid)
		} else if !s.sandboxed(pid) && holdsSocket(pid, want) {
			t.learnCgroup(s, pid, ok)
			t.holders.add(pid)
			return nil
		}
	}
	for _, pid := range later {
		if !s.sandboxed(pid) && holdsSocket(pid, want) {
			t.learnCgroup(s, pid, ok)
			t.holders.add(pid)
			return nil
		}
	}
	if s.hidden > 0 {
		return fmt.Errorf("no unsandboxed process holds the local peer socket %d (%d sandboxed processes not searched; /proc hides an ancestor of some from the server: hidepid, docs/operations.md §10)", sock.Inode, s.skipped)
	}
	return fmt.Errorf("no unsandboxed process holds the local peer socket %d (%d sandboxed processes not searched)", sock.Inode, s.skipped)
}

// learnCgroup remembers the path of the socket's cgroup when the full scan
// found its holder there and the first round could not open it by id.
func (t *TreeKiller) learnCgroup(s *peerScan, pid int, opened bool) {
	if opened || !s.sock.HasCgroupID || s.sock.CgroupID == 0 {
		return
	}
	if p := s.cgroupPath(pid); p != "" && s.cgIno[p] == s.sock.CgroupID {
		t.cgNames.put(s.sock.CgroupID, p)
	}
}

// allPids lists the processes in /proc, newest first: a client has
// usually started recently.
func allPids() []int {
	f, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	newestFirst(pids)
	return pids
}

// sandboxed judges pid without reading its fd table.
func (s *peerScan) sandboxed(pid int) bool {
	judged(pid)
	sb := s.inSandboxedLeaf(pid) || s.inSandboxNS(pid) || s.byLineage(pid)
	if sb {
		s.skipped++
	}
	return sb
}

// cgroupPath returns the path of pid's cgroup v2 directory, or "".
func (s *peerScan) cgroupPath(pid int) string {
	if p, ok := s.cgPath[pid]; ok || s.mnt == "" {
		return p
	}
	p := ""
	var buf [4096]byte
	if data, err := readProc("/proc/"+strconv.Itoa(pid)+"/cgroup", buf[:], true); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if rel, ok := strings.CutPrefix(line, "0::"); ok {
				p = filepath.Join(s.mnt, rel)
				break
			}
		}
	}
	s.cgPath[pid] = p
	return p
}

// inSandboxedLeaf reports whether pid's cgroup is a sandboxed leaf or lies
// below one.
func (s *peerScan) inSandboxedLeaf(pid int) bool {
	if len(s.leaves) == 0 {
		return false
	}
	for p := s.cgroupPath(pid); len(p) > len(s.mnt); p = filepath.Dir(p) {
		if s.leaves[p] {
			return true
		}
	}
	return false
}

// inSandboxNS reports whether pid's PID namespace, or one of its parents,
// is a sandboxed process's. NS_GET_PARENT fails at the namespace we live in.
func (s *peerScan) inSandboxNS(pid int) bool {
	if len(s.nss) == 0 {
		return false
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	var seen []uint64
	found := false
	for depth := 0; depth < 32; depth++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Ino == s.ownNS {
			break
		}
		if v, ok := s.nsMemo[st.Ino]; ok {
			found = v
			break
		}
		seen = append(seen, st.Ino)
		if s.nss[st.Ino] {
			found = true
			break
		}
		parent, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		if err != nil {
			break
		}
		_ = unix.Close(fd)
		fd = parent
	}
	_ = unix.Close(fd)
	for _, ino := range seen {
		s.nsMemo[ino] = found
	}
	return found
}

// lineageVerdict is what a process's ancestry says of it.
type lineageVerdict uint8

const (
	lineageClean     lineageVerdict = iota // walked to the top: no sandbox above
	lineageSandboxed                       // a sandboxed process, a launcher or an adopted orphan is above (or 4,096 ancestors)
	lineageVanished                        // an ancestor vanished before its stat was read: walk again
)

// maxLineageWalks bounds the walks of one process whose ancestors keep
// vanishing; after them it is judged sandboxed.
const maxLineageWalks = 4

// byLineage reports whether pid or one of its ancestors is a sandboxed
// process of ours, any sandbox helper (a launcher's argv[0]: every
// helper that stays a parent is one, and PID 1 of a sandbox's namespace
// adopts its orphans), or an orphan the server adopted in subreaper mode.
// Verdicts are remembered for the whole chain; a walk that reached the
// top clean is remembered across searches (cleanLineage).
//
// An ancestor that vanishes during the walk is not the top of a clean
// ancestry: its children re-parented, maybe to a sandbox's init or to
// the server (an adoption), so the walk starts again from pid, whose stat
// now names the new parent. A process that keeps losing ancestors, or is
// gone itself (it holds nothing then), is judged sandboxed: the check
// fails closed. So is one with a live ancestor whose stat we may not read
// (a /proc mounted with hidepid): a sandboxed process of our uid can hide
// that way, by making itself not dumpable (counted in s.hidden, for the
// refusal's message).
func (s *peerScan) byLineage(pid int) bool {
	for range maxLineageWalks {
		switch s.walkLineage(pid) {
		case lineageClean:
			return false
		case lineageSandboxed:
			return true
		}
	}
	return true
}

// walkLineage is one walk of byLineage; it remembers the verdicts of a
// walk that reached one.
func (s *peerScan) walkLineage(pid int) lineageVerdict {
	var chain []procStat
	var child procStat // the process whose stat named pid as its parent (i > 0)
	verdict := lineageClean
	for i := 0; pid > 1; i++ {
		if v, ok := s.lineage[pid]; ok {
			verdict = v
			if v == lineageClean && i > 0 && s.isLauncher(pid) {
				verdict = lineageSandboxed // it exec'd a launcher since this scan judged it
			}
			break
		}
		if i == 4096 {
			verdict = lineageSandboxed // no real ancestry is this deep: fail closed
			break
		}
		if s.roots[pid] {
			chain = append(chain, procStat{pid: pid})
			verdict = lineageSandboxed
			break
		}
		if f := lineageRead.Load(); f != nil {
			(*f)(pid)
		}
		st, err := lineageStat(pid)
		if err != nil {
			if i == 0 {
				return lineageSandboxed // gone: it holds no socket (nothing remembered)
			}
			if !stillChildOf(child, pid) {
				return lineageVanished
			}
			// Alive, and hidden from us (hidepid): it may be a sandboxed
			// process of our uid that made itself not dumpable.
			s.hidden++
			chain = append(chain, procStat{pid: pid})
			verdict = lineageSandboxed
			break
		}
		if i > 0 && !parentOf(st, child) {
			return lineageVanished // the parent died and its pid went to another
		}
		// A remembered (pid, start) vouches for its ancestors only: exec
		// keeps both and changes argv[0], so the process itself is judged
		// again.
		hit := s.clean.has(pid, st.start)
		chain = append(chain, st)
		if s.isLauncher(pid) || s.adopted(st) {
			verdict = lineageSandboxed
			break
		}
		if hit {
			break
		}
		child, pid = st, st.ppid
	}
	for _, st := range chain {
		s.lineage[st.pid] = verdict
	}
	if verdict == lineageClean {
		s.clean.add(chain)
	}
	return verdict
}

// stillChildOf reports whether child's stat, read again, still names pid
// as its parent: then pid, whose stat could not be read, had not exited
// (its children re-parent when it exits, before its stat goes), and the
// read failed for want of permission.
func stillChildOf(child procStat, pid int) bool {
	again, err := readStat(child.pid)
	return err == nil && again.start == child.start && again.ppid == pid
}

// parentOf reports whether st, read after child's stat named st.pid as its
// parent, is that parent and not a process that took its pid after it
// died: a sandboxed command's child can exit between the two reads, and
// where the pid space is small (32,768) its pid can go to the next fork on
// the host, a clean process or a thread, whose ancestry says nothing of
// child's. A parent started no later than its child (a new parent too: an
// orphan goes to a subreaper above it or to its namespace's init), and a
// process on a freed pid started after it: the parent died after it forked
// child, or adopted it. In the clock tick of child's start, child's stat,
// read again, still names st.pid only if its parent has not died: the
// orphans of a process re-parent when it exits, before its pid is freed.
func parentOf(st, child procStat) bool {
	if st.start != child.start {
		return st.start < child.start
	}
	return stillChildOf(child, st.pid)
}

// cleanLineage remembers, by pid and start time, the processes whose
// ancestry was walked to the top without meeting a sandboxed process, a
// launcher or an adopted orphan. A remembered process vouches for its
// ancestors: they only ever leave (an orphan re-parents to a subreaper
// among its ancestors or to its namespace's init, which is one too), so
// no sandbox can come to stand above it, and an ancestor that execs a
// launcher later (exec keeps the pid and the start time and changes
// argv[0]) forked it before, unconfined. The process itself may exec a
// launcher, or be orphaned to the server, after it was remembered, so
// each hit judges it again (isLauncher, adopted). A new process on the
// same pid has another start time. The search then reads two files of a
// returning client instead of two per ancestor.
type cleanLineage struct {
	mu    sync.Mutex
	start map[int]uint64 // pid → start time
}

// maxCleanLineage bounds the remembered processes; when full, all are
// forgotten and learned again.
const maxCleanLineage = 4096

func (c *cleanLineage) has(pid int, start uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.start[pid]
	return ok && v == start
}

func (c *cleanLineage) add(chain []procStat) {
	if len(chain) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.start == nil || len(c.start)+len(chain) > maxCleanLineage {
		c.start = make(map[int]uint64)
	}
	for _, st := range chain {
		c.start[st.pid] = st.start
	}
}

// adopted reports whether st is an orphan that re-parented to the server
// (subreaper mode, once a sandbox ran): it may come from a sandboxed
// command that left its parent behind, and nothing says which.
func (s *peerScan) adopted(st procStat) bool {
	if !s.adoptions || st.ppid != s.self || st.sid == s.selfSid {
		return false
	}
	_, ours := s.tracked[st.pid]
	return !ours && !reap.Owned(st.pid)
}

// isLauncher reports whether pid's argv[0] names a launcher (the sandbox
// helper). A sandboxed command cannot rename its ancestors; a process that
// is not sandboxed and names itself so only refuses itself.
func (s *peerScan) isLauncher(pid int) bool {
	if len(s.launchers) == 0 {
		return false
	}
	var buf [4096]byte // argv[0] is enough
	b, err := readProc("/proc/"+strconv.Itoa(pid)+"/cmdline", buf[:], false)
	if err != nil {
		return false
	}
	arg0, _, _ := strings.Cut(string(b), "\x00")
	return slices.Contains(s.launchers, filepath.Base(arg0))
}

// likelyCreator reports whether pid shares the socket's cgroup (when the
// kernel reported it) or its owner uid: the creator, usually its holder,
// is searched first.
func (s *peerScan) likelyCreator(pid int) bool {
	judged(pid)
	if s.sock.HasCgroupID && s.sock.CgroupID != 0 && s.mnt != "" {
		p := s.cgroupPath(pid)
		ino, ok := s.cgIno[p]
		if !ok && p != "" {
			var st unix.Stat_t
			if unix.Stat(p, &st) == nil {
				ino = st.Ino
			}
			s.cgIno[p] = ino
		}
		return ino == s.sock.CgroupID
	}
	var st unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(pid), &st) == nil && st.Uid == s.sock.UID
}

// fdTableRead, when set (by tests), is told of every fd table read.
var fdTableRead atomic.Pointer[func(pid int)]

// holdsSocket reports whether pid has an fd whose link reads want. Every
// fd is read until one matches: the order changes the cost, not the
// verdict.
func holdsSocket(pid int, want string) bool {
	if f := fdTableRead.Load(); f != nil {
		(*f)(pid)
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	// Highest fd first: a socket just connected usually holds the
	// highest number, so a client with many fds open (hundreds of
	// connections) is found at the first link read, not the last.
	fds := make([]int, 0, len(names))
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	buf := make([]byte, 64)
	for i := len(fds) - 1; i >= 0; i-- {
		if k, err := unix.Readlink(dir+strconv.Itoa(fds[i]), buf); err == nil && string(buf[:k]) == want {
			return true
		}
	}
	return false
}

// lineageStat reads a stat file for the walk, or takes what lineageSwap
// says instead.
func lineageStat(pid int) (procStat, error) {
	if f := lineageSwap.Load(); f != nil {
		if st, err, ok := (*f)(pid); ok {
			return st, err
		}
	}
	return readStat(pid)
}

// lineageSwap, when set (by tests), answers the walk's reads of the
// processes it reports ok for: an error as a /proc mounted with hidepid
// gives, or another process's stat as a reused pid would.
var lineageSwap atomic.Pointer[func(pid int) (procStat, error, bool)]

// lineageRead, when set (by tests), is told of every process whose stat
// the ancestry walk reads.
var lineageRead atomic.Pointer[func(pid int)]

// procJudged, when set (by tests), is told of every process the search
// looks at.
var procJudged atomic.Pointer[func(pid int)]

func judged(pid int) {
	if f := procJudged.Load(); f != nil {
		(*f)(pid)
	}
}
