//go:build linux

package fshelper

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/codexec/codex/wire"
	"golang.org/x/sys/unix"
)

// Walk lists the tree under root breadth-first, as fs/walk does in the
// reference (docs/protocol.md §6.11.2):
//
//   - the root's entries, then those of each listed directory in the order
//     the directories were listed; within a directory by name, in byte order;
//   - regular files and directories are listed; a symbolic link to a
//     directory too when FollowDirectorySymlinks is set (under the link's
//     path), other links, FIFOs, sockets and devices are not;
//   - every entry examined counts against MaxEntries, listed or not, except
//     a link whose target cannot be read (dangling, a loop, denied), which is
//     skipped; an entry whose own type cannot be read counts and becomes an
//     Errors item, as does a directory that cannot be read;
//   - a directory is walked once: one reached again (through a link, or a
//     directory a link already led to) is listed but not walked, and a
//     hidden one (a name starting with '.') is not walked with
//     PruneHiddenDirectories; directories listed MaxDepth levels below the
//     root's children are not walked;
//   - Truncated is set when an entry that would count is found with the
//     entry budget used up, a directory waits to be read with the
//     directory budget used up (the root is the first), or the next item
//     would take the answer past wire.WalkResultBudget. MaxDepth never
//     sets it.
//
// A root that does not exist, or whose type cannot be read, is an error
// (wrapping the errno); a root that is not a directory, or a link to one
// without FollowDirectorySymlinks, gives an empty result.
//
// Memory is bounded by the budgets: the answer by wire.WalkResultBudget,
// and a directory's names are read in batches of which only the
// MaxEntries-still-available smallest (and one more, to know about
// truncation) are kept, however large the directory.
func Walk(root string, opts WalkOptions) (WalkResult, error) {
	res := WalkResult{Entries: []WalkEntry{}, Errors: []WalkFailure{}}
	st, err := statAt(unix.AT_FDCWD, root, 0)
	if err != nil {
		return res, pathError("stat", root, err)
	}
	if !st.isDir() {
		return res, nil
	}
	if !opts.FollowDirectorySymlinks {
		lst, err := statAt(unix.AT_FDCWD, root, unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			return res, pathError("lstat", root, err)
		}
		if lst.isSymlink() {
			return res, nil
		}
	}
	w := walker{opts: opts, res: &res, visited: map[devIno]struct{}{{st.dev, st.ino}: {}}}
	w.run(root)
	return res, nil
}

type devIno struct{ dev, ino uint64 }

type walker struct {
	opts    WalkOptions
	res     *WalkResult
	visited map[devIno]struct{}
	counted uint64 // entries examined
	bytes   uint64 // the answer's cost so far (wire.WalkResultBudget)
}

// queued is a directory to read, with the depth of its entries.
type queued struct {
	path  string
	depth uint64
}

func (w *walker) run(root string) {
	queue := []queued{{path: root}}
	var read uint64
	for i := 0; i < len(queue); i++ {
		if read == w.opts.MaxDirectories {
			w.res.Truncated = true
			return
		}
		read++
		d := queue[i]
		queue[i] = queued{} // what was read is no longer held
		items, more, err := readWalkDir(d.path, w.opts.MaxEntries-w.counted)
		if err != nil {
			if !w.fail(d.path, err) {
				return
			}
			continue
		}
		for _, it := range items {
			w.counted++
			path := joinPath(d.path, it.name)
			switch {
			case it.err != nil:
				if !w.fail(path, it.err) {
					return
				}
			case it.kind == kindFile:
				if !w.take(path, 0) {
					return
				}
				w.res.Entries = append(w.res.Entries, WalkEntry{Path: path})
			case it.kind == kindDir, it.kind == kindDirLink && w.opts.FollowDirectorySymlinks:
				if !w.take(path, 0) {
					return
				}
				w.res.Entries = append(w.res.Entries, WalkEntry{Path: path, Directory: true})
				if d.depth >= w.opts.MaxDepth || w.opts.PruneHiddenDirectories && strings.HasPrefix(it.name, ".") {
					continue
				}
				if _, seen := w.visited[it.id]; seen {
					continue
				}
				w.visited[it.id] = struct{}{}
				queue = append(queue, queued{path: path, depth: d.depth + 1})
			}
		}
		if more {
			w.res.Truncated = true
			return
		}
	}
}

