//go:build linux

package proc

// The first round of the process search (docs/operations.md §10): the
// processes of the peer socket's own cgroup. The kernel names the cgroup
// its creator ran in (sock_diag); the creator, and so usually the holder,
// is among that cgroup's processes, so the search reads one cgroup.procs
// and judges those processes only. What else runs on the host — the
// server's own commands in their leaves, other users' sessions — costs
// nothing. Only when no unsandboxed holder is found there (a socket handed
// on, parked in flight, held inside a sandbox) does the search go over
// every process, as before; the verdict is the same either way, the first
// round only finds the holder sooner.

import (
	"encoding/binary"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Slots of the process search. Each search is a run of blocking syscalls
// on /proc, and each blocking syscall may make the Go runtime start a
// thread: bounding the searches bounds the threads, however many upgrades
// arrive at once. The full scan (rare: a socket whose cgroup holds no
// unsandboxed holder) has slots of its own, so that attackers forcing
// scans cannot hold up the first round of other clients.
const (
	peerRoundSlots  = 4
	peerScanSlots   = 2
	maxPeerSearches = peerRoundSlots + peerScanSlots
	// peerSlotWait is how long a search waits for a slot before it runs
	// anyway: a search stalled in the kernel (a /proc read of a process
	// whose memory map is locked) must not hold up every other client.
	peerSlotWait = time.Second
)

var (
	scansQueued atomic.Int32 // full scans waiting for a slot (read by tests)
	peerRound   = make(chan struct{}, peerRoundSlots)
	peerScanSem = make(chan struct{}, peerScanSlots)
)

// acquire takes a slot of sem, or none after peerSlotWait; the returned
// function gives it back (once, however often it is called).
func acquire(sem chan struct{}) func() {
	release := sync.OnceFunc(func() { <-sem })
	select {
	case sem <- struct{}{}:
		return release
	default:
	}
	t := time.NewTimer(peerSlotWait)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return release
	case <-t.C:
		return func() {}
	}
}

// cgroupNames remembers where cgroups the full scan saw live, by id, for a
// server that cannot open a cgroup by its id (open_by_handle_at needs
// CAP_DAC_READ_SEARCH).
type cgroupNames struct {
	once  sync.Once
	mnt   string // the cgroup v2 mount (peerMount)
	mu    sync.Mutex
	paths map[uint64]string
}

const maxCgroupNames = 1024

func (c *cgroupNames) get(id uint64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[id]
}

func (c *cgroupNames) put(id uint64, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paths == nil || len(c.paths) >= maxCgroupNames {
		c.paths = make(map[uint64]string)
	}
	c.paths[id] = path
}

// fileIDKernfs is the handle type of a kernfs (cgroupfs) file handle: the
// 64-bit node id, which for a cgroup v2 directory is the cgroup id.
const fileIDKernfs = 0xfe

// noHandles, when set (by tests), makes openCgroup skip
// open_by_handle_at, as for a server without CAP_DAC_READ_SEARCH.
var noHandles atomic.Bool

// openCgroup opens the cgroup v2 directory whose id is id, or returns -1.
func (t *TreeKiller) openCgroup(mnt string, id uint64) int {
	if !noHandles.Load() {
		if mfd, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			b := make([]byte, 8)
			binary.NativeEndian.PutUint64(b, id)
			fd, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(fileIDKernfs, b), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
			_ = unix.Close(mfd)
			if err == nil {
				return fd
			}
		}
	}
	p := t.cgNames.get(id)
	if p == "" {
		return -1
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Ino != id { // cgroup ids are never reused
		_ = unix.Close(fd)
		return -1
	}
	return fd
}

// socketCgroupProcs returns the processes of the cgroup the peer socket
// was made in, newest first; ok is false when the kernel did not name it
// or it cannot be opened (removed, unknown to a server that is not root).
func (t *TreeKiller) socketCgroupProcs(s *peerScan) (pids []int, ok bool) {
	if !s.sock.HasCgroupID || s.sock.CgroupID == 0 || s.mnt == "" {
		return nil, false
	}
	dfd := t.openCgroup(s.mnt, s.sock.CgroupID)
	if dfd < 0 {
		return nil, false
	}
	fd, err := unix.Openat(dfd, "cgroup.procs", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	_ = unix.Close(dfd)
	if err != nil {
		return nil, false
	}
	f := os.NewFile(uintptr(fd), "cgroup.procs")
	var b strings.Builder
	buf := make([]byte, 16<<10)
	for {
		n, err := f.Read(buf)
		b.Write(buf[:n])
		if err != nil || n == 0 {
			break
		}
	}
	f.Close()
	for _, field := range strings.Fields(b.String()) {
		if pid, err := strconv.Atoi(field); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return t.searchOrder(s, pids), true
}

// searchOrder orders the processes of the socket's cgroup for the first
// round: newest first, the server itself last (its fd table is the
// largest, and it holds its clients' sockets only when it connects to
// itself).
func (t *TreeKiller) searchOrder(s *peerScan, pids []int) []int {
	newestFirst(pids)
	pids = slices.Compact(pids)
	if i := slices.Index(pids, s.self); i >= 0 {
		pids = append(slices.Delete(pids, i, i+1), s.self)
	}
	return pids
}

// recentHolders remembers the last processes found holding an allowed
// peer socket: where the next search looks first. Its verdicts are not
// remembered, only the pids: each is judged again.
type recentHolders struct {
	mu   sync.Mutex
	pids []int // most recent first
}

const maxRecentHolders = 8

func (r *recentHolders) list() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pids)
}

func (r *recentHolders) add(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.pids, pid); i >= 0 {
		r.pids = slices.Delete(r.pids, i, i+1)
	}
	r.pids = slices.Insert(r.pids, 0, pid)
	if len(r.pids) > maxRecentHolders {
		r.pids = r.pids[:maxRecentHolders]
	}
}

// pidAge orders pids by allocation: pids are handed out upwards from
// ns_last_pid and wrap at pid_max, so those above the last one handed out
// are older than those at or below it.
type pidAge struct{ last int }

func (a pidAge) key(pid int) int {
	if a.last > 0 && pid > a.last {
		return pid - (1 << 30)
	}
	return pid
}

// newestFirst sorts pids from the most recently allocated down.
func newestFirst(pids []int) {
	age := pidAge{last: lastPid()}
	slices.SortFunc(pids, func(a, b int) int { return age.key(b) - age.key(a) })
}

// lastPid returns the last pid allocated in our PID namespace, or 0.
func lastPid() int {
	var buf [32]byte
	b, err := readProc("/proc/sys/kernel/ns_last_pid", buf[:], true)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// peerMount returns the cgroup v2 mount the peer check uses, found once:
// it is where the server's own cgroups live, which do not move.
func (t *TreeKiller) peerMount() string {
	t.cgNames.once.Do(func() { t.cgNames.mnt, _ = cgroup2Mount() })
	return t.cgNames.mnt
}
