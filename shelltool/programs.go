package shelltool

import (
	"crypto/sha256"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Programs knows which files the rules' programs are, so that an exec is
// judged by the file the kernel runs as well as by its name
// (docs/shell-tool.md §11.3): a copy, a link or a memfd of a rule's
// program is that program. It also knows the dynamic loader, whose direct
// execs are judged by the program they load. Safe for concurrent use.
type Programs struct {
	byID   map[fileID][]string // rule program names of each file
	multi  map[fileID]bool     // files that PATH holds under several names
	sizes  map[int64][]indexed // the same files by size, for content matches
	loader map[fileID]bool     // the dynamic loaders

	mu     sync.Mutex
	hashes map[hashKey][32]byte // guarded by mu
}

// fileID identifies a file: device and inode.
type fileID struct{ dev, ino uint64 }

// indexed is one file of the index: a rule program's (name set) or a
// loader's (name "").
type indexed struct {
	name string
	path string
}

// maxHashes bounds the hash cache.
const maxHashes = 4096

// hashKey identifies a version of a file's content: the command can set
// a file's modification time, never its status-change time.
type hashKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// NewPrograms indexes the files of names (the rules' programs): an
// absolute name is that file; a name with host executables (hostExecs) is
// those files only; any other name is every file of that name in dirs
// (the server's PATH). The dynamic loaders are found from the program
// interpreter of /bin/sh and the usual places.
func NewPrograms(names []string, hostExecs func(string) ([]string, bool), dirs []string) *Programs {
	p := &Programs{byID: map[fileID][]string{}, multi: map[fileID]bool{}, sizes: map[int64][]indexed{},
		loader: map[fileID]bool{}, hashes: map[hashKey][32]byte{}}
	for _, name := range names {
		var paths []string
		switch pinned, ok := hostExecs(name); {
		case filepath.IsAbs(name):
			paths = []string{name}
		case ok:
			paths = pinned
		case !strings.Contains(name, "/"):
			for _, d := range dirs {
				paths = append(paths, filepath.Join(d, name))
			}
		}
		for _, path := range paths {
			p.add(path, name)
		}
	}
	for _, l := range loaderPaths() {
		p.add(l, "")
	}
	p.findMultiCall(dirs)
	return p
}

// add indexes the regular file at path (symlinks followed) under name.
func (p *Programs) add(path, name string) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	id := fileID{st.Dev, st.Ino}
	if name == "" {
		if p.loader[id] {
			return
		}
		p.loader[id] = true
	} else {
		for _, n := range p.byID[id] {
			if n == name {
				return
			}
		}
		p.byID[id] = append(p.byID[id], name)
	}
	p.sizes[st.Size] = append(p.sizes[st.Size], indexed{name: name, path: path})
}

// findMultiCall marks the indexed files that dirs hold under more than
// one name (busybox and the like choose what to do by argv[0]).
func (p *Programs) findMultiCall(dirs []string) {
	seen := map[fileID]string{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			var st unix.Stat_t
			if unix.Stat(filepath.Join(d, e.Name()), &st) != nil {
				continue
			}
			id := fileID{st.Dev, st.Ino}
			if _, ok := p.byID[id]; !ok {
				continue
			}
			if first, ok := seen[id]; ok && first != e.Name() {
				p.multi[id] = true
			} else if !ok {
				seen[id] = e.Name()
			}
		}
	}
}

// loaderPaths are the dynamic loaders of this system.
func loaderPaths() []string {
	var out []string
	for _, bin := range []string{"/bin/sh", "/usr/bin/env"} {
		if f, err := elf.Open(bin); err == nil {
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP {
					b, _ := io.ReadAll(prog.Open())
					out = append(out, strings.TrimRight(string(b), "\x00"))
				}
			}
			f.Close()
		}
	}
	for _, g := range []string{"/lib*/ld-linux*.so*", "/lib/*/ld-linux*.so*", "/usr/lib*/ld-linux*.so*",
		"/usr/lib/*/ld-linux*.so*", "/lib/ld-musl-*.so*", "/usr/lib/ld-musl-*.so*"} {
		m, _ := filepath.Glob(g)
		out = append(out, m...)
	}
	return out
}

// identity is what the index says of one open file.
type identity struct {
	names  []string // the rule programs it is
	multi  bool     // a multi-call binary: argv[0] names the program too
	loader bool     // a dynamic loader
}

// identify looks f (an open file, O_PATH will do) up by identity, then,
// when a file of the index has its size, by content.
func (p *Programs) identify(f *os.File) identity {
	if p == nil || f == nil {
		return identity{}
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return identity{}
	}
	id := fileID{st.Dev, st.Ino}
	if names, ok := p.byID[id]; ok || p.loader[id] {
		return identity{names: names, multi: p.multi[id], loader: p.loader[id]}
	}
	cands := p.sizes[st.Size]
	if len(cands) == 0 {
		return identity{}
	}
	r := reopen(f)
	if r == nil {
		return identity{}
	}
	sum, ok := p.hash(r, &st)
	r.Close()
	if !ok {
		return identity{}
	}
	var out identity
	for _, c := range cands {
		var cst unix.Stat_t
		cf, err := os.OpenFile(c.path, os.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if unix.Fstat(int(cf.Fd()), &cst) == nil && cst.Mode&unix.S_IFMT == unix.S_IFREG {
			if csum, ok := p.hash(cf, &cst); ok && csum == sum {
				cid := fileID{cst.Dev, cst.Ino}
				if c.name == "" {
					out.loader = true
				} else {
					out.names = append(out.names, c.name)
					out.multi = out.multi || p.multi[cid]
				}
			}
		}
		cf.Close()
	}
	return out
}

// reopen opens f's file (a regular file) for reading, never blocking
// (nil on failure).
func reopen(f *os.File) *os.File {
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), f.Name())
}

// hash is the SHA-256 of r's content (r's stat is st), cached by device,
// inode, size and modification time. It closes nothing; a nil r fails.
func (p *Programs) hash(r *os.File, st *unix.Stat_t) ([32]byte, bool) {
	if r == nil {
		return [32]byte{}, false
	}
	key := hashKey{st.Dev, st.Ino, st.Size, st.Mtim.Nano(), st.Ctim.Nano()}
	p.mu.Lock()
	sum, ok := p.hashes[key]
	p.mu.Unlock()
	if ok {
		return sum, true
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, st.Size+1))
	if err != nil || n != st.Size {
		return [32]byte{}, false
	}
	copy(sum[:], h.Sum(nil))
	p.mu.Lock()
	if len(p.hashes) >= maxHashes {
		clear(p.hashes) // files the command made, one by one: start again
	}
	p.hashes[key] = sum
	p.mu.Unlock()
	return sum, true
}
