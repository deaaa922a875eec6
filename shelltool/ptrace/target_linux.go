//go:build linux && (amd64 || arm64)

package ptrace

import (
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/shelltool/escalate"
)

// execCall is what one execve or execveat asks for.
type execCall struct {
	path       string
	argv, envp []string
	dirfd      int  // execveat only; AT_FDCWD for execve
	flags      int  // execveat's flags
	at         bool // execveat
}

// readExec reads the arguments of the exec syscall si from tid's memory.
func readExec(tid int, si syscallInfo) (execCall, error) {
	m := &memReader{pid: tid, budget: maxArgBytes}
	c := execCall{dirfd: unix.AT_FDCWD}
	a := si.args
	if si.nr == sysExecveat {
		c.at, c.dirfd, c.flags = true, int(int32(a[0])), int(a[4])
		a = [6]uint64{a[1], a[2], a[3]}
	}
	var err error
	if c.path, err = m.cstring(a[0]); err != nil {
		return c, err
	}
	if c.argv, err = m.vector(a[1]); err != nil {
		return c, err
	}
	if c.envp, err = m.vector(a[2]); err != nil {
		return c, err
	}
	return c, nil
}

// fileID identifies a file: device and inode.
type fileID struct{ dev, ino uint64 }

// target is the file an exec will run, as the tracee sees it.
type target struct {
	// file is the absolute, lexically clean path in the tracee's view
	// (symlinks not followed), the Request's File.
	file string
	// id is the file's identity (symlinks followed, as the kernel does).
	id fileID
	// image is the version of the file the kernel will load: the file's
	// own, or for a script the end of its interpreter chain; the zero
	// value when that chain cannot be followed (the exec event then
	// judges what was loaded).
	image fileVersion
	// script: the file starts with "#!", so the kernel runs its
	// interpreter with passed in its argv.
	script bool
	// passed is the file name the kernel puts in a script's argv: the
	// path as given, or /dev/fd/N[/path] for execveat with a directory fd.
	passed string
	// argv is the argv the exec passes.
	argv []string
	// exe is the file, opened O_PATH in the tracee's view, while the
	// exec is being judged (closed by release before the tracee runs).
	exe *os.File
}

// release closes t's descriptor of the file.
func (t *target) release() {
	if t.exe != nil {
		t.exe.Close()
		t.exe = nil
	}
}

// resolve finds the file c will run, the way the kernel will: relative
// to tid's working directory (or execveat's directory fd), absolute
// paths inside tid's root. ok is false when the exec is bound to fail (no
// such file, not a regular executable file, on a noexec mount, a final
// symlink with AT_SYMLINK_NOFOLLOW): such an attempt (execvp trying each
// PATH entry) is let through unjudged, and the kernel fails it.
func resolve(tid int, c execCall, cwd string) (target, bool) {
	proc := "/proc/" + strconv.Itoa(tid)
	t := target{passed: c.path, argv: c.argv}
	oflags := unix.O_PATH | unix.O_CLOEXEC
	if c.flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
		oflags |= unix.O_NOFOLLOW
	}
	var fd int
	var err error
	switch {
	case c.path == "" && c.at && c.flags&unix.AT_EMPTY_PATH != 0:
		dir := proc + "/fd/" + strconv.Itoa(c.dirfd)
		t.file, err = os.Readlink(dir)
		if err != nil {
			return t, false
		}
		t.passed = "/dev/fd/" + strconv.Itoa(c.dirfd)
		fd, err = unix.Open(dir, oflags, 0)
	case c.path == "":
		return t, false
	case filepath.IsAbs(c.path):
		t.file = filepath.Clean(c.path)
		fd, err = openInRoot(proc+"/root", c.path, oflags)
	case c.dirfd == unix.AT_FDCWD:
		t.file = filepath.Join(cwd, c.path)
		fd, err = unix.Open(proc+"/cwd/"+c.path, oflags, 0)
	default:
		dir := proc + "/fd/" + strconv.Itoa(c.dirfd)
		base, lerr := os.Readlink(dir)
		if lerr != nil {
			return t, false
		}
		t.file = filepath.Join(base, c.path)
		t.passed = "/dev/fd/" + strconv.Itoa(c.dirfd) + "/" + c.path
		fd, err = unix.Open(dir+"/"+c.path, oflags, 0)
	}
	if err != nil {
		return t, false
	}
	t, ok := inspect(fd, t)
	if !ok {
		unix.Close(fd)
		return t, false
	}
	t.exe = os.NewFile(uintptr(fd), t.file)
	t.image = finalImage(t.exe, opener(tid))
	return t, true
}

// maxInterpreters is how many "#!" interpreters the kernel follows
// before the loaded image (binfmt_script's recursion limit is below).
const maxInterpreters = 5

// finalImage follows f's "#!" chain as the kernel will, opening each
// interpreter with open, and returns the version of the image it ends
// at; the zero value when it cannot tell.
func finalImage(f *os.File, open func(string) (*os.File, error)) fileVersion {
	cur := f
	for range maxInterpreters {
		interp, _, ok := escalate.Shebang(cur)
		if !ok {
			v, _ := fdVersion(int(cur.Fd()))
			if cur != f {
				cur.Close()
			}
			return v
		}
		next, err := open(interp)
		if cur != f {
			cur.Close()
		}
		if err != nil {
			return fileVersion{}
		}
		cur = next
	}
	if cur != f {
		cur.Close()
	}
	return fileVersion{}
}

// fileVersion identifies a version of a file's content: its identity,
// size, modification and status-change times (a command can set the
// modification time, never the change time).
type fileVersion struct {
	id           fileID
	size         int64
	mtime, ctime int64
}

func versionOf(st *unix.Stat_t) fileVersion {
	return fileVersion{id: fileID{dev: st.Dev, ino: st.Ino}, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

func fdVersion(fd int) (fileVersion, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileVersion{}, err
	}
	return versionOf(&st), nil
}

// opener returns the escalate.Request's Open for tid: a path opened as
// the kernel resolves it for tid (absolute inside its root, relative to
// its working directory), O_PATH, symlinks followed.
func opener(tid int) func(string) (*os.File, error) {
	proc := "/proc/" + strconv.Itoa(tid)
	return func(path string) (*os.File, error) {
		var fd int
		var err error
		if filepath.IsAbs(path) {
			fd, err = openInRoot(proc+"/root", path, unix.O_PATH|unix.O_CLOEXEC)
		} else {
			fd, err = unix.Open(proc+"/cwd/"+path, unix.O_PATH|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// openInRoot opens path (absolute) as if root were "/": the tracee's
// root, with its absolute symlinks resolved inside it.
func openInRoot(root, path string, oflags int) (int, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	return unix.Openat2(rfd, path, &unix.OpenHow{Flags: uint64(oflags), Resolve: unix.RESOLVE_IN_ROOT})
}

// inspect completes t from the opened file: its identity, whether it can
// be executed at all, whether it is a script.
func inspect(fd int, t target) (target, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return t, false
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err == nil && fs.Flags&unix.ST_NOEXEC != 0 {
		return t, false
	}
	t.id = fileID{dev: st.Dev, ino: st.Ino}
	if f, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
		var head [2]byte
		n, _ := f.Read(head[:])
		t.script = n == 2 && head == [2]byte{'#', '!'}
		f.Close()
	}
	return t, true
}

// statID is the identity of the file at path (symlinks followed).
func statID(path string) (fileID, error) {
	v, err := statVersion(path)
	return v.id, err
}

// statVersion is the version of the file at path (symlinks followed).
func statVersion(path string) (fileVersion, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileVersion{}, err
	}
	return versionOf(&st), nil
}
