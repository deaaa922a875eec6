package escalate

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// shebangBuf is how much of a file the kernel reads for its "#!" line
// (BINPRM_BUF_SIZE).
const shebangBuf = 256

// Shebang reads the "#!" line of f's file (an open descriptor, O_PATH
// will do) the way the kernel's binfmt_script does: the interpreter ends
// at the first space, tab or NUL, and at most one argument follows,
// trimmed of spaces and tabs and ending at a NUL. ok is false when the
// file is not a regular file, cannot be read, or is not a script the
// kernel would run.
func Shebang(f *os.File) (interp, arg string, ok bool) {
	var st unix.Stat_t
	if f == nil || unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", "", false
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", "", false
	}
	defer unix.Close(fd)
	var buf [shebangBuf]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil || n < 2 || buf[0] != '#' || buf[1] != '!' {
		return "", "", false
	}
	return parseShebang(buf[:n])
}

// parseShebang parses a "#!" line as binfmt_script does.
func parseShebang(b []byte) (interp, arg string, ok bool) {
	line := b[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	} else if bytes.IndexFunc(line, func(r rune) bool { return r != ' ' && r != '\t' }) < 0 ||
		bytes.IndexAny(trimLeftST(line), " \t\x00") < 0 {
		// No newline in the buffer: the kernel runs it only when the
		// interpreter's name ends within the buffer.
		return "", "", false
	}
	line = bytes.TrimRight(line, " \t")
	line = trimLeftST(line)
	end := bytes.IndexAny(line, " \t\x00")
	if end == 0 || len(line) == 0 {
		return "", "", false
	}
	if end < 0 {
		return string(line), "", true
	}
	name, rest := line[:end], line[end:]
	if rest[0] != 0 {
		rest = trimLeftST(rest)
		if i := bytes.IndexByte(rest, 0); i >= 0 {
			rest = rest[:i]
		}
		arg = string(rest)
	}
	return string(name), arg, true
}

func trimLeftST(b []byte) []byte { return bytes.TrimLeft(b, " \t") }
