//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	ossignal "os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
)

// Tree-killing modes, as reported by TreeKiller.Mode.
const (
	modeCgroup    = "cgroup"
	modeSubreaper = "subreaper"
)

const (
	releaseWait   = 500 * time.Millisecond // how long Close retries a busy leaf after a kill
	maxWalkPasses = 64                     // bound on /proc walks per kill (fork bombs)
)

// TreeKiller kills whole process trees, including descendants that called
// setsid and so escaped their process group (protocol.md §7.8 [ext]).
//
// In cgroup mode every process starts directly inside its own cgroup v2
// leaf (CLONE_INTO_CGROUP) under a directory the TreeKiller owns, and a kill
// writes cgroup.kill (or, before Linux 5.14, freezes the leaf and SIGKILLs
// its pids). This is exact: nothing can leave the leaf without privileges.
//
// In subreaper mode (no writable cgroup2) the server becomes a child
// subreaper, so orphans re-parent to it instead of init. A kill SIGSTOPs and
// then SIGKILLs every process reachable from the child by parent links, or
// sharing its session or group, repeating the /proc walk until it finds
// nothing new; a reaper goroutine reaps the orphans that exit. An escapee
// whose parents have all exited cannot be attributed to its process any
// more: it is killed by TreeKiller.Close. The reaper reaps only zombie
// children that are not tracked and not in the server's own session, so it
// never steals the status of a Process or of a child that other server code
// started without setsid. (Server code that starts children with setsid
// outside this package could lose their exit status in this mode, and so
// could Processes started without this TreeKiller.)
//
// Create one TreeKiller per server, pass it in Options.Tree, and Close it
// after every Process was closed. Its methods are safe for concurrent use.
type TreeKiller struct {
	log  *zap.Logger
	mode string // modeCgroup or modeSubreaper; immutable

	// cgroup mode, immutable after construction.
	dir     string        // owned directory <mount><our cgroup>/codex-exec-<pid>
	lockFD  int           // holds an flock on dir while we live (sweepStaleCgroups); -1: none
	hasKill bool          // cgroup.kill exists (Linux >= 5.14)
	seq     atomic.Uint64 // names the leaves

	// subreaper mode, immutable after construction.
	selfPid, selfSid int
	prevSubreaper    int32
	sigs             chan os.Signal // SIGCHLD; buffered
	kick             chan struct{}  // asks the reaper to run; buffered
	done             chan struct{}  // closed by Close: stops the reaper
	wg               sync.WaitGroup // the reaper goroutine

	mu      sync.Mutex          // guards the fields below; in subreaper mode held across every fork
	tracked map[int]struct{}    // subreaper: unreaped children owned by a Process
	pending map[string]struct{} // cgroup: leaves still busy after their Process ended
	sb      sandboxState        // what the peer check knows of sandboxed processes

	// per-process limits (cgroup mode), immutable after construction.
	limits    []leafLimit // control files written into each leaf
	v1        *pidsV1     // cgroup v1 pids fallback; nil without
	limitWarn sync.Once   // logs the first failure to apply a limit

	closeOnce sync.Once
	closeErr  error
}

// NewTreeKiller returns a TreeKiller in cgroup mode if a writable cgroup v2
// hierarchy and Linux >= 5.7 are available, else in subreaper mode. It
// never fails because a mode is unavailable; the reason for a fallback is
// logged at info level. A nil logger means no logging.
func NewTreeKiller(logger *zap.Logger) (*TreeKiller, error) {
	return newTreeKiller(logger, true, Limits{})
}

// NewLimitedTreeKiller is NewTreeKiller with per-process limits, applied
// to each cgroup leaf where the controllers are available (logged once
// where not). Subreaper mode applies none.
func NewLimitedTreeKiller(logger *zap.Logger, lim Limits) (*TreeKiller, error) {
	return newTreeKiller(logger, true, lim)
}

func newTreeKiller(logger *zap.Logger, tryCgroup bool, lim Limits) (*TreeKiller, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	t := &TreeKiller{log: logger}
	if tryCgroup {
		err := t.setupCgroup(lim)
		if err == nil {
			t.mode = modeCgroup
			logger.Debug("tree killer: cgroup mode", zap.String("dir", t.dir))
			return t, nil
		}
		logger.Info("tree killer: cgroup v2 unusable; using subreaper mode", zap.Error(err))
	}
	t.setupSubreaper()
	return t, nil
}

// Mode returns "cgroup" or "subreaper".
func (t *TreeKiller) Mode() string { return t.mode }

