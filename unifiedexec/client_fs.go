package unifiedexec

import (
	"context"
	"encoding/json"
	"github.com/codexec/codex/wire"
)

// DirEntry is one entry of fs/readDirectory.
type DirEntry = wire.DirEntry

// ReadDirectory sends fs/readDirectory. Entries come in the server's
// directory order.
func (c *Client) ReadDirectory(ctx context.Context, path string) ([]DirEntry, error) {
	var res wire.ReadDirectoryResult
	err := c.call(ctx, wire.MethodFSReadDirectory, fsParams{Path: path, Sandbox: rawSandbox(nil)}, &res, true)
	return res.Entries, err
}

// Copy sends fs/copy; a directory needs recursive. It is not replayed.
func (c *Client) Copy(ctx context.Context, src, dst string, recursive bool) error {
	params := struct {
		SourcePath      string          `json:"sourcePath"`
		DestinationPath string          `json:"destinationPath"`
		Recursive       bool            `json:"recursive"`
		Sandbox         json.RawMessage `json:"sandbox"`
	}{src, dst, recursive, rawSandbox(nil)}
	return c.call(ctx, wire.MethodFSCopy, params, nil, false)
}

// Canonicalize sends fs/canonicalize and returns the resolved path in the
// form of path (a file:// URI or a plain absolute path).
func (c *Client) Canonicalize(ctx context.Context, path string) (string, error) {
	var res struct {
		Path string `json:"path"`
	}
	err := c.call(ctx, wire.MethodFSCanonicalize, fsParams{Path: path, Sandbox: rawSandbox(nil)}, &res, true)
	return res.Path, err
}
