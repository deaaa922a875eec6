//go:build linux

// The watchdog process itself: it learns what the server owns, and when
// the server is gone (its socket ends while the watchdog lives), kills it
// all and removes the placeholders (docs/operations.md §5).

package proc

import (
	"os"
	ossignal "os/signal"
	"strconv"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/fsat"
)

// The watchdog's fds: its end of the socket to the server, and the
// server's record file (with --records).
const (
	watchdogFD = 3
	recordsFD  = 4
)

// watchState is what the watchdog knows of its server.
type watchState struct {
	log      *zap.Logger
	cgroups  []ownedCgroup
	children map[int]childFDs
	held     map[uint64]heldHandle
	records  *recordFile // nil when the state directory is unusable
	remove   RemoveOrphaned
}

// RunWatchdog is the watchdog process (WatchdogName): it reads the
// server's messages on fd 3 until the socket reaches end of file, which
// means the server is gone (a server that stops cleanly kills its
// watchdog first, with nothing left to do): then it kills the processes the server started and removes its
// placeholders, logs what it did, and exits 0. It ignores SIGINT,
// SIGTERM and SIGHUP. With records, fd 4 is the server's record file: it
// marks there what it dealt with, and removes the file when nothing is
// left for the next server. remove removes a placeholder the server held
// (sandbox.RemoveOrphanedPlaceholder).
func RunWatchdog(log *zap.Logger, records bool, remove RemoveOrphaned) int {
	ossignal.Ignore(unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGPIPE)
	s := &watchState{log: log, children: map[int]childFDs{}, held: map[uint64]heldHandle{}, remove: remove}
	if records {
		s.records = recordFromFD(recordsFD)
	}
	buf := make([]byte, maxMessage)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(watchdogFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			s.serverGone()
			return 0
		}
		m, err := decodeMsg(buf[:n], oob[:oobn])
		if err != nil {
			closeFDs(m.fds)
			log.Warn("watchdog: malformed message", zap.Error(err))
			continue
		}
		s.apply(m)
	}
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// apply records one message of the server.
func (s *watchState) apply(m wireMsg) {
	switch m.kind {
	case msgCgroup:
		s.cgroups = append(s.cgroups, ownedCgroup{fd: m.fds[0], dir: m.text[0], mirrors: m.text[1:]})
	case msgChild:
		if old, ok := s.children[int(m.token)]; ok {
			old.close()
		}
		c := childFDs{pidfd: m.fds[0], master: -1}
		if len(m.fds) > 1 {
			c.master = m.fds[1]
		}
		s.children[int(m.token)] = c
	case msgForget:
		if c, ok := s.children[int(m.token)]; ok {
			c.close()
			delete(s.children, int(m.token))
		}
	case msgHold:
		h := heldHandle{parentfd: m.fds[0], fd: m.fds[1], name: m.text[0], id: m.id}
		s.held[m.token] = h
	case msgLet:
		if h, ok := s.held[m.token]; ok {
			closeFDs([]int{h.parentfd, h.fd})
			delete(s.held, m.token)
		}
		ack, _ := wireMsg{kind: msgAck, token: m.token}.encode()
		_ = unix.Sendmsg(watchdogFD, ack, nil, nil, unix.MSG_NOSIGNAL)
	default:
		closeFDs(m.fds)
	}
}

// serverGone kills what the server owned and removes its placeholders.
func (s *watchState) serverGone() {
	start := time.Now()
	var killed []int
	var leaves []string
	for _, c := range s.cgroups {
		pids, names := killOwnedCgroup(c.fd, c.dir, c.mirrors)
		killed, leaves = append(killed, pids...), append(leaves, names...)
		_ = unix.Close(c.fd)
	}
	if len(s.children) > 0 {
		killed = append(killed, killChildTrees(s.children)...)
	}
	removed, kept := 0, 0
	for tok, h := range s.held {
		ok, err := s.remove(h.parentfd, h.fd, h.name, h.id)
		switch {
		case ok:
			removed++
			s.records.remove(tok)
		case err != nil:
			kept++ // left in the record for the next server
			s.log.Warn("watchdog: cannot remove a placeholder", zap.String("name", h.name), zap.Error(err))
		default:
			s.records.remove(tok) // another run holds it, or it is not ours any more
		}
		closeFDs([]int{h.parentfd, h.fd})
	}
	s.records.close(kept > 0)
	if len(killed) == 0 && len(leaves) == 0 && len(s.held) == 0 {
		s.log.Info("watchdog: the server is gone; it left nothing")
		return
	}
	s.log.Warn("watchdog: the server is gone without stopping; killed what it started and removed its placeholders",
		zap.Int("processes_killed", len(killed)), zap.Ints("pids", killed), zap.Strings("cgroup_leaves", leaves),
		zap.Int("placeholders_removed", removed), zap.Int("placeholders_left", len(s.held)-removed),
		zap.Duration("took", time.Since(start)))
}