// Close kills every process still in the TreeKiller's cgroups (in subreaper
// mode: every orphan that re-parented to the server, and its descendants)
// and removes the owned directory, or stops the reaper and restores the
// subreaper flag. Call it after every Process was closed. Idempotent.
func (t *TreeKiller) Close() error {
	t.closeOnce.Do(func() {
		if t.mode == modeCgroup {
			t.closeErr = t.closeCgroup()
		} else {
			t.closeSubreaper()
		}
	})
	return t.closeErr
}

// setupCgroup creates the owned directory and checks that leaves work.
func (t *TreeKiller) setupCgroup(lim Limits) error {
	if !kernelAtLeast(5, 7) {
		return errors.New("CLONE_INTO_CGROUP needs Linux 5.7")
	}
	mnt, err := cgroup2Mount()
	if err != nil {
		return err
	}
	rel, err := selfCgroup()
	if err != nil {
		return err
	}
	base := filepath.Join(mnt, rel)
	// Moving a process between cgroups needs write access to the common
	// ancestor's cgroup.procs, which is our own cgroup.
	if err := unix.Access(filepath.Join(base, "cgroup.procs"), unix.W_OK); err != nil {
		return &os.PathError{Op: "access", Path: filepath.Join(base, "cgroup.procs"), Err: err}
	}
	var mirror string
	if mnt1, rel1, err := v1Hierarchy("pids"); err == nil {
		mirror = filepath.Join(mnt1, rel1)
	}
	sweepStaleCgroups(base, mirror)
	dir, lock, err := makeOwnedDir(base)
	if err != nil {
		return err
	}
	has := func(name string) bool { return unix.Access(filepath.Join(dir, name), unix.F_OK) == nil }
	t.hasKill = has("cgroup.kill")
	probe := filepath.Join(dir, "probe")
	err = unix.Mkdir(probe, 0o755)
	if err == nil {
		err = unix.Access(filepath.Join(probe, "cgroup.procs"), unix.W_OK)
		_ = unix.Rmdir(probe)
	}
	if err == nil && !t.hasKill && !has("cgroup.freeze") {
		err = errors.New("neither cgroup.kill nor cgroup.freeze")
	}
	if err != nil {
		_ = unix.Close(lock)
		_ = unix.Rmdir(dir)
		return fmt.Errorf("cgroup leaf in %s: %w", dir, err)
	}
	t.dir = dir
	t.lockFD = lock
	t.pending = make(map[string]struct{})
	t.setupLimits(base, lim)
	return nil
}

// makeOwnedDir creates base/codex-exec-<pid>[-n] and locks it (the proof
// of ownership sweepStaleCgroups honours). Another server's sweep may take
// the directory between our mkdir and our lock; then it is gone or no
// longer the inode we locked, and the next name is tried.
func makeOwnedDir(base string) (string, int, error) {
	for i := 0; i < 10; i++ {
		dir := filepath.Join(base, "codex-exec-"+strconv.Itoa(os.Getpid()))
		if i > 0 {
			dir += "-" + strconv.Itoa(i) // stale directory of a dead server with our pid
		}
		if err := unix.Mkdir(dir, 0o755); err != nil {
			if err == unix.EEXIST {
				continue
			}
			return "", -1, &os.PathError{Op: "mkdir", Path: dir, Err: err}
		}
		lock, err := lockDir(dir)
		if err == unix.ENOENT || err == unix.EWOULDBLOCK {
			continue // swept, or being swept, by another server
		}
		if err != nil {
			return dir, -1, nil // no flock here: run unproven rather than not at all
		}
		var held, now unix.Stat_t
		if unix.Fstat(lock, &held) == nil && unix.Stat(dir, &now) == nil && held.Ino == now.Ino {
			return dir, lock, nil
		}
		_ = unix.Close(lock)
	}
	return "", -1, fmt.Errorf("no cgroup directory of our own under %s", base)
}

