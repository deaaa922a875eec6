package escalate

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Program is a file an escalation runs, held by an O_PATH descriptor
// opened when it was judged: the Escalator executes that descriptor, so
// what runs is the judged file even if its path is replaced afterwards
// (docs/shell-tool.md §11.1).
type Program struct {
	file *os.File
	// Path is the file's real path (symlinks resolved), for messages.
	Path string
	// Script: the file starts with "#!". The kernel then runs the
	// interpreter, which reads the script through /proc/self/fd/3, so the
	// descriptor stays open across the exec at number 3.
	Script bool
	// Dev and Ino are the file's identity.
	Dev, Ino uint64
}

// NewProgram takes ownership of f, an O_PATH descriptor of a regular
// file, and records its identity and real path.
func NewProgram(f *os.File) (*Program, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, &os.PathError{Op: "exec", Path: f.Name(), Err: unix.EACCES}
	}
	p := &Program{file: f, Dev: st.Dev, Ino: st.Ino}
	p.Path, _ = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if r, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil {
		var head [2]byte
		n, _ := r.Read(head[:])
		p.Script = n == 2 && head == [2]byte{'#', '!'}
		r.Close()
	}
	return p, nil
}

// OpenProgram opens path (symlinks followed) as a Program. It checks
// nothing about trust: deciding whether a file may be escalated is the
// Decider's job.
func OpenProgram(path string) (*Program, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return NewProgram(os.NewFile(uintptr(fd), path))
}

// Fd is the O_PATH descriptor (valid until Close).
func (p *Program) Fd() int { return int(p.file.Fd()) }

// Close closes the descriptor.
func (p *Program) Close() error { return p.file.Close() }

var errNoProgram = errors.New("no judged program to run")
