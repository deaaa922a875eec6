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

	"github.com/codexec/codex/internal/sockdiag"
	"github.com/codexec/codex/sandbox"
	"golang.org/x/sys/unix"
)

// Peer identification (docs/sandbox.md §7). A sandboxed command with the
// network on shares the server's network namespace, so it can connect to
// the server's own WebSocket listener and ask for an unsandboxed process.
// CheckPeer finds the process behind the other end of a local TCP
// connection and refuses it if it runs inside one of our sandboxes:
//
//   - cgroup mode: every process starts in its own leaf, and the leaves of
//     sandboxed processes are recorded when they are made (before the
//     fork). sock_diag reports the cgroup id of the peer socket (the cgroup
//     its creator ran in); an id that is a sandboxed leaf, or a directory
//     below one, is refused.
//   - otherwise (no cgroup id, subreaper mode, or a sandboxed process that
//     got no leaf): the socket inode (from sock_diag, or /proc/net/tcp*
//     where netlink is unavailable) is mapped through /proc/*/fd to the
//     processes holding it; each is refused if its cgroup is a sandboxed
//     leaf, if its PID namespace is (or lies below) the namespace of a
//     sandboxed process, or if a sandboxed process is among its ancestors.
//
// Both ways then also refuse a peer held by a process that runs under any
// sandbox helper, ours or not (`codex sandbox --network`, another server
// on the host): its parent links lead to a process whose argv[0] is the
// helper's name. That costs one /proc scan per local connection.
//
// A peer that is not found by sock_diag and whose address is not one of
// this host's is a remote client and is allowed, as before. A local peer
// that cannot be identified (its socket vanished before the check) is
// refused while sandboxed processes may be alive: it could be one of them,
// and a legitimate local client loses nothing but a retry, whereas letting
// a sandboxed one through yields an unsandboxed process. A peer socket
// that exists but that no process holds is always refused: a command
// (ours or a foreign sandbox's) can park it in flight with SCM_RIGHTS
// while the check scans /proc.

