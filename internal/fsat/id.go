// Package fsat works on directory handles instead of paths: it opens
// without following symlinks (openat2 with RESOLVE_NO_SYMLINKS, and
// RESOLVE_BENEATH below a handle), and removes trees relative to a handle
// without ever following a symlink or leaving the handle's directory. The
// sandbox helper and the server use it for every path that lies inside a
// writable root, where the sandboxed command can plant symlinks.
package fsat

// ID is the identity of a file: its device and inode numbers. The zero ID
// means unknown.
type ID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IsZero reports whether id is unknown.
func (id ID) IsZero() bool { return id == ID{} }
