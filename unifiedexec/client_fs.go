package unifiedexec

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/codexec/codex/wire"
)

// The fs/* calls (docs/protocol.md §6.11). A path is a file:// URI or an
// absolute path; one the client cannot parse is sent as it is, for the
// server to refuse with its own error. A sandbox is the wire sandbox object
// (ReadOnly, WorkspaceWrite, or raw JSON); nil means none.

// wirePath is s as a wire path: parsed when it parses, else verbatim.
func wirePath(s string) wire.Path {
	if p, err := wire.ParsePath(s); err == nil {
		return p
	}
	return wire.Path{Native: s}
}

// rawSandbox is sb as the sandbox member: null when nil.
func rawSandbox(sb []byte) json.RawMessage {
	if sb == nil {
		return json.RawMessage("null")
	}
	return json.RawMessage(sb)
}

// ReadFile sends fs/readFile and returns the file's bytes.
func (c *Client) ReadFile(ctx context.Context, path string, sandbox []byte) ([]byte, error) {
	var res wire.ReadFileResult
	params := wire.ReadFileParams{Path: wirePath(path), Sandbox: rawSandbox(sandbox)}
	err := c.call(ctx, wire.MethodFSReadFile, params, &res, true)
	return res.DataBase64, err
}

// WriteFile sends fs/writeFile (create or truncate). It is not replayed.
func (c *Client) WriteFile(ctx context.Context, path string, data []byte, sandbox []byte) error {
	b64 := base64.StdEncoding.EncodeToString(data)
	params := wire.WriteFileParams{Path: wirePath(path), DataBase64: &b64, Sandbox: rawSandbox(sandbox)}
	return c.call(ctx, wire.MethodFSWriteFile, params, nil, false)
}

// Metadata is the result of fs/getMetadata.
type Metadata = wire.MetadataResult

// GetMetadata sends fs/getMetadata.
func (c *Client) GetMetadata(ctx context.Context, path string) (Metadata, error) {
	var res Metadata
	params := wire.GetMetadataParams{Path: wirePath(path), Sandbox: rawSandbox(nil)}
	err := c.call(ctx, wire.MethodFSGetMetadata, params, &res, true)
	return res, err
}

// CreateDirectory sends fs/createDirectory (mkdir -p when recursive).
func (c *Client) CreateDirectory(ctx context.Context, path string, recursive bool) error {
	params := wire.CreateDirectoryParams{Path: wirePath(path), Recursive: &recursive, Sandbox: rawSandbox(nil)}
	return c.call(ctx, wire.MethodFSCreateDirectory, params, nil, true)
}

// Remove sends fs/remove {recursive, force}. It is not replayed.
func (c *Client) Remove(ctx context.Context, path string, recursive, force bool) error {
	params := wire.RemoveParams{Path: wirePath(path), Recursive: &recursive, Force: &force, Sandbox: rawSandbox(nil)}
	return c.call(ctx, wire.MethodFSRemove, params, nil, false)
}

// DirEntry is one entry of fs/readDirectory.
type DirEntry = wire.DirEntry

// ReadDirectory sends fs/readDirectory. Entries come in the server's
// directory order.
func (c *Client) ReadDirectory(ctx context.Context, path string) ([]DirEntry, error) {
	var res wire.ReadDirectoryResult
	params := wire.ReadDirectoryParams{Path: wirePath(path), Sandbox: rawSandbox(nil)}
	err := c.call(ctx, wire.MethodFSReadDirectory, params, &res, true)
	return res.Entries, err
}

// Copy sends fs/copy; a directory needs recursive. It is not replayed.
func (c *Client) Copy(ctx context.Context, src, dst string, recursive bool) error {
	params := wire.CopyParams{SourcePath: wirePath(src), DestinationPath: wirePath(dst), Recursive: &recursive, Sandbox: rawSandbox(nil)}
	return c.call(ctx, wire.MethodFSCopy, params, nil, false)
}

// Canonicalize sends fs/canonicalize and returns the resolved path in the
// form of path (a file:// URI or a plain absolute path).
func (c *Client) Canonicalize(ctx context.Context, path string) (string, error) {
	var res wire.CanonicalizeResult
	params := wire.CanonicalizeParams{Path: wirePath(path), Sandbox: rawSandbox(nil)}
	err := c.call(ctx, wire.MethodFSCanonicalize, params, &res, true)
	return res.Path.String(), err
}
