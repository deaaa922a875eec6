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
	peerRound   = make(chan struct{}, peerRoundSlots)
	peerScanSem = make(chan struct{}, peerScanSlots)
)

// acquire takes a slot of sem, or none after peerSlotWait; the returned
// function gives it back.
func acquire(sem chan struct{}) func() {
	select {
	case sem <- struct{}{}:
		return func() { <-sem }
	default:
	}
	t := time.NewTimer(peerSlotWait)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }
	case <-t.C:
		return func() {}
	}
}

// cgroupNames remembers where cgroups the full scan saw live, by id, for a
// server that cannot open a cgroup by its id (open_by_handle_at needs
// CAP_DAC_READ_SEARCH).
type cgroupNames struct {
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
	slices.Sort(pids)
	slices.Reverse(pids)
	return slices.Compact(pids), true
}
