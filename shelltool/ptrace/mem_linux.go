//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// maxArgBytes bounds what is read of one exec's path, argv and envp
// together. The kernel's own limit depends on the stack rlimit; an exec
// beyond this one is refused rather than judged on part of its arguments.
const maxArgBytes = 4 << 20

// errTooLarge reports arguments beyond maxArgBytes.
var errTooLarge = errors.New("exec arguments too large to judge")

// pageSize is the unit in which tracee memory is read, so that a read
// never crosses into an unmapped page beyond the data.
var pageSize = uint64(os.Getpagesize())

// memReader reads a stopped tracee's memory with process_vm_readv,
// counting the bytes against maxArgBytes.
type memReader struct {
	pid    int
	budget int
}

// read fills p from addr, in pieces that do not cross a page boundary. A
// short read (an unmapped page) is an EFAULT error.
func (m *memReader) read(addr uint64, p []byte) error {
	for len(p) > 0 {
		n := min(uint64(len(p)), pageSize-addr%pageSize)
		local := []unix.Iovec{{Base: &p[0]}}
		local[0].SetLen(int(n))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: int(n)}}
		got, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
		if err != nil {
			return err
		}
		if got != int(n) {
			return unix.EFAULT
		}
		p, addr = p[n:], addr+n
	}
	return nil
}

// cstring reads the NUL-terminated string at addr.
func (m *memReader) cstring(addr uint64) (string, error) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	var out []byte
	chunk := make([]byte, 256)
	for {
		n := min(uint64(len(chunk)), pageSize-addr%pageSize)
		if err := m.read(addr, chunk[:n]); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(chunk[:n], 0); i >= 0 {
			out = append(out, chunk[:i]...)
			m.budget -= i + 1
			if m.budget < 0 {
				return "", errTooLarge
			}
			return string(out), nil
		}
		out = append(out, chunk[:n]...)
		if len(out) > m.budget {
			return "", errTooLarge
		}
		addr += n
	}
}

// vector reads the NULL-terminated array of string pointers at addr
// (argv or envp). A NULL addr is an empty vector, as Linux treats it.
func (m *memReader) vector(addr uint64) ([]string, error) {
	var out []string
	if addr == 0 {
		return out, nil
	}
	var ptr [8]byte
	for {
		if err := m.read(addr, ptr[:]); err != nil {
			return nil, err
		}
		p := binary.NativeEndian.Uint64(ptr[:])
		if p == 0 {
			return out, nil
		}
		m.budget -= 8
		s, err := m.cstring(p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		addr += 8
	}
}