// killChildTrees kills, for each child whose pidfd still names a live
// process, its session, its process group and its descendants, stopping
// them first so that none forks away meanwhile; it returns the pids.
// Terminals are closed last: their hangup would kill a session leader,
// whose jobs would re-parent to init before the walk found them.
func killChildTrees(children map[int]childFDs) []int {
	var roots []int
	groups := map[int]bool{}
	for pid, c := range children {
		// Through the pidfd: a reused pid is never signalled.
		if unix.PidfdSendSignal(c.pidfd, unix.SIGSTOP, nil, 0) == nil {
			roots = append(roots, pid)
			groups[pid] = true // started with setsid: sid = pgid = pid
		}
	}
	var killed []int
	if len(roots) > 0 {
		killed = stopAndKill(roots, groups, os.Getpid())
	}
	for _, c := range children {
		c.close()
	}
	return killed
}

// killOwnedCgroup kills every process below the owned cgroup directory
// whose handle is fd (cgroup.kill, else each cgroup frozen and its
// processes SIGKILLed), and removes its cgroups, the directory (if dir
// still names the handle's directory) and the mirrors. It returns the
// pids it found and the names of the leaves.
func killOwnedCgroup(fd int, dir string, mirrors []string) (pids []int, leaves []string) {
	pids, leaves = cgroupProcs(fd, "", 0)
	if err := writeAt(fd, "cgroup.kill", "1"); err != nil {
		for _, l := range leaves {
			freezeKill(fd, l)
		}
	}
	var held, now unix.Stat_t
	if unix.Fstat(fd, &held) == nil && unix.Stat(dir, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
		removeOwnedDir(dir, mirrors)
	}
	return pids, leaves
}

// cgroupProcs lists the pids in the cgroup rel below dirfd and in its
// descendants, and the names of the cgroups below rel.
func cgroupProcs(dirfd int, rel string, depth int) (pids []int, cgroups []string) {
	if depth > 64 {
		return nil, nil
	}
	at := rel
	if at == "" {
		at = "."
	}
	if data, err := readAt(dirfd, at+"/cgroup.procs"); err == nil {
		for _, f := range splitFields(data) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	sub, err := fsat.Open(dirfd, at, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return pids, nil
	}
	ents, _ := dirEntries(sub)
	_ = unix.Close(sub)
	for _, e := range ents {
		name := e
		if rel != "" {
			name = rel + "/" + e
		}
		cgroups = append(cgroups, name)
		p, c := cgroupProcs(dirfd, name, depth+1)
		pids, cgroups = append(pids, p...), append(cgroups, c...)
	}
	return pids, cgroups
}

// freezeKill freezes the cgroup rel below dirfd, SIGKILLs its processes
// and thaws it (frozen tasks die of SIGKILL in cgroup v2): the way before
// cgroup.kill (Linux 5.14).
func freezeKill(dirfd int, rel string) {
	if writeAt(dirfd, rel+"/cgroup.freeze", "1") != nil {
		return
	}
	defer func() { _ = writeAt(dirfd, rel+"/cgroup.freeze", "0") }()
	for i := 0; i < maxWalkPasses; i++ {
		data, err := readAt(dirfd, rel+"/cgroup.procs")
		f := splitFields(data)
		if err != nil || len(f) == 0 {
			return
		}
		for _, s := range f {
			if pid, err := strconv.Atoi(s); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(time.Millisecond)
	}
}
