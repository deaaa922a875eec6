package sandbox

import (
	"errors"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Bounds of the deny-glob walk (docs/sandbox.md §3.5). A folder the walk
// does not read, because it lies deeper than maxGlobDepth below its search
// root, its path is longer than maxGlobPath, it cannot be read, or the
// walk has read maxGlobVisits entries, is masked whole instead: nothing
// in it can be read either. The folders the command needs are always
// read, up to 4*maxGlobVisits entries.
const (
	maxGlobDepth  = 64
	maxGlobPath   = 2048
	maxGlobVisits = 1 << 20
	globBatch     = 256
)

// globScan is one search root and the relative globs walked under it.
type globScan struct {
	root  string // canonical
	globs []*globMatcher
}

// globWalk walks the search roots of one expansion into a mask set.
type globWalk struct {
	set      *maskSet
	maxDepth *int // glob_scan_max_depth: deeper folders are not walked
	visits   int
}

// walkFrame is one open folder of the depth-first walk.
type walkFrame struct {
	f     *os.File
	dir   string // absolute
	rel   string // relative to the search root; "" at the root
	depth int    // components below the search root
	batch []os.DirEntry
	next  int
}

// walk reads the search root s and everything below it, without following
// symlinks, adding each matching non-directory to the set. A folder is
// opened relative to its parent's descriptor with O_NOFOLLOW, so a folder
// swapped for a symlink during the walk is not entered.
func (w *globWalk) walk(s *globScan) error {
	f, err := openScanRoot(s.root)
	if errors.Is(err, unix.ENOTDIR) {
		return nil // a file: nothing below it
	}
	if err != nil {
		return w.unreadable(s.root, err)
	}
	if w.visits > maxGlobVisits && w.set.maskWhole(s.root) {
		f.Close()
		return nil
	}
	stack := []*walkFrame{{f: f, dir: s.root}}
	defer func() {
		for _, fr := range stack {
			fr.f.Close()
		}
	}()
	for len(stack) > 0 {
		fr := stack[len(stack)-1]
		if fr.next == len(fr.batch) {
			if fr.batch, err = fr.f.ReadDir(globBatch); len(fr.batch) == 0 {
				fr.f.Close()
				stack = stack[:len(stack)-1]
				if err != nil && err != io.EOF {
					if err := w.unreadable(fr.dir, err); err != nil {
						return err
					}
				}
			}
			fr.next = 0
			continue
		}
		e := fr.batch[fr.next]
		fr.next++
		sub, err := w.entry(s, fr, e)
		if err != nil {
			return err
		}
		if sub != nil {
			stack = append(stack, sub)
		}
		if stack, err = w.prune(stack); err != nil {
			return err
		}
	}
	return nil
}

// entry handles one directory entry: a matching non-directory is added,
// a folder to walk is opened and returned.
func (w *globWalk) entry(s *globScan, fr *walkFrame, e os.DirEntry) (*walkFrame, error) {
	w.visits++
	if w.visits > 4*maxGlobVisits {
		return nil, preparef("deny-read glob scan of %s read more than %d entries in folders it cannot mask whole", s.root, 4*maxGlobVisits)
	}
	name := e.Name()
	rel := name
	if fr.rel != "" {
		rel = fr.rel + "/" + name
	}
	path := strings.TrimSuffix(fr.dir, "/") + "/" + name
	if !e.IsDir() {
		for _, g := range s.globs {
			if g.match(rel) {
				w.set.add(fr.dir, name)
				break
			}
		}
		return nil, nil
	}
	if w.maxDepth != nil && strings.Count(rel, "/")+1 >= *w.maxDepth {
		return nil, nil
	}
	if (fr.depth+1 > maxGlobDepth || len(path) > maxGlobPath || w.visits > maxGlobVisits) && w.set.maskWhole(path) {
		return nil, nil
	}
	fd, err := unix.Openat(int(fr.f.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil, w.swapped(s, fr, name, rel)
	}
	if err != nil {
		return nil, w.unreadable(path, err)
	}
	return &walkFrame{f: os.NewFile(uintptr(fd), path), dir: path, rel: rel, depth: fr.depth + 1}, nil
}

// swapped handles a folder that was replaced by something else between
// the listing and the open: it is matched as what it is now.
func (w *globWalk) swapped(s *globScan, fr *walkFrame, name, rel string) error {
	fi, err := os.Lstat(fr.dir + "/" + name)
	if err != nil || fi.IsDir() {
		return w.unreadable(fr.dir+"/"+name, errors.New("changed during the scan"))
	}
	for _, g := range s.globs {
		if g.match(rel) {
			w.set.add(fr.dir, name)
			break
		}
	}
	return nil
}

// unreadable masks a folder the walk cannot read whole; it fails when the
// folder cannot be masked whole. A folder that is gone has nothing to hide.
func (w *globWalk) unreadable(dir string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if w.set.maskWhole(dir) {
		return nil
	}
	return preparef("deny-read glob scan failed for %s: %v", dir, err)
}

// prune folds the set when it has grown past globFoldAt masks or
// maxGlobNodes folders, and then closes the open folders it masked
// whole. When the walk has just read maxGlobVisits entries, the
// shallowest open folder that can be masked whole is, with what it has
// not read; from then on only the folders that cannot are entered.
func (w *globWalk) prune(stack []*walkFrame) ([]*walkFrame, error) {
	folded := w.set.total > globFoldAt || len(w.set.nodes) > maxGlobNodes
	if folded {
		if err := w.set.fold(maxGlobMatches); err != nil {
			return stack, err
		}
	}
	if !folded && w.visits != maxGlobVisits+1 {
		return stack, nil
	}
	cut := len(stack)
	for i, fr := range stack {
		if w.set.covered(fr.dir) || (w.visits > maxGlobVisits && w.set.maskWhole(fr.dir)) {
			cut = i
			break
		}
	}
	for _, fr := range stack[cut:] {
		fr.f.Close()
	}
	return stack[:cut], nil
}