// sandboxState tracks what the peer check needs. Guarded by TreeKiller.mu.
type sandboxState struct {
	leaves    map[string]uint64 // cgroup leaf path → cgroup id, until removed
	roots     map[int]sbRoot    // sandboxed processes not reaped yet, by pid
	nLeafless int               // sandboxed processes alive without a cgroup leaf
	ever      bool              // a sandboxed process was started (subreaper mode)
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
	ns       uint64 // inode of its PID namespace; 0 when it is ours
	leafless bool   // it got no cgroup leaf
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
	}
	t.sb.leaves[dir] = st.Ino
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
// and PID namespace, for the /proc fallback of the peer check.
func (t *TreeKiller) trackSandboxed(pid int, leaf string) {
	if t == nil {
		return
	}
	ns, _ := nsInode("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if own, err := nsInode("/proc/self/ns/pid"); err == nil && own == ns {
		ns = 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sb.roots == nil {
		t.sb.roots = make(map[int]sbRoot)
	}
	t.sb.roots[pid] = sbRoot{ns: ns, leafless: leaf == ""}
	t.sb.ever = true
	if leaf == "" {
		t.sb.nLeafless++
	}
}

// untrackSandboxed forgets a reaped sandboxed child. Called with t.mu held.
func (t *TreeKiller) untrackSandboxed(pid int) {
	r, ok := t.sb.roots[pid]
	if !ok {
		return
	}
	delete(t.sb.roots, pid)
	if r.leafless {
		t.sb.nLeafless--
	}
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
// belongs to a process of one of t's sandboxes (or is local and cannot be
// identified while sandboxed processes may be alive). A nil t allows every
// peer.
func (t *TreeKiller) CheckPeer(local, remote net.Addr) error {
	if t == nil {
		return nil
	}
	la, lok := tcpAddrPort(local)
	ra, rok := tcpAddrPort(remote)
	if !lok || !rok {
		return nil // not TCP: nothing a sandbox can reach
	}
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
	if t.mode == modeCgroup && sock.HasCgroupID && sock.CgroupID != 0 {
		if leaf, ok := t.sandboxedCgroup(sock.CgroupID); ok {
			return fmt.Errorf("peer socket belongs to sandboxed cgroup %s", leaf)
		}
		t.mu.Lock()
		leafless := t.sb.nLeafless > 0
		t.mu.Unlock()
		if !leafless {
			return foreignSandboxed(socketOwners(sock.Inode))
		}
	}
	return t.checkSocketOwners(sock.Inode)
}

// foreignSandboxed refuses a peer held by a process that runs under any
// sandbox helper (`codex sandbox`, another server's sandboxed start, the
// MCP shell tool): our leaves and namespaces know only our own sandboxes.
//
// A local peer socket that no process holds is refused too: a command can
// park its socket in flight (SCM_RIGHTS) while the check scans /proc.
func foreignSandboxed(pids []int) error {
	if len(pids) == 0 {
		return errors.New("no process holds the local peer socket")
	}
	for _, pid := range pids {
		if helper, ok := underSandboxHelper(pid); ok {
			return fmt.Errorf("peer socket held by pid %d, which runs under the sandbox helper pid %d", pid, helper)
		}
	}
	return nil
}

// underSandboxHelper looks for a process whose argv[0] is the sandbox
// helper's name among pid and its ancestors. Every sandboxed command with a
// network is PID 1's descendant in its PID namespace, and PID 1 there is
// the helper, which adopts orphans (a double fork keeps the link). The
// command cannot rename its ancestors; a process that is not sandboxed and
// names itself so only refuses itself.
func underSandboxHelper(pid int) (int, bool) { return ancestorWhere(pid, isSandboxHelper) }

// isSandboxHelper reports whether pid's argv[0] names the sandbox helper.
func isSandboxHelper(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	arg0, _, _ := strings.Cut(string(b), "\x00")
	return filepath.Base(arg0) == sandbox.HelperName
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
// directory below one, and returns that leaf.
func (t *TreeKiller) sandboxedCgroup(id uint64) (string, bool) {
	t.mu.Lock()
	if dir, ok := t.sb.dead[id]; ok {
		t.mu.Unlock()
		return dir + " (removed)", true
	}
	leaves := make(map[string]uint64, len(t.sb.leaves))
	for dir, ino := range t.sb.leaves {
		if ino == id {
			t.mu.Unlock()
			return dir, true
		}
		leaves[dir] = ino
	}
	t.mu.Unlock()
	// A sub-cgroup made inside a sandboxed leaf: find its path.
	for leaf := range leaves {
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

// checkSocketOwners finds the processes holding the socket inode and
// refuses the peer if any of them belongs to a sandbox.
func (t *TreeKiller) checkSocketOwners(inode uint64) error {
	pids := socketOwners(inode)
	if len(pids) == 0 {
		return errors.New("no process holds the local peer socket " + strconv.FormatUint(inode, 10))
	}
	t.mu.Lock()
	roots := make(map[int]bool, len(t.sb.roots))
	nss := make(map[uint64]bool)
	for pid, r := range t.sb.roots {
		roots[pid] = true
		if r.ns != 0 {
			nss[r.ns] = true
		}
	}
	leaves := make([]string, 0, len(t.sb.leaves))
	for leaf := range t.sb.leaves {
		leaves = append(leaves, leaf)
	}
	t.mu.Unlock()
	if len(roots) == 0 && len(leaves) == 0 {
		return foreignSandboxed(pids)
	}
	for _, pid := range pids {
		if leaf := inSandboxedLeaf(pid, leaves); leaf != "" {
			return fmt.Errorf("peer socket held by pid %d in sandboxed cgroup %s", pid, leaf)
		}
		if inSandboxNS(pid, nss) {
			return fmt.Errorf("peer socket held by pid %d in a sandbox's PID namespace", pid)
		}
		if root, ok := descendsFrom(pid, roots); ok {
			return fmt.Errorf("peer socket held by pid %d, a descendant of sandboxed pid %d", pid, root)
		}
	}
	return foreignSandboxed(pids)
}

// socketOwners scans /proc/*/fd for "socket:[inode]".
func socketOwners(inode uint64) []int {
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + fd.Name()); err == nil && l == want {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// inSandboxedLeaf returns the sandboxed leaf that pid's cgroup v2 path is
// or lies below, or "".
func inSandboxedLeaf(pid int, leaves []string) string {
	if len(leaves) == 0 {
		return ""
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	mnt, err := cgroup2Mount()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		path := filepath.Join(mnt, rel)
		for _, leaf := range leaves {
			if path == leaf || strings.HasPrefix(path, leaf+"/") {
				return leaf
			}
		}
	}
	return ""
}

// inSandboxNS reports whether pid's PID namespace, or one of its parents,
// is in nss. NS_GET_PARENT fails at the namespace we live in.
func inSandboxNS(pid int, nss map[uint64]bool) bool {
	if len(nss) == 0 {
		return false
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	for depth := 0; depth < 32; depth++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			break
		}
		if nss[st.Ino] {
			_ = unix.Close(fd)
			return true
		}
		parent, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		_ = unix.Close(fd)
		if err != nil {
			return false
		}
		fd = parent
	}
	_ = unix.Close(fd)
	return false
}

// descendsFrom looks for one of roots among pid and its ancestors.
func descendsFrom(pid int, roots map[int]bool) (int, bool) {
	return ancestorWhere(pid, func(p int) bool { return roots[p] })
}

// ancestorWhere walks pid's parent links (bounded, stopping below init)
// and returns the first of them, pid included, for which match holds.
func ancestorWhere(pid int, match func(int) bool) (int, bool) {
	for i := 0; i < 4096 && pid > 1; i++ {
		if match(pid) {
			return pid, true
		}
		st, err := readStat(pid)
		if err != nil {
			return 0, false
		}
		pid = st.ppid
	}
	return 0, false
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
