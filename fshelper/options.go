package fshelper

import "time"

// Limits of docs/protocol.md §11.
const (
	// MaxReadSize is the largest file ReadFile returns: 512 MiB.
	MaxReadSize = 512 << 20

	// MaxDirectoryEntries is the largest directory ReadDirectory lists.
	MaxDirectoryEntries = 50_000
)

// The zero value of every option struct below behaves like the matching
// function of package os (os.ReadFile, os.Mkdir, os.Remove): it follows
// symbolic links, does not recurse and does not ignore a missing path. The
// wire defaults differ (recursive and force default to true) and are applied
// by the bindings, not here.

// Options configures how an operation resolves its path.
type Options struct {
	// NoFollowSymlinks refuses any symbolic link in any component of the
	// path, the last one included, with ErrSymlink. The zero value follows
	// symbolic links as the OS does (the wire's followSymlinks: true).
	NoFollowSymlinks bool
}

// CreateDirectoryOptions configures CreateDirectory.
type CreateDirectoryOptions struct {
	// Recursive creates missing parents and accepts an existing directory,
	// like mkdir -p. The zero value creates exactly one directory: a missing
	// parent is ENOENT and an existing path EEXIST.
	Recursive bool

	// NoFollowSymlinks is as in Options.
	NoFollowSymlinks bool
}

// RemoveOptions configures Remove.
type RemoveOptions struct {
	// Recursive removes a directory with its contents, like rm -r. The zero
	// value removes only an empty directory (ENOTEMPTY otherwise).
	Recursive bool

	// Force makes a missing path a success. The zero value reports ENOENT.
	Force bool

	// NoFollowSymlinks is as in Options.
	NoFollowSymlinks bool
}

// CopyOptions configures Copy.
type CopyOptions struct {
	// Recursive allows a directory source, copied with its contents. The
	// zero value refuses a directory source with ErrCopyNeedsRecursive.
	Recursive bool
}

// Metadata describes a path, as returned by GetMetadata.
type Metadata struct {
	// IsDirectory and IsFile describe the type of the path's final target
	// (symbolic links followed, unless NoFollowSymlinks was set).
	IsDirectory bool
	IsFile      bool

	// IsSymlink reports whether the path itself is a symbolic link.
	IsSymlink bool

	// Size is the target's size in bytes.
	Size uint64

	// Created is the birth time, or the zero time when the filesystem does
	// not record it.
	Created time.Time

	// Modified is the last modification time.
	Modified time.Time
}

// DirEntry is one entry of a directory, as returned by ReadDirectory. Its
// type is the type of the entry's target when the entry is a symbolic link.
type DirEntry struct {
	Name        string
	IsDirectory bool
	IsFile      bool
}