// sweepStaleCgroups removes the cgroup directories of earlier servers that
// died without cleaning up (SIGKILL, a crash): "codex-exec-<pid>[-n]" under
// base whose owner is gone. Whatever still runs in them was left by that
// server, so it is killed, as that server would have done; then the leaves
// and the directory are removed, and so is the directory of the same name
// under each of mirrors (the cgroup v1 pids fallback).
//
// Ownership is proven by the flock a live server holds on its own
// directory (lockDir): the pid in the name means nothing to a server in
// another PID namespace sharing this cgroup tree. A directory is swept
// only while we hold its lock, and only if its pid is not alive in our
// namespace either (a server of an earlier version holds no lock).
// Failures are ignored (best effort).
func sweepStaleCgroups(base string, mirrors ...string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "codex-exec-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		dir := filepath.Join(base, e.Name())
		lock, err := lockDir(dir)
		if err != nil {
			continue // its server is alive, maybe in another PID namespace
		}
		if pid == os.Getpid() {
			_ = unix.Close(lock)
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || err == unix.EPERM {
			_ = unix.Close(lock)
			continue // alive here: a server without the lock, or a reused pid
		}
		_ = writeFile(filepath.Join(dir, "cgroup.kill"), "1")
		for _, d := range append([]string{dir}, mirrorDirs(mirrors, e.Name())...) {
			leaves, _ := os.ReadDir(d)
			for _, l := range leaves {
				if l.IsDir() {
					_ = rmdirRetry(filepath.Join(d, l.Name()), 200*time.Millisecond)
				}
			}
			_ = rmdirRetry(d, 200*time.Millisecond)
		}
		_ = unix.Close(lock)
	}
}

func mirrorDirs(mirrors []string, name string) []string {
	var out []string
	for _, m := range mirrors {
		if m != "" {
			out = append(out, filepath.Join(m, name))
		}
	}
	return out
}

// lockDir opens dir and takes an exclusive flock on it without waiting; a
// lock held by a live server fails with EWOULDBLOCK. The kernel drops the
// lock when its holder dies, whatever the PID namespace. The returned fd
// (close-on-exec) holds the lock until closed.
func lockDir(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// cgroupSlot is a leaf prepared for one spawn: its path, an O_RDONLY fd
// for CLONE_INTO_CGROUP (-1 without a leaf) and the paired cgroup v1 pids
// leaf ("" without).
type cgroupSlot struct {
	dir  string
	fd   int
	pids string
}

// closeFD closes the leaf fd once the child was cloned into it.
func (s cgroupSlot) closeFD() {
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
	}
}

// prepare creates the cgroup leaf for the next spawn, and records it as a
// sandboxed process's leaf if sandboxed is set. Outside cgroup mode it
// returns an empty slot.
func (t *TreeKiller) prepare(sandboxed bool) (cgroupSlot, error) {
	slot := cgroupSlot{fd: -1}
	if t.mode != modeCgroup {
		return slot, nil
	}
	t.sweep()
	dir := filepath.Join(t.dir, strconv.FormatUint(t.seq.Add(1), 10))
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return slot, &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	t.applyLimits(dir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return slot, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if sandboxed {
		if err := t.noteSandboxedLeaf(dir, fd); err != nil {
			_ = unix.Close(fd)
			_ = unix.Rmdir(dir)
			return slot, err
		}
	}
	return cgroupSlot{dir: dir, fd: fd, pids: t.prepareV1(dir)}, nil
}

// join moves pid into the leaf dir, for kernels that refused
// CLONE_INTO_CGROUP. Descendants forked before the move escape the leaf.
func (t *TreeKiller) join(dir string, pid int) error {
	if dir == "" {
		return nil
	}
	return writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
}

// kill SIGKILLs the tree of the process pid: its cgroup leaf, or in
// subreaper mode everything the /proc walk attributes to it. rootAlive says
// that pid is not reaped yet (the caller holds Process.mu).
func (t *TreeKiller) kill(pid int, leaf string, rootAlive bool) error {
	if t.mode == modeCgroup {
		if leaf == "" {
			return nil
		}
		return t.killCgroup(leaf)
	}
	var roots []int
	if rootAlive {
		roots = []int{pid}
	}
	t.killWalk(roots, pid) // the child called setsid: sid = pgid = pid
	t.kickReaper()
	return nil
}

// killCgroup kills every process in the cgroup dir and its descendants.
func (t *TreeKiller) killCgroup(dir string) error {
	if t.hasKill {
		err := writeFile(filepath.Join(dir, "cgroup.kill"), "1")
		if errors.Is(err, unix.ENOENT) {
			return nil // leaf already removed: nothing left to kill
		}
		return err
	}
	// Freezing stops forks; frozen tasks still die of SIGKILL in cgroup v2.
	freeze := filepath.Join(dir, "cgroup.freeze")
	if err := writeFile(freeze, "1"); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer func() { _ = writeFile(freeze, "0") }()
	for i := 0; i < maxWalkPasses; i++ {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			return nil
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(time.Millisecond)
	}
	return errors.New("cgroup " + dir + " still populated after kill")
}

// release removes the cgroup leaf of a finished process. If it is still
// busy (a descendant outlived the process), it retries for up to
// releaseWait when wait is set, and otherwise leaves it to a later sweep.
func (t *TreeKiller) release(leaf string, wait bool) {
	if t == nil || leaf == "" {
		return
	}
	timeout := time.Duration(0)
	if wait {
		timeout = releaseWait
	}
	err := rmdirRetry(leaf, timeout)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		delete(t.pending, leaf)
		t.forgetLeaf(leaf)
		t.releaseV1(leaf)
		return
	}
	if err != unix.EBUSY {
		t.log.Warn("removing cgroup leaf", zap.String("dir", leaf), zap.Error(err))
	}
	t.pending[leaf] = struct{}{}
}

