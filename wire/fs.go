package wire

import (
	"encoding/json"
)

// Request params and results of the fs/* methods (docs/protocol.md §6.11): the
// single source of truth for their JSON shapes. Optional booleans are pointers
// so that absent and null both mean "use the wire default". Every params
// struct carries the optional sandbox object as raw JSON (fshelper decides
// how it is used).

// ReadFileParams is the params of fs/readFile.
type ReadFileParams struct {
	Path           Path            `json:"path" rpc:"required"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

// The fs/readFile result {"dataBase64": "..."} is a Base64Result,
// streamed into the response frame (an empty file gives "").

// WriteFileParams is the params of fs/writeFile.
type WriteFileParams struct {
	Path Path `json:"path" rpc:"required"`
	// DataBase64 stays a string here: a decoding failure is a -32600 error of
	// the method, reported after the params decoded.
	DataBase64     *string         `json:"dataBase64" rpc:"required"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

// CreateDirectoryParams is the params of fs/createDirectory.
type CreateDirectoryParams struct {
	Path           Path            `json:"path" rpc:"required"`
	Recursive      *bool           `json:"recursive"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

// GetMetadataParams is the params of fs/getMetadata.
type GetMetadataParams struct {
	Path           Path            `json:"path" rpc:"required"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

// MetadataResult is the result of fs/getMetadata.
type MetadataResult struct {
	IsDirectory  bool   `json:"isDirectory"`
	IsFile       bool   `json:"isFile"`
	IsSymlink    bool   `json:"isSymlink"`
	Size         uint64 `json:"size"`
	CreatedAtMs  int64  `json:"createdAtMs"`
	ModifiedAtMs int64  `json:"modifiedAtMs"`
}

// ReadDirectoryParams is the params of fs/readDirectory.
type ReadDirectoryParams struct {
	Path    Path            `json:"path" rpc:"required"`
	Sandbox json.RawMessage `json:"sandbox"`
}

// ReadDirectoryResult is the result of fs/readDirectory.
type ReadDirectoryResult struct {
	// Entries is never nil, so that an empty directory gives [].
	Entries []DirEntry `json:"entries"`
}

// DirEntry is one entry in the result of fs/readDirectory.
type DirEntry struct {
	FileName    string `json:"fileName"`
	IsDirectory bool   `json:"isDirectory"`
	IsFile      bool   `json:"isFile"`
}

// RemoveParams is the params of fs/remove.
type RemoveParams struct {
	Path           Path            `json:"path" rpc:"required"`
	Recursive      *bool           `json:"recursive"`
	Force          *bool           `json:"force"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

// CopyParams is the params of fs/copy.
type CopyParams struct {
	SourcePath      Path `json:"sourcePath" rpc:"required"`
	DestinationPath Path `json:"destinationPath" rpc:"required"`
	// Recursive is required and must be a boolean; a pointer tells null
	// apart from false.
	Recursive *bool           `json:"recursive" rpc:"required"`
	Sandbox   json.RawMessage `json:"sandbox"`
}

// CanonicalizeParams is the params of fs/canonicalize.
type CanonicalizeParams struct {
	Path    Path            `json:"path" rpc:"required"`
	Sandbox json.RawMessage `json:"sandbox"`
}

// CanonicalizeResult is the result of fs/canonicalize.
type CanonicalizeResult struct {
	// Path has the form (URI or plain) of the request's path.
	Path Path `json:"path"`
}

// EmptyResult is the `{}` result of the methods that return nothing.
type EmptyResult = struct{}
