package fshelper_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

func TestWireError(t *testing.T) {
	pathErr := func(errno syscall.Errno) error { return &fs.PathError{Op: "open", Path: "/p", Err: errno} }
	cases := []struct {
		name string
		err  error
		code int
		msg  string
	}{
		{"ENOENT", pathErr(syscall.ENOENT), wire.CodeNotFound, "No such file or directory (os error 2)"},
		{"EACCES", pathErr(syscall.EACCES), rpc.CodeInvalidRequest, "Permission denied (os error 13)"},
		{"EPERM", pathErr(syscall.EPERM), rpc.CodeInvalidRequest, "Operation not permitted (os error 1)"},
		{"EINVAL", pathErr(syscall.EINVAL), rpc.CodeInvalidRequest, "Invalid argument (os error 22)"},
		{"EROFS", pathErr(syscall.EROFS), rpc.CodeInternalError, "Read-only file system (os error 30)"},
		{"EEXIST", pathErr(syscall.EEXIST), rpc.CodeInternalError, "File exists (os error 17)"},
		{"ENOTEMPTY", pathErr(syscall.ENOTEMPTY), rpc.CodeInternalError, "Directory not empty (os error 39)"},
		{"ENOTDIR", pathErr(syscall.ENOTDIR), rpc.CodeInternalError, "Not a directory (os error 20)"},
		{"EBADF", pathErr(syscall.EBADF), rpc.CodeInternalError, "Bad file descriptor (os error 9)"},
		{"bare errno", syscall.ENOENT, wire.CodeNotFound, "No such file or directory (os error 2)"},
		{"link error", &os.LinkError{Op: "symlink", Old: "a", New: "b", Err: syscall.EEXIST}, rpc.CodeInternalError, "File exists (os error 17)"},
		{"symlink", fmt.Errorf("walk: %w", fshelper.ErrSymlink), rpc.CodeInvalidRequest, "path contains a symbolic link"},
		{"not a file", fmt.Errorf("read: %w", &fshelper.NotFileError{Path: "/p"}), rpc.CodeInvalidRequest, "path `/p` is not a file"},
		{"too large", fshelper.ErrTooLarge, rpc.CodeInvalidRequest, "file is too large to read: limit is 536870912 bytes"},
		{"copy recursive", fshelper.ErrCopyNeedsRecursive, rpc.CodeInvalidRequest, "fs/copy requires recursive: true when sourcePath is a directory"},
		{"copy into self", fshelper.ErrCopyIntoSelf, rpc.CodeInvalidRequest, "fs/copy cannot copy a directory to itself or one of its descendants"},
		{"copy unsupported", fshelper.ErrCopyUnsupported, rpc.CodeInvalidRequest, "fs/copy only supports regular files, directories, and symlinks"},
		{"too many entries", fshelper.ErrTooManyEntries, rpc.CodeInternalError, "directory has too many entries: limit is 50000 entries"},
		{"wire error kept", fmt.Errorf("x: %w", rpc.Errorf(rpc.CodeInvalidParams, "bad")), rpc.CodeInvalidParams, "bad"},
		{"other", errors.New("boom"), rpc.CodeInternalError, "boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fshelper.WireError(tc.err)
			if got.Code != tc.code || got.Message != tc.msg {
				t.Fatalf("WireError(%v) = %d %q, want %d %q", tc.err, got.Code, got.Message, tc.code, tc.msg)
			}
		})
	}
}

func TestOSErrorMessage(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{
		syscall.ENOENT:    "No such file or directory (os error 2)",
		syscall.EEXIST:    "File exists (os error 17)",
		syscall.ENOTEMPTY: "Directory not empty (os error 39)",
		syscall.ENOTDIR:   "Not a directory (os error 20)",
		syscall.EROFS:     "Read-only file system (os error 30)",
		syscall.EBADF:     "Bad file descriptor (os error 9)",
	} {
		if got := fshelper.OSErrorMessage(errno); got != want {
			t.Errorf("OSErrorMessage(%d) = %q, want %q", int(errno), got, want)
		}
	}
}

func TestNotFileErrorIs(t *testing.T) {
	err := fmt.Errorf("ctx: %w", &fshelper.NotFileError{Path: "/x"})
	if !errors.Is(err, fshelper.ErrNotFile) {
		t.Fatal("NotFileError does not match ErrNotFile")
	}
	if errors.Is(fshelper.ErrSymlink, fshelper.ErrNotFile) {
		t.Fatal("ErrSymlink matches ErrNotFile")
	}
}
