//go:build linux

// The watchdog's records of the placeholders its server holds, kept in
// the runtime state directory so that the next server removes those a
// watchdog that died with its server could not (docs/operations.md §5).

package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/fsat"
)

// DefaultStateDir is the runtime state directory of a server run by this
// user: /run/codex-exec for root, $XDG_RUNTIME_DIR/codex-exec when set,
// else codex-exec-<uid> in the temporary directory.
func DefaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/run/codex-exec"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "codex-exec")
	}
	return filepath.Join(os.TempDir(), "codex-exec-"+strconv.Itoa(os.Geteuid()))
}

// recordFile is the record of the placeholders a server's runs hold:
// one line per placeholder held ("+", written by the server before the
// run goes on) or let go or dealt with ("-"), in a file locked with an
// exclusive flock by the server, whose watchdog shares the open file
// description (so the lock stays while either lives). A nil *recordFile
// records nothing.
type recordFile struct {
	mu   sync.Mutex
	f    *os.File
	path string
	live map[uint64]string // the "+" lines of what is held now, by token
	dead int               // lines written that no longer count
}

// compactAfter is how many lines that no longer count a record holds
// before it is rewritten with the live ones alone.
const compactAfter = 1024

const recordPrefix, recordSuffix = "watchdog-", ".rec"

// stateDir makes dir (mode 0700) if missing and checks that it is a
// directory of ours that no one else can write, not a symlink. It
// returns a handle on it (the caller closes it): what is checked is what
// is read.
func stateDir(dir string) (int, error) {
	if dir == "" {
		return -1, fmt.Errorf("no state directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return -1, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is not a directory of uid %d that only it can write", dir, os.Geteuid())
	}
	return fd, nil
}

// createRecords makes and locks a new record file in dir (a server's, at
// start-up). A starting
// server's sweep may take the file between its creation and our lock
// (and remove it, empty); then another is made.
func createRecords(dir string) (*recordFile, error) {
	dfd, err := stateDir(dir)
	if err != nil {
		return nil, err
	}
	unix.Close(dfd)
	for try := 0; try < 10; try++ {
		f, err := os.CreateTemp(dir, recordPrefix+"*"+recordSuffix)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			_ = os.Remove(f.Name())
			f.Close()
			return nil, err
		}
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Lstat(f.Name(), &now) == nil && held.Ino == now.Ino {
			return &recordFile{f: f, path: f.Name()}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("no record file of our own in %s", dir)
}

// recordFromFD is the record file the watchdog inherited as fd.
func recordFromFD(fd int) *recordFile {
	path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(path) {
		return nil
	}
	return &recordFile{f: os.NewFile(uintptr(fd), path), path: path}
}

// add records the placeholder name below the directory parentPath (of
// identity parent), of identity id, held under tok.
func (r *recordFile) add(tok uint64, parentPath string, parent fsat.ID, name string, id fsat.ID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	line := fmt.Sprintf("+ %d %d %d %d %d %s %s\n", tok, parent.Dev, parent.Ino, id.Dev, id.Ino,
		strconv.Quote(name), strconv.Quote(parentPath))
	_, _ = r.f.WriteString(line)
	if r.live == nil {
		r.live = map[uint64]string{}
	}
	r.live[tok] = line
}

// remove records that tok's placeholder was let go or dealt with.
func (r *recordFile) remove(tok uint64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.f, "- %d\n", tok)
	if _, ok := r.live[tok]; ok {
		delete(r.live, tok)
		r.dead += 2
	}
	if r.dead >= compactAfter && r.dead > 4*len(r.live) {
		r.compact()
	}
}

// compact rewrites the record with the live lines alone, so that it grows
// with what is held, not with every run the server made. The lines go
// first over the start of the file, then the rest is cut: a record read
// in between (both server and watchdog killed) still lists everything
// held, and what follows, cut mid-line, names nothing live. Only the
// server compacts (the watchdog's record has no live lines).
func (r *recordFile) compact() {
	toks := make([]uint64, 0, len(r.live))
	for tok := range r.live {
		toks = append(toks, tok)
	}
	sort.Slice(toks, func(i, j int) bool { return toks[i] < toks[j] })
	var b strings.Builder
	for _, tok := range toks {
		b.WriteString(r.live[tok])
	}
	fd := int(r.f.Fd())
	if _, err := unix.Pwrite(fd, []byte(b.String()), 0); err != nil {
		return
	}
	if unix.Ftruncate(fd, int64(b.Len())) != nil {
		return
	}
	if _, err := unix.Seek(fd, int64(b.Len()), unix.SEEK_SET); err == nil {
		r.dead = 0
	}
}

