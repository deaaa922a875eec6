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

	"golang.org/x/sys/unix"
)

// Bounds of the missing-path watch (docs/protocol.md §6.13).
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

	// polled reports that the last armed watch fell back to polling (tests).
	polled bool // guarded by mu
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
	if f, err := t.inotify(); err == nil {
		a.file = f
		w.polled = false
	} else {
		w.polled = true
	}
	w.cur = a
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		var changed bool
		if a.file != nil {
			changed = t.wait(a.file)
		} else {
			changed = t.poll(a.stop)
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
// their way, each reached without following a symbolic link. byWD
// maps inotify watch descriptors to directories.
type watchTarget struct {
	missing []string
	present string
	dirs    []string // existing directories to watch, deduplicated
	byWD    map[int32]string
}

// plan checks the paths and lists the directories to watch: every existing
// ancestor of each missing path and of present.
func plan(missing []string, present string) (*watchTarget, bool) {
	t := &watchTarget{missing: missing, present: present}
	if len(missing) == 0 {
		return t, false
	}
	seen := map[string]bool{}
	add := func(dirs []string) {
		for _, d := range dirs {
			if !seen[d] {
				seen[d] = true
				t.dirs = append(t.dirs, d)
			}
		}
	}
	for _, m := range missing {
		st, dirs := classify(m)
		if st != stateMissing {
			return t, false
		}
		add(dirs)
	}
	if present != "" {
		st, dirs := classify(present)
		if st != stateExists {
			return t, false
		}
		add(dirs)
	}
	return t, true
}

type pathState int

const (
	stateMissing   pathState = iota // a component does not exist
	stateExists                     // the path exists and is not a symbolic link
	stateUnwatched                  // a symbolic link or a non-directory on the way, or an error
)

// classify walks p from the root one component at a time, never following a
// symbolic link, and returns its state with the existing directories on the
// way (the root included; for an existing path, its ancestors).
func classify(p string) (pathState, []string) {
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			dirs := []string{}
			for d := path.Dir(p); ; d = path.Dir(d) {
				if _, err := os.Stat(d); err == nil {
					dirs = append(dirs, d)
				}
				if d == "/" {
					break
				}
			}
			return stateMissing, dirs
		}
		return stateUnwatched, nil
	}
	_ = fi
	return stateExists, []string{path.Dir(p)}
}

// inotify opens an inotify instance watching t.dirs. It fails when inotify
// is unavailable, its limits are reached or there are too many directories;
// the caller then polls.
func (t *watchTarget) inotify() (*os.File, error) {
	if len(t.dirs) > MaxWatchedDirs {
		return nil, errors.New("too many directories")
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	for _, d := range t.dirs {
		if err := t.addWatch(fd, d); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (t *watchTarget) addWatch(fd int, dir string) error {
	wd, err := unix.InotifyAddWatch(fd, dir, watchMask)
	if err != nil {
		return err
	}
	if t.byWD == nil {
		t.byWD = map[int32]string{}
	}
	t.byWD[int32(wd)] = dir
	return nil
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
			ev := (*unix.InotifyEvent)(unsafePointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				name = strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				return true // events were lost: say something changed
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

// poll is the fallback: it compares the paths' state every
// WatchPollInterval and reports the first change.
func (t *watchTarget) poll(stop <-chan struct{}) bool {
	before := t.snapshot()
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

// snapshot is the state of every watched path and directory in one string.
func (t *watchTarget) snapshot() string {
	var b strings.Builder
	for _, p := range append(append(append([]string{}, t.missing...), t.present), t.dirs...) {
		if p == "" {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			b.WriteString("-\n")
			continue
		}
		b.WriteString(strconv.FormatUint(st.Ino, 10) + " " + strconv.FormatInt(st.Ctim.Nano(), 10) + " " + strconv.FormatInt(st.Mtim.Nano(), 10) + "\n")
	}
	return b.String()
}
