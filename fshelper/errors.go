package fshelper

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// Validation errors of the filesystem operations. Their texts are the exact
// wire messages of docs/protocol.md §3 (package wire); WireError sends them as -32600, except
// ErrTooManyEntries, which the protocol lists as -32603. Operations return
// them unwrapped or wrapped with %w; decisions use errors.Is.
var (
	// ErrSymlink reports a symbolic link in a path that was resolved with
	// NoFollowSymlinks.
	ErrSymlink = errors.New(wire.MsgSymlink)

	// ErrTooLarge reports a file larger than MaxReadSize given to ReadFile.
	ErrTooLarge = fmt.Errorf(wire.MsgFileTooLargeFmt, MaxReadSize)

	// ErrNotFile is matched (errors.Is) by every *NotFileError.
	ErrNotFile = errors.New(wire.MsgNotFile)

	// ErrCopyNeedsRecursive reports a directory source given to Copy
	// without Recursive.
	ErrCopyNeedsRecursive = errors.New(wire.MsgCopyNeedsRecursive)

	// ErrCopyIntoSelf reports a directory copied into itself or one of its
	// descendants.
	ErrCopyIntoSelf = errors.New(wire.MsgCopyIntoSelf)

	// ErrCopyUnsupported reports a copy source that is neither a regular
	// file, a directory nor a symbolic link.
	ErrCopyUnsupported = errors.New(wire.MsgCopyUnsupported)

	// ErrTooManyEntries reports a directory with more than
	// MaxDirectoryEntries entries given to ReadDirectory.
	ErrTooManyEntries = fmt.Errorf(wire.MsgTooManyEntriesFmt, MaxDirectoryEntries)
)

// errBadBase64 is the -32600 message of an undecodable fs/writeFile payload.
const errBadBase64 = wire.MsgBadBase64Fmt

// errNullField is the -32602 message of a required member sent as null, worded
// like the reference's decoder.
const errNullField = wire.MsgNullFieldFmt

// NotFileError reports that ReadFile was given a directory, FIFO, device or
// socket. It matches ErrNotFile with errors.Is.
type NotFileError struct {
	// Path is the native path that was asked for.
	Path string
}

// Error returns the wire text: path `/p` is not a file.
func (e *NotFileError) Error() string { return fmt.Sprintf(wire.MsgNotFileFmt, e.Path) }

// Is reports whether target is ErrNotFile.
func (e *NotFileError) Is(target error) bool { return target == ErrNotFile }

// WireError maps an error of this package to the wire error of docs/protocol.md §3.
// It is the only place where filesystem failures get their codes:
//
//   - an *rpc.Error anywhere in the chain is returned as is;
//   - the validation errors above keep their own text: -32600, or -32603 for
//     ErrTooManyEntries;
//   - an errno is worded by OSErrorMessage: ENOENT is -32004, EINVAL (Rust's
//     InvalidInput), EACCES and EPERM (PermissionDenied) are -32600, and every
//     other errno (EROFS, EEXIST, ENOTEMPTY, ENOTDIR, …) is -32603;
//   - anything else is -32603 with the error's text.
//
// err must not be nil.
func WireError(err error) *rpc.Error {
	var we *rpc.Error
	if errors.As(err, &we) {
		return we
	}
	var nf *NotFileError
	if errors.As(err, &nf) {
		return rpc.Errorf(rpc.CodeInvalidRequest, "%s", nf.Error())
	}
	// The validation errors the reference reports as InvalidInput.
	invalidInput := [...]error{ErrSymlink, ErrTooLarge, ErrCopyNeedsRecursive, ErrCopyIntoSelf, ErrCopyUnsupported}
	for _, sentinel := range invalidInput {
		if errors.Is(err, sentinel) {
			return rpc.Errorf(rpc.CodeInvalidRequest, "%s", sentinel.Error())
		}
	}
	if errors.Is(err, ErrTooManyEntries) {
		return rpc.Errorf(rpc.CodeInternalError, "%s", ErrTooManyEntries.Error())
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &rpc.Error{Code: errnoCode(errno), Message: OSErrorMessage(errno)}
	}
	return rpc.Errorf(rpc.CodeInternalError, "%s", err.Error())
}

// errnoCode is the filesystem error mapping of docs/protocol.md §3, keyed the way
// Rust's std decodes an errno into an io::ErrorKind.
func errnoCode(errno syscall.Errno) int {
	switch errno {
	case syscall.ENOENT: // NotFound
		return wire.CodeNotFound
	case syscall.EINVAL, syscall.EACCES, syscall.EPERM: // InvalidInput, PermissionDenied
		return rpc.CodeInvalidRequest
	default:
		return rpc.CodeInternalError
	}
}

// OSErrorMessage words an errno as the reference does: the C library text with
// a capital first letter, then the number, e.g.
// "No such file or directory (os error 2)" or
// "Read-only file system (os error 30)". It is the same text as
// wire.OSErrorMessage, kept here so that filesystem and process errors are
// worded by one documented function of this layer.
func OSErrorMessage(errno syscall.Errno) string { return wire.OSErrorMessage(errno) }