// close ends the record: removed unless keep (placeholders are left for
// the next server), then closed.
func (r *recordFile) close(keep bool) {
	if r == nil {
		return
	}
	if !keep {
		var held, now unix.Stat_t
		if unix.Fstat(int(r.f.Fd()), &held) == nil && unix.Lstat(r.path, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
			_ = os.Remove(r.path)
		}
	}
	r.f.Close()
}

// placeholderRecord is one placeholder a record holds.
type placeholderRecord struct {
	parentPath string
	parent, id fsat.ID
	name       string
}

// parseRecords replays a record file: the placeholders still held, in
// the order they were recorded. A record it cannot read to its end (a
// line longer than any the server writes) yields nothing.
func parseRecords(r io.Reader) []placeholderRecord {
	type entry struct {
		rec placeholderRecord
		seq int
	}
	held := map[string]entry{}
	sc := bufio.NewScanner(r)
	for seq := 0; sc.Scan(); seq++ {
		f := strings.SplitN(sc.Text(), " ", 8)
		switch {
		case len(f) == 2 && f[0] == "-":
			delete(held, f[1])
		case len(f) == 8 && f[0] == "+":
			var n [4]uint64
			ok := true
			for i := range n {
				var err error
				n[i], err = strconv.ParseUint(f[2+i], 10, 64)
				ok = ok && err == nil
			}
			name, err1 := strconv.Unquote(f[6])
			path, err2 := strconv.Unquote(f[7])
			if ok && err1 == nil && err2 == nil {
				held[f[1]] = entry{placeholderRecord{parentPath: path, parent: fsat.ID{Dev: n[0], Ino: n[1]}, id: fsat.ID{Dev: n[2], Ino: n[3]}, name: name}, seq}
			}
		}
	}
	if sc.Err() != nil {
		return nil
	}
	entries := make([]entry, 0, len(held))
	for _, e := range held {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].seq < entries[j].seq })
	out := make([]placeholderRecord, len(entries))
	for i, e := range entries {
		out[i] = e.rec
	}
	return out
}

// sweepRecords removes the placeholders recorded by the watchdogs of dead
// servers in dir (record files nobody holds locked), each only if it
// still is that placeholder and nobody uses it, and logs at info what it
// found and removed. A record whose placeholders could not all be
// checked is kept for the next start.
func sweepRecords(dir string, log *zap.Logger, remove RemoveRecorded) {
	dfd, err := stateDir(dir)
	if err != nil {
		return // not ours: its records are no instruction to us (createRecords logs it)
	}
	df := os.NewFile(uintptr(dfd), dir)
	defer df.Close()
	ents, err := df.ReadDir(-1)
	if err != nil {
		return
	}
	var removed, left []string
	files := 0
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, recordPrefix) || !strings.HasSuffix(name, recordSuffix) {
			continue
		}
		r, l, ok := sweepRecord(dfd, name, remove)
		if ok {
			files++
			removed, left = append(removed, r...), append(left, l...)
		}
	}
	if files > 0 {
		log.Info("removed the placeholders of dead servers", zap.Int("records", files),
			zap.Int("removed", len(removed)), zap.Strings("paths", removed), zap.Strings("kept", left))
	}
}

// sweepRecord deals with the record file name below the state directory
// dirfd if its owner is gone: a regular file of ours, opened without
// following a symlink or blocking on a FIFO, read line by line.
func sweepRecord(dirfd int, name string, remove RemoveRecorded) (removed, left []string, ok bool) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, false
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() {
		return nil, nil, false
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return nil, nil, false // its server or watchdog is alive
	}
	keep := false
	for _, rec := range parseRecords(f) {
		p := filepath.Join(rec.parentPath, rec.name)
		switch done, err := remove(rec.parentPath, rec.parent, rec.name, rec.id); {
		case done:
			removed = append(removed, p)
		case err != nil:
			keep = true
			left = append(left, p)
		}
	}
	if !keep {
		_ = unix.Unlinkat(dirfd, name, 0)
	}
	return removed, left, true
}
