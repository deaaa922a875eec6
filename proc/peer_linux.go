//go:build linux

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/codexec/codex/internal/sockdiag"
	"golang.org/x/sys/unix"
)

// Peer identification (docs/sandbox.md §7, docs/operations.md §10). A
// sandboxed command with the network on shares the server's network
// namespace, so it can connect to the server's own listeners and ask for
// an unsandboxed process. CheckPeer decides about the other end of a
// local TCP connection from what the kernel says of the peer socket
// (sock_diag: inode, owner uid, and the cgroup its creator ran in), and
// only then, if still needed, from the processes that hold it:
//
//  1. a socket whose cgroup is one of our sandboxed leaves (live or
//     removed), or a directory below one, is refused. The cgroup id is
//     fixed when the socket is made and travels with it whoever holds it
//     later; a sandboxed command cannot leave its leaf.
//  2. a server that is not root allows a socket of another uid: our
//     sandboxed commands run as our uid (a user namespace maps nothing
//     else), so that socket is not one of ours, and its holders' fd
//     tables are not ours to read.
//  3. otherwise the peer is allowed when a process that is not sandboxed
//     holds the socket (peerscan_linux.go). Each process is first judged
//     by cheap, fixed-size facts: its cgroup is a sandboxed leaf, its PID
//     namespace is (or lies below) a sandbox's, a sandboxed process or
//     any sandbox helper (ours or not: `codex sandbox --network`, another
//     server) is among its ancestors, or, in subreaper mode, it is an
//     orphan the server adopted and cannot attribute. Only the fd tables
//     of the processes left are read, so what sandboxed processes hold
//     costs nothing. A socket held by no unsandboxed process (parked in
//     flight with SCM_RIGHTS, or held only inside sandboxes) is refused.
//
// A peer that is not found by sock_diag and whose address is not one of
// this host's is a remote client and is allowed. A local peer that cannot
// be identified (its socket vanished before the check) is refused while
// sandboxed processes may be alive: it could be one of them, and a
// legitimate local client loses nothing but a retry.

// sandboxState tracks what the peer check needs. Guarded by TreeKiller.mu.
type sandboxState struct {
	leaves map[string]uint64 // cgroup leaf path → cgroup id, until removed
	ids    map[uint64]string // the same, by id
	roots  map[int]sbRoot    // sandboxed processes not reaped yet, by pid
	ever   bool              // a sandboxed process was started
	// dead remembers the ids of removed sandboxed leaves (the last
	// maxDeadLeaves, oldest first in deadOrder): a socket made in one
	// keeps that cgroup id whoever holds it later, and cgroup ids are
	// never reused.
	dead      map[uint64]string
	deadOrder []uint64
}

// maxDeadLeaves bounds the removed leaves the peer check remembers.
const maxDeadLeaves = 1 << 14

// sbRoot is a sandboxed process as the peer check knows it.
type sbRoot struct {
	ns uint64 // inode of its PID namespace; 0 when it is ours
}

// noteSandboxedLeaf records the leaf fd (made for a sandboxed process)
// before the fork. Called by prepare.
func (t *TreeKiller) noteSandboxedLeaf(dir string, fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: dir, Err: err}
	}
	t.mu.Lock()
	if t.sb.leaves == nil {
		t.sb.leaves = make(map[string]uint64)
		t.sb.ids = make(map[uint64]string)
	}
	t.sb.leaves[dir] = st.Ino
	t.sb.ids[st.Ino] = dir
	t.mu.Unlock()
	return nil
}

// forgetLeaf drops a removed leaf, remembering its id as dead. Called
// with t.mu held.
func (t *TreeKiller) forgetLeaf(dir string) {
	id, ok := t.sb.leaves[dir]
	if !ok {
		return
	}
	delete(t.sb.leaves, dir)
	delete(t.sb.ids, id)
	if t.sb.dead == nil {
		t.sb.dead = make(map[uint64]string)
	}
	t.sb.dead[id] = dir
	t.sb.deadOrder = append(t.sb.deadOrder, id)
	if len(t.sb.deadOrder) > maxDeadLeaves {
		delete(t.sb.dead, t.sb.deadOrder[0])
		t.sb.deadOrder = t.sb.deadOrder[1:]
	}
}