// take charges the answer's budget for an item at path with extra bytes
// of message, or sets Truncated and returns false when it would not fit.
func (w *walker) take(path string, extra int) bool {
	cost := uint64(wire.FileURILen(path) + extra + wire.WalkItemOverhead)
	if w.bytes+cost > wire.WalkResultBudget {
		w.res.Truncated = true
		return false
	}
	w.bytes += cost
	return true
}

// fail records an errors item, if it fits.
func (w *walker) fail(path string, err error) bool {
	if !w.take(path, len(WireError(err).Message)) {
		return false
	}
	w.res.Errors = append(w.res.Errors, WalkFailure{Path: path, Err: err})
	return true
}

func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

type walkKind uint8

const (
	kindOther   walkKind = iota // counted, not listed: FIFOs, sockets, devices, links to non-directories
	kindFile                    // a regular file
	kindDir                     // a directory
	kindDirLink                 // a link to a directory
)

// walkItem is one counted entry of a directory.
type walkItem struct {
	name string
	kind walkKind
	id   devIno // a directory's, or a directory link's target's
	err  error  // its type could not be read
}

// readWalkDir returns the first budget counted entries of the directory at
// path in name order, and more = true when it holds another one. Links
// whose target cannot be read are not counted. Whatever the directory's
// size, at most 2·(budget+1) entries are held at a time.
func readWalkDir(path string, budget uint64) (items []walkItem, more bool, err error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, false, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	keep := int(min(budget, 1<<30)) + 1
	trim := func() {
		slices.SortFunc(items, func(a, b walkItem) int { return strings.Compare(a.name, b.name) })
		if len(items) > keep {
			clear(items[keep:])
			items = items[:keep]
		}
	}
	searchable := false // an fstatat in this directory succeeded
	for {
		ents, rerr := f.ReadDir(readBatch)
		for _, e := range ents {
			if it, counted := classifyWalkEntry(fd, e, &searchable); counted {
				items = append(items, it)
			}
		}
		if len(items) >= 2*keep {
			trim()
		}
		if rerr == io.EOF || len(ents) == 0 && rerr == nil {
			break
		}
		if rerr != nil {
			return nil, false, unwrapErrno(rerr)
		}
	}
	trim()
	if len(items) == keep {
		return items[:keep-1], true, nil
	}
	return items, false, nil
}

// classifyWalkEntry reads the type of one entry of the directory dirfd.
// The type the directory listing gives is trusted for files, FIFOs,
// sockets and devices once one fstatat in the directory succeeded: what
// fails there is the directory's search permission, which then fails for
// every entry (each an errors item, as in the reference). Directories
// (for their device and inode), links and unknown types are always
// stat'ed, with fstatat rather than statAt's statx: the walk needs no
// birth time.
func classifyWalkEntry(dirfd int, e fs.DirEntry, searchable *bool) (walkItem, bool) {
	it := walkItem{name: e.Name()}
	typ := e.Type()
	if *searchable && typ&(fs.ModeDir|fs.ModeSymlink|fs.ModeIrregular) == 0 {
		if typ.IsRegular() {
			it.kind = kindFile
		}
		return it, true
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, it.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		it.err = unwrapErrno(err)
		return it, true
	}
	*searchable = true
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		if err := unix.Fstatat(dirfd, it.name, &st, 0); err != nil {
			return it, false // dangling, a loop, or denied: not examined
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			it.kind, it.id = kindDirLink, devIno{st.Dev, st.Ino}
		}
		return it, true
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		it.kind, it.id = kindDir, devIno{st.Dev, st.Ino}
	case unix.S_IFREG:
		it.kind = kindFile
	}
	return it, true
}

// unwrapErrno returns the errno inside err, or err.
func unwrapErrno(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}