// sweep retries the removal of busy leaves whose descendants may be gone.
func (t *TreeKiller) sweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for leaf := range t.pending {
		if err := unix.Rmdir(leaf); err == nil || err == unix.ENOENT {
			delete(t.pending, leaf)
			t.forgetLeaf(leaf)
			t.releaseV1(leaf)
		}
	}
}

// closeCgroup kills everything under the owned directory and removes it.
func (t *TreeKiller) closeCgroup() error {
	var errs []error
	if t.hasKill {
		if err := t.killCgroup(t.dir); err != nil {
			errs = append(errs, err)
		}
	}
	entries, err := os.ReadDir(t.dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		leaf := filepath.Join(t.dir, e.Name())
		if !t.hasKill {
			if err := t.killCgroup(leaf); err != nil {
				errs = append(errs, err)
			}
		}
		if err := rmdirRetry(leaf, releaseWait); err != nil {
			errs = append(errs, &os.PathError{Op: "rmdir", Path: leaf, Err: err})
		}
	}
	if err := rmdirRetry(t.dir, releaseWait); err != nil {
		errs = append(errs, &os.PathError{Op: "rmdir", Path: t.dir, Err: err})
	}
	if err := t.closeV1(); err != nil {
		errs = append(errs, err)
	}
	if t.lockFD >= 0 {
		_ = unix.Close(t.lockFD)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("proc: close tree killer: %w", err)
	}
	return nil
}

// rmdirRetry removes dir, retrying EBUSY with backoff for up to timeout
// (killed tasks leave the cgroup asynchronously). ENOENT counts as success.
func rmdirRetry(dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		// A cgroup with child cgroups stays EBUSY however long one waits:
		// remove those first (a sub-cgroup made inside a leaf, one that a
		// dead server left behind).
		removeChildCgroups(dir, 0)
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY || time.Now().After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// removeChildCgroups removes the (empty) cgroups below dir, deepest
// first, once each; a populated one stays and its parent with it.
func removeChildCgroups(dir string, depth int) {
	if depth > 64 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			sub := filepath.Join(dir, e.Name())
			removeChildCgroups(sub, depth+1)
			_ = unix.Rmdir(sub)
		}
	}
}

// writeFile writes s to an existing file (cgroupfs files cannot be created
// or truncated).
func writeFile(path, s string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(s)); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// cgroup2Mount returns the mount point of the cgroup v2 hierarchy.
func cgroup2Mount() (string, error) { return mountinfo.Cgroup2Mount() }

// selfCgroup returns our cgroup v2 path from the "0::" line of
// /proc/self/cgroup.
func selfCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			if strings.HasSuffix(rel, " (deleted)") {
				return "", errors.New("our cgroup was deleted")
			}
			return rel, nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

// kernelAtLeast reports whether the running kernel is at least major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return ma > major || ma == major && mi >= minor
}

// setupSubreaper makes the server a child subreaper and starts the reaper.
func (t *TreeKiller) setupSubreaper() {
	t.mode = modeSubreaper
	t.selfPid = os.Getpid()
	t.selfSid, _ = unix.Getsid(0)
	_ = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&t.prevSubreaper)), 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.log.Warn("PR_SET_CHILD_SUBREAPER; escaped orphans will re-parent to init", zap.Error(err))
	}
	t.tracked = make(map[int]struct{})
	t.sigs = make(chan os.Signal, 1)
	t.kick = make(chan struct{}, 1)
	t.done = make(chan struct{})
	ossignal.Notify(t.sigs, unix.SIGCHLD)
	t.wg.Add(1)
	go t.reapLoop()
}

// closeSubreaper stops the reaper, kills and reaps the remaining orphans,
// and restores the subreaper flag.
func (t *TreeKiller) closeSubreaper() {
	ossignal.Stop(t.sigs)
	close(t.done)
	t.wg.Wait()
	if alive := t.orphans(); len(alive) > 0 {
		t.killWalk(alive, 0)
	}
	deadline := time.Now().Add(releaseWait)
	for t.reapOrphans() > 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if t.prevSubreaper == 0 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
}

