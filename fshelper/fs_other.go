//go:build !linux

package fshelper

import "errors"

// The operations rely on Linux system calls (openat2, statx, O_PATH). Elsewhere
// they fail with errors.ErrUnsupported, which WireError sends as -32603.

// ReadFile is unsupported on this platform.
func ReadFile(path string, opts Options) ([]byte, error) { return nil, errors.ErrUnsupported }

// WriteFile is unsupported on this platform.
func WriteFile(path string, data []byte, opts Options) error { return errors.ErrUnsupported }

// CreateDirectory is unsupported on this platform.
func CreateDirectory(path string, opts CreateDirectoryOptions) error { return errors.ErrUnsupported }

// GetMetadata is unsupported on this platform.
func GetMetadata(path string, opts Options) (Metadata, error) {
	return Metadata{}, errors.ErrUnsupported
}

// ReadDirectory is unsupported on this platform.
func ReadDirectory(path string) ([]DirEntry, error) { return nil, errors.ErrUnsupported }

// Remove is unsupported on this platform.
func Remove(path string, opts RemoveOptions) error { return errors.ErrUnsupported }

// Copy is unsupported on this platform.
func Copy(src, dst string, opts CopyOptions) error { return errors.ErrUnsupported }

// Canonicalize is unsupported on this platform.
func Canonicalize(path string) (string, error) { return "", errors.ErrUnsupported }

// Walk is unsupported on this platform.
func Walk(root string, opts WalkOptions) (WalkResult, error) {
	return WalkResult{}, errors.ErrUnsupported
}
