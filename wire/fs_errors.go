package wire

import "github.com/codexec/codex/rpc"

// Messages of the fs/* methods, with the exact texts of docs/protocol.md §3.
// The filesystem layer (fshelper) builds its errors from them; the codes
// are chosen there (fshelper.WireError).
const (
	MsgSymlink            = "path contains a symbolic link"
	MsgFileTooLargeFmt    = "file is too large to read: limit is %d bytes"
	MsgNotFile            = "path is not a file"
	MsgNotFileFmt         = "path `%s` is not a file"
	MsgCopyNeedsRecursive = "fs/copy requires recursive: true when sourcePath is a directory"
	MsgCopyIntoSelf       = "fs/copy cannot copy a directory to itself or one of its descendants"
	MsgCopyUnsupported    = "fs/copy only supports regular files, directories, and symlinks"
	MsgTooManyEntriesFmt  = "directory has too many entries: limit is %d entries"
	MsgBadBase64Fmt       = "fs/writeFile requires valid base64 dataBase64: %v"
	MsgNullFieldFmt       = "invalid type: null, expected %s"
)

// ErrFSSandboxUnenforceable is an fs/* sandbox the executor cannot enforce.
func ErrFSSandboxUnenforceable() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "filesystem sandbox cannot be enforced on this executor")
}

// ErrFSSandboxPrepare is an fs/* sandbox that failed to resolve.
func ErrFSSandboxPrepare(err error) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "failed to prepare fs sandbox: %v", err)
}