// lockSpawn excludes the orphan reaper from a fork until its pid is
// tracked; without that, a child that exits at once could be reaped as an
// orphan. It returns the unlock function.
func (t *TreeKiller) lockSpawn() func() {
	if t == nil || t.mode != modeSubreaper {
		return func() {}
	}
	t.mu.Lock()
	return t.mu.Unlock
}

// track records a new child. Called between lockSpawn and its unlock.
func (t *TreeKiller) track(pid int) {
	if t != nil && t.mode == modeSubreaper {
		t.tracked[pid] = struct{}{}
	}
}

// untrack forgets a reaped child; its orphans are now the reaper's.
func (t *TreeKiller) untrack(pid int) {
	t.mu.Lock()
	t.untrackSandboxed(pid)
	t.mu.Unlock()
	if t.mode != modeSubreaper {
		return
	}
	t.mu.Lock()
	delete(t.tracked, pid)
	t.mu.Unlock()
	t.kickReaper()
}

// kickReaper asks the reaper goroutine for a pass without blocking.
func (t *TreeKiller) kickReaper() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// reapLoop reaps orphans whenever a child changes state.
func (t *TreeKiller) reapLoop() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		case <-t.sigs:
		case <-t.kick:
		}
		t.reapOrphans()
	}
}

// reapOrphans reaps zombie orphans and returns how many orphans are left.
// A multi-threaded orphan shows 'Z' as soon as its main thread exits but
// is waitable only once every thread has; it counts as left until then
// (its SIGCHLD comes when it is waitable).
func (t *TreeKiller) reapOrphans() (left int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.untrackedChildren() {
		if st.state != 'Z' {
			left++
			continue
		}
		var si siginfo
		if err := waitid(unix.P_PID, st.pid, &si, unix.WEXITED|unix.WNOHANG); err == nil && si.pid == 0 {
			left++
		}
	}
	return left
}

// orphans returns the live orphans that re-parented to the server.
func (t *TreeKiller) orphans() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var pids []int
	for _, st := range t.untrackedChildren() {
		if st.state != 'Z' {
			pids = append(pids, st.pid)
		}
	}
	return pids
}

// untrackedChildren lists our children that no Process owns and that are
// not in the server's session. Called with t.mu held.
func (t *TreeKiller) untrackedChildren() []procStat {
	var out []procStat
	for _, pid := range childPids(t.selfPid) {
		if _, ok := t.tracked[pid]; ok {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != t.selfPid || st.sid == t.selfSid {
			continue
		}
		out = append(out, st)
	}
	return out
}

// killWalk SIGKILLs the roots, every process in session or group sid (if
// non-zero) and all their descendants. It SIGSTOPs what it finds first and
// walks /proc again until nothing new shows up, so a process forking during
// the walk cannot leave a child behind.
func (t *TreeKiller) killWalk(roots []int, sid int) {
	stopped := make(map[int]struct{})
	for pass := 0; pass < maxWalkPasses; pass++ {
		procs := scanProcs()
		kids := make(map[int][]int, len(procs))
		queue := append([]int(nil), roots...)
		for _, st := range procs {
			kids[st.ppid] = append(kids[st.ppid], st.pid)
			if sid > 0 && (st.sid == sid || st.pgrp == sid) {
				queue = append(queue, st.pid)
			}
		}
		for pid := range stopped {
			queue = append(queue, pid)
		}
		found := false
		seen := make(map[int]bool)
		for len(queue) > 0 {
			pid := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if seen[pid] || pid <= 1 || pid == t.selfPid {
				continue
			}
			seen[pid] = true
			queue = append(queue, kids[pid]...)
			if _, ok := stopped[pid]; !ok && unix.Kill(pid, unix.SIGSTOP) == nil {
				stopped[pid] = struct{}{}
				found = true
			}
		}
		if !found {
			break
		}
	}
	for pid := range stopped {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// procStat is the part of /proc/<pid>/stat the walks need.
type procStat struct {
	pid, ppid, pgrp, sid int
	state                byte
}

// readStat parses /proc/<pid>/stat. The command name may contain spaces
// and parentheses, so parsing starts after the last ')'.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 4 || len(f[0]) != 1 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	st := procStat{pid: pid, state: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.sid, _ = strconv.Atoi(f[3])
	return st, nil
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