// trackSandboxed records a sandboxed child right after the fork: its pid
// and PID namespace, for the process search of the peer check.
func (t *TreeKiller) trackSandboxed(pid int) {
	if t == nil {
		return
	}
	ns, _ := nsInode("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if own := ownPIDNS(); own != 0 && own == ns {
		ns = 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sb.roots == nil {
		t.sb.roots = make(map[int]sbRoot)
	}
	t.sb.roots[pid] = sbRoot{ns: ns}
	t.sb.ever = true
}

// untrackSandboxed forgets a reaped sandboxed child. Called with t.mu held.
func (t *TreeKiller) untrackSandboxed(pid int) {
	delete(t.sb.roots, pid)
}

// mayHaveSandboxed reports whether a sandboxed process may be alive.
// Called with t.mu held.
func (t *TreeKiller) mayHaveSandboxed() bool {
	if len(t.sb.leaves) > 0 || len(t.sb.roots) > 0 {
		return true
	}
	// Without cgroups, a sandboxed command's escaped descendants cannot be
	// accounted for: stay careful for the server's lifetime.
	return t.mode == modeSubreaper && t.sb.ever
}

// CheckPeer returns nil if the TCP connection between local (our end) and
// remote may be served, and an error saying why not if its peer socket
// belongs to one of our sandboxes or any sandbox helper's (or is local and
// cannot be identified while sandboxed processes may be alive). A nil t
// allows every peer. Its cost does not depend on what sandboxed processes
// hold; concurrent calls do not wait for each other.
func (t *TreeKiller) CheckPeer(local, remote net.Addr) error {
	if t == nil {
		return nil
	}
	la, lok := tcpAddrPort(local)
	ra, rok := tcpAddrPort(remote)
	if !lok || !rok {
		return nil // not TCP: nothing a sandbox can reach
	}
	leave := acquire(peerRound)
	defer leave()
	sock, err := sockdiag.LookupTCP(ra, la)
	if err != nil && !errors.Is(err, sockdiag.ErrNotFound) {
		// No sock_diag here (an old kernel, a restricted container).
		sock, err = sockdiag.LookupProcNet(ra, la)
	}
	if errors.Is(err, sockdiag.ErrNotFound) && !isLocalAddr(ra.Addr()) {
		return nil // a remote client
	}
	if err != nil {
		return t.unidentified(fmt.Sprintf("local peer socket not found (%v)", err))
	}
	if sock.HasCgroupID && sock.CgroupID != 0 {
		if leaf, ok := t.sandboxedCgroup(sock.CgroupID); ok {
			return fmt.Errorf("peer socket belongs to sandboxed cgroup %s", leaf)
		}
	}
	if euid := os.Geteuid(); euid != 0 && sock.UID != uint32(euid) {
		return nil // another user's socket: not one of our sandboxes'
	}
	return t.searchOwners(sock, leave)
}

// unidentified refuses a local peer that could not be identified if a
// sandboxed process may be alive.
func (t *TreeKiller) unidentified(why string) error {
	t.mu.Lock()
	risky := t.mayHaveSandboxed()
	t.mu.Unlock()
	if risky {
		return errors.New(why + " while sandboxed processes may be running")
	}
	return nil
}

// sandboxedCgroup reports whether the cgroup id is a sandboxed leaf or a
// directory below one, and returns that leaf. Its cost does not depend on
// the number of sandboxed leaves: the id's path is looked up (by handle,
// or as learned earlier) and its ancestors checked. Only a server that
// can do neither (not root, a cgroup not seen before) searches the
// leaves' directories.
func (t *TreeKiller) sandboxedCgroup(id uint64) (string, bool) {
	t.mu.Lock()
	dir, dead := t.sb.dead[id]
	if !dead {
		dir = t.sb.ids[id]
	}
	n := len(t.sb.leaves)
	t.mu.Unlock()
	if dead {
		return dir + " (removed)", true
	}
	if dir != "" {
		return dir, true
	}
	if n == 0 {
		return "", false
	}
	if mnt := t.peerMount(); mnt != "" {
		if p := t.cgroupPathByID(mnt, id); p != "" {
			t.mu.Lock()
			defer t.mu.Unlock()
			for ; len(p) > len(mnt); p = filepath.Dir(p) {
				if _, ok := t.sb.leaves[p]; ok {
					return p, true
				}
			}
			return "", false
		}
	}
	return t.searchSandboxedLeaves(id)
}

// cgroupPathByID returns the path of the cgroup v2 directory whose id is
// id, "" if it cannot be opened (openCgroup). cgroup ids are never reused,
// so a path found is remembered.
func (t *TreeKiller) cgroupPathByID(mnt string, id uint64) string {
	if p := t.cgNames.get(id); p != "" {
		return p
	}
	fd := t.openCgroup(mnt, id)
	if fd < 0 {
		return ""
	}
	defer unix.Close(fd)
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || p != mnt && !strings.HasPrefix(p, mnt+"/") {
		return ""
	}
	t.cgNames.put(id, p)
	return p
}

// searchSandboxedLeaves looks for the cgroup id below the sandboxed
// leaves, directory by directory.
func (t *TreeKiller) searchSandboxedLeaves(id uint64) (string, bool) {
	leafSearches.Add(1)
	t.mu.Lock()
	leaves := make([]string, 0, len(t.sb.leaves))
	for dir := range t.sb.leaves {
		leaves = append(leaves, dir)
	}
	t.mu.Unlock()
	for _, leaf := range leaves {
		found := false
		_ = filepath.WalkDir(leaf, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				return nil // cgroupfs control files
			}
			var st unix.Stat_t
			if unix.Lstat(path, &st) == nil && st.Ino == id {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		if found {
			return leaf, true
		}
	}
	return "", false
}

// ownNSIno caches ownPIDNS: a process's own PID namespace never changes
// (setns and unshare of a PID namespace apply to its children only).
var ownNSIno atomic.Uint64

// ownPIDNS returns the inode of the server's PID namespace, or 0 if it
// cannot be read (then it is tried again next time).
func ownPIDNS() uint64 {
	if ino := ownNSIno.Load(); ino != 0 {
		return ino
	}
	ino, err := nsInode("/proc/self/ns/pid")
	if err != nil {
		return 0
	}
	ownNSIno.Store(ino)
	return ino
}

func nsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

func tcpAddrPort(a net.Addr) (netip.AddrPort, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta == nil {
		return netip.AddrPort{}, false
	}
	ap := ta.AddrPort()
	return ap, ap.IsValid()
}

// isLocalAddr reports whether a is a loopback address or one of this
// host's interface addresses: a connection from there comes from a local
// process.
func isLocalAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: treat as local (fail closed)
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}
