package fshelper

import (
	"context"
	"errors"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Bounds of the missing-path watch (docs/protocol.md §6.11.1).
const (
	// MaxWatchedDirs is the most directories one connection's watch holds
	// inotify watches on; a larger watch is polled instead.
	MaxWatchedDirs = 256

	// WatchPollInterval is how often a polled watch looks again.
	WatchPollInterval = 250 * time.Millisecond
)

// inotify events that fire a watch: changes of names and of metadata, never
// reads (the reference ignores an open or a read of the present path).
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR

// MissingWatcher is the single watch slot of one connection
// (fs/watchMissing). Watch replaces the slot; an armed watch calls fire once
// with its id, from its own goroutine, and disarms. Close stops the watch and
// waits for its goroutine. Safe for concurrent use.
type MissingWatcher struct {
	fire func(ctx context.Context, id uint64)

	mu     sync.Mutex
	seen   bool   // guarded by mu: a watch request was considered
	lastID uint64 // guarded by mu: the largest id considered
	cur    *armed // guarded by mu: the armed watch, or nil
	closed bool   // guarded by mu
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc

	// polled reports that the last armed watch fell back to polling;
	// forcePoll makes every watch poll (tests).
	polled    bool // guarded by mu
	forcePoll bool // guarded by mu
}

// NewMissingWatcher returns an empty slot whose watches call fire.
func NewMissingWatcher(fire func(ctx context.Context, id uint64)) *MissingWatcher {
	w := &MissingWatcher{fire: fire}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w
}

// armed is one armed watch.
type armed struct {
	id   uint64
	stop chan struct{}
	once sync.Once
	file *os.File // the inotify fd, nil when polled
}

func (a *armed) halt() {
	a.once.Do(func() {
		close(a.stop)
		if a.file != nil {
			_ = a.file.Close() // unblocks the reader
		}
	})
}

// Watch considers a watch request, as the reference does: an id not greater
// than every id seen before changes nothing and answers false; otherwise the
// slot is replaced, and the new watch is armed (true) only if every missing
// path is missing and present, when given, exists. missing and present are
// native absolute paths.
func (w *MissingWatcher) Watch(id uint64, missing []string, present string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || (w.seen && id <= w.lastID) {
		return false
	}
	w.seen, w.lastID = true, id
	if w.cur != nil {
		w.cur.halt()
		w.cur = nil
	}
	t, ok := plan(missing, present)
	if !ok {
		return false
	}
	a := &armed{id: id, stop: make(chan struct{})}
	if w.forcePoll {
		t.over = true
	}
	var before string
	if f, err := t.inotify(); err == nil {
		a.file = f
		w.polled = false
	} else {
		w.polled = true
		before = t.snapshot() // now: a change right after the answer counts
	}
	t.closeFDs()
	w.cur = a
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		var changed bool
		if a.file != nil {
			changed = t.wait(a.file)
		} else {
			changed = t.poll(before, a.stop)
		}
		if changed && w.take(a) {
			w.fire(w.ctx, a.id)
		}
	}()
	return true
}

// take disarms a if it is still the slot's watch.
func (w *MissingWatcher) take(a *armed) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != a {
		return false
	}
	w.cur = nil
	a.halt()
	return true
}

// Close drops the watch, cancels a notification being sent and waits for
// the watch's goroutine. Later Watch calls answer false.
func (w *MissingWatcher) Close() {
	w.mu.Lock()
	w.closed = true
	if w.cur != nil {
		w.cur.halt()
		w.cur = nil
	}
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}

// target is what an armed watch looks at: the paths and the directories on
// their way, each reached without following a symbolic link.
type watchTarget struct {
	missing []string
	present string
	dirs    []string         // existing directories to watch, in the order opened
	fds     map[string]int   // their O_PATH descriptors, until armed
	temp    []int            // descriptors beyond MaxWatchedDirs, closed after each walk
	over    bool             // more than MaxWatchedDirs directories: polled
	byWD    map[int32]string // inotify watch descriptors to directories
}

// plan checks the paths and opens the directories to watch: every existing
// ancestor of each missing path and of present, each reached from the root
// one component at a time without following a symbolic link. The caller
// closes t.fds (closeFDs).
func plan(missing []string, present string) (*watchTarget, bool) {
	t := &watchTarget{missing: missing, present: present, fds: map[string]int{}}
	if len(missing) == 0 {
		return t, false
	}
	for _, m := range missing {
		if classify(m, t) != stateMissing {
			t.closeFDs()
			return t, false
		}
	}
	if present != "" && classify(present, t) != stateExists {
		t.closeFDs()
		return t, false
	}
	return t, true
}

type pathState int

const (
	stateMissing   pathState = iota // a component does not exist
	stateExists                     // the path exists and is not a symbolic link
	stateUnwatched                  // a symbolic link or a non-directory on the way, or an error
)

// pathFlags open a directory on the way: O_NOFOLLOW with O_DIRECTORY
// refuses a symbolic link (ELOOP or ENOTDIR) instead of following it.
const pathFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC

// classify walks p from the root one component at a time with openat and
// pathFlags, so no symbolic link is ever followed, and records the
// directories it opened in t (kept open, so that the watch is put on exactly
// the directories checked; a link swapped in later is never followed). An
// existing symbolic link anywhere on p, the last component included, makes
// p unwatched, as a non-directory before the last component does.
func classify(p string, t *watchTarget) pathState {
	defer func() {
		for _, fd := range t.temp {
			_ = unix.Close(fd)
		}
		t.temp = t.temp[:0]
	}()
	dir := "/"
	fd, err := t.open(-1, "/", "/")
	if err != nil {
		return stateUnwatched
	}
	names := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if p == "/" {
		return stateExists
	}
	for i, name := range names {
		if i == len(names)-1 {
			st, err := statAt(fd, name, unix.AT_SYMLINK_NOFOLLOW)
			switch {
			case errors.Is(err, unix.ENOENT):
				return stateMissing
			case err != nil, st.isSymlink():
				return stateUnwatched
			}
			return stateExists
		}
		dir = path.Join(dir, name)
		fd, err = t.open(fd, name, dir)
		switch {
		case errors.Is(err, unix.ENOENT):
			return stateMissing
		case err != nil:
			return stateUnwatched
		}
	}
	return stateUnwatched
}

// open opens name below the directory parent (root when parent is -1) as
// dir, once per watch: a directory seen before reuses its descriptor.
func (t *watchTarget) open(parent int, name, dir string) (int, error) {
	if fd, ok := t.fds[dir]; ok {
		return fd, nil
	}
	var fd int
	var err error
	if parent < 0 {
		fd, err = retryEINTR(func() (int, error) { return unix.Open(name, pathFlags, 0) })
	} else {
		fd, err = retryEINTR(func() (int, error) { return unix.Openat(parent, name, pathFlags, 0) })
	}
	if err != nil {
		return -1, err
	}
	if len(t.fds) >= MaxWatchedDirs {
		t.over = true
		t.temp = append(t.temp, fd)
		return fd, nil
	}
	t.fds[dir] = fd
	t.dirs = append(t.dirs, dir)
	return fd, nil
}

func (t *watchTarget) closeFDs() {
	for d, fd := range t.fds {
		_ = unix.Close(fd)
		delete(t.fds, d)
	}
}

// inotify opens an inotify instance watching t.dirs, each through its open
// descriptor (/proc/self/fd/N names the directory that was checked, whatever
// its path now leads to). It fails when inotify or /proc is unavailable,
// inotify's limits are reached or there are more than MaxWatchedDirs
// directories; the caller then polls.
func (t *watchTarget) inotify() (*os.File, error) {
	if t.over {
		return nil, errors.New("too many directories")
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	t.byWD = map[int32]string{}
	for _, d := range t.dirs {
		wd, err := unix.InotifyAddWatch(fd, "/proc/self/fd/"+strconv.Itoa(t.fds[d]), watchMask)
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		t.byWD[int32(wd)] = d
	}
	return f, nil
}

// wait reads events until one concerns a watched path (it, or one of its
// ancestors, changed), or the file is closed. wds maps to directories.
func (t *watchTarget) wait(f *os.File) bool {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			return false
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				name = strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&(unix.IN_Q_OVERFLOW|unix.IN_UNMOUNT) != 0 {
				return true // events were lost, or a watched folder went: say something changed
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				continue
			}
			dir, ok := t.byWD[ev.Wd]
			if !ok {
				continue
			}
			p := dir
			if name != "" {
				p = path.Join(dir, name)
			}
			if t.concerns(p) {
				return true
			}
		}
	}
}

// concerns reports whether a change at p can change a watched path: p is a
// missing path or present, or an ancestor of one.
func (t *watchTarget) concerns(p string) bool {
	for _, m := range t.missing {
		if within(m, p) {
			return true
		}
	}
	return t.present != "" && within(t.present, p)
}

// within reports whether p is anc or below it.
func within(p, anc string) bool {
	return p == anc || anc == "/" || strings.HasPrefix(p, anc+"/")
}

// poll is the fallback: it compares the paths' state with before every
// WatchPollInterval and reports the first change.
func (t *watchTarget) poll(before string, stop <-chan struct{}) bool {
	tick := time.NewTicker(WatchPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return false
		case <-tick.C:
			if t.snapshot() != before {
				return true
			}
		}
	}
}

// snapshot is the state of every watched path in one string: for a
// missing path its deepest existing ancestor, for present its inode and
// change times, for the watched directories their inodes.
func (t *watchTarget) snapshot() string {
	var b strings.Builder
	stamp := func(p string) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			b.WriteString("-\n")
			return
		}
		b.WriteString(p + " " + strconv.FormatUint(st.Ino, 10) + " " + strconv.FormatInt(st.Ctim.Nano(), 10) + " " + strconv.FormatInt(st.Mtim.Nano(), 10) + "\n")
	}
	for _, m := range t.missing {
		for p := m; ; p = path.Dir(p) {
			var st unix.Stat_t
			if unix.Lstat(p, &st) == nil || p == "/" {
				b.WriteString(p + " " + strconv.FormatUint(st.Ino, 10) + "\n")
				break
			}
		}
	}
	if t.present != "" {
		stamp(t.present)
	}
	for _, d := range t.dirs {
		// The inode only: a sibling created in d changes d's times, and
		// must not fire (as with inotify); d renamed or replaced does.
		var st unix.Stat_t
		_ = unix.Lstat(d, &st)
		b.WriteString(d + " " + strconv.FormatUint(st.Ino, 10) + "\n")
	}
	return b.String()
}
