package fshelper

import (
	"encoding/json"

	"github.com/codexec/codex/rpc"
)

// Request params and results of the fs/* methods (protocol.md §6.11): the
// single source of truth for their JSON shapes. Optional booleans are pointers
// so that absent and null both mean "use the wire default". Every params
// struct carries the optional sandbox object as raw JSON; see methods.go for
// how it is used.

type readFileParams struct {
	Path           rpc.Path        `json:"path" rpc:"required"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

// The fs/readFile result {"dataBase64": "..."} is an rpc.Base64Result,
// streamed into the response frame (an empty file gives "").

type writeFileParams struct {
	Path rpc.Path `json:"path" rpc:"required"`
	// DataBase64 stays a string here: a decoding failure is a -32600 error of
	// the method, reported after the params decoded.
	DataBase64     *string         `json:"dataBase64" rpc:"required"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

type createDirectoryParams struct {
	Path           rpc.Path        `json:"path" rpc:"required"`
	Recursive      *bool           `json:"recursive"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

type getMetadataParams struct {
	Path           rpc.Path        `json:"path" rpc:"required"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

type metadataResult struct {
	IsDirectory  bool   `json:"isDirectory"`
	IsFile       bool   `json:"isFile"`
	IsSymlink    bool   `json:"isSymlink"`
	Size         uint64 `json:"size"`
	CreatedAtMs  int64  `json:"createdAtMs"`
	ModifiedAtMs int64  `json:"modifiedAtMs"`
}

type readDirectoryParams struct {
	Path    rpc.Path        `json:"path" rpc:"required"`
	Sandbox json.RawMessage `json:"sandbox"`
}

type readDirectoryResult struct {
	// Entries is never nil, so that an empty directory gives [].
	Entries []dirEntryResult `json:"entries"`
}

type dirEntryResult struct {
	FileName    string `json:"fileName"`
	IsDirectory bool   `json:"isDirectory"`
	IsFile      bool   `json:"isFile"`
}

type removeParams struct {
	Path           rpc.Path        `json:"path" rpc:"required"`
	Recursive      *bool           `json:"recursive"`
	Force          *bool           `json:"force"`
	FollowSymlinks *bool           `json:"followSymlinks"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

type copyParams struct {
	SourcePath      rpc.Path `json:"sourcePath" rpc:"required"`
	DestinationPath rpc.Path `json:"destinationPath" rpc:"required"`
	// Recursive is required and must be a boolean; a pointer tells null
	// apart from false.
	Recursive *bool           `json:"recursive" rpc:"required"`
	Sandbox   json.RawMessage `json:"sandbox"`
}

type canonicalizeParams struct {
	Path    rpc.Path        `json:"path" rpc:"required"`
	Sandbox json.RawMessage `json:"sandbox"`
}

type canonicalizeResult struct {
	// Path has the form (URI or plain) of the request's path.
	Path rpc.Path `json:"path"`
}

// emptyResult is the `{}` result of the methods that return nothing.
type emptyResult = struct{}

// boolOr returns *b, or def when b is nil (absent or null on the wire).
func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}
