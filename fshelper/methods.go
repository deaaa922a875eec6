package fshelper

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"os"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// Handlers returns the fs/* request handlers, keyed by method name:
// fs/readFile, fs/writeFile, fs/createDirectory, fs/getMetadata,
// fs/readDirectory, fs/remove, fs/copy and fs/canonicalize. The map is new on
// every call and the handlers keep no state, so they are safe for concurrent
// use. They do not check the handshake; the caller gates them.
//
// Each handler decodes its params with rpc.DecodeParams (bad params, paths
// included, are -32602 errors), applies the wire defaults (followSymlinks,
// createDirectory's recursive, remove's recursive and force all default to
// true), runs the operation and returns its result struct, or the wire error
// chosen by WireError.
//
// A request whose sandbox must be enforced (a restricted filesystem policy
// without full-disk write) runs in a sandboxed `--fs-helper` child instead;
// every other request runs directly in the server process. env is the
// environment the server gives its children (execserver's
// SessionConfig.BaseEnv): the helper gets its PATH, TMPDIR, TMP and TEMP,
// and that TMPDIR is the sandbox's tmpdir, never the server's own
// (docs/sandbox.md §3.1).
func Handlers(env []string) map[string]rpc.HandlerFunc {
	env = helperEnv(env)
	hs := directHandlers()
	for method, direct := range hs {
		hs[method] = func(ctx context.Context, req *rpc.Request) (any, error) {
			if res, handled, err := sandboxedCall(ctx, req.Method, req.Params, env); handled {
				return res, err
			}
			return direct(ctx, req)
		}
	}
	return hs
}

// directHandlers run every operation in this process.
func directHandlers() map[string]rpc.HandlerFunc {
	return map[string]rpc.HandlerFunc{
		wire.MethodFSReadFile:        bind(readFile),
		wire.MethodFSWriteFile:       bind(writeFile),
		wire.MethodFSCreateDirectory: bind(createDirectory),
		wire.MethodFSGetMetadata:     bind(getMetadata),
		wire.MethodFSReadDirectory:   bind(readDirectory),
		wire.MethodFSRemove:          bind(remove),
		wire.MethodFSCopy:            bind(copyMethod),
		wire.MethodFSCanonicalize:    bind(canonicalize),
	}
}

// bind adapts a method body to a handler: it decodes the params into a P and
// converts a failure of run into its wire error.
func bind[P any](run func(p *P) (any, error)) rpc.HandlerFunc {
	return func(_ context.Context, req *rpc.Request) (any, error) {
		var p P
		if err := rpc.DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		res, err := run(&p)
		if err != nil {
			return nil, WireError(err)
		}
		return res, nil
	}
}

// pathOptions converts the wire's followSymlinks (default true).
func pathOptions(followSymlinks *bool) Options {
	return Options{NoFollowSymlinks: !boolOr(followSymlinks, true)}
}

func readFile(p *wire.ReadFileParams) (any, error) {
	data, err := ReadFile(p.Path.Native, pathOptions(p.FollowSymlinks))
	if err != nil {
		return nil, err
	}
	// Streamed: the base64 text goes straight into the outgoing message
	// instead of through json.Marshal and a frame copy (6× the file).
	return wire.Base64Result{Field: "dataBase64", Data: data}, nil
}

func writeFile(p *wire.WriteFileParams) (any, error) {
	if p.DataBase64 == nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, errNullField, "a string")
	}
	data, err := base64.StdEncoding.DecodeString(*p.DataBase64)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, errBadBase64, err)
	}
	if err := WriteFile(p.Path.Native, data, pathOptions(p.FollowSymlinks)); err != nil {
		return nil, err
	}
	return wire.EmptyResult{}, nil
}

func createDirectory(p *wire.CreateDirectoryParams) (any, error) {
	opts := CreateDirectoryOptions{
		Recursive:        boolOr(p.Recursive, true),
		NoFollowSymlinks: pathOptions(p.FollowSymlinks).NoFollowSymlinks,
	}
	if err := CreateDirectory(p.Path.Native, opts); err != nil {
		return nil, err
	}
	return wire.EmptyResult{}, nil
}

func getMetadata(p *wire.GetMetadataParams) (any, error) {
	md, err := GetMetadata(p.Path.Native, pathOptions(p.FollowSymlinks))
	if err != nil {
		return nil, err
	}
	return wire.MetadataResult{
		IsDirectory:  md.IsDirectory,
		IsFile:       md.IsFile,
		IsSymlink:    md.IsSymlink,
		Size:         md.Size,
		CreatedAtMs:  unixMilli(md.Created),
		ModifiedAtMs: unixMilli(md.Modified),
	}, nil
}

// unixMilli is t in ms since the epoch, or 0 when t is unknown or earlier than
// the epoch, as the reference reports it.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixMilli(), 0)
}

func readDirectory(p *wire.ReadDirectoryParams) (any, error) {
	entries, err := ReadDirectory(p.Path.Native)
	if err != nil {
		return nil, err
	}
	res := wire.ReadDirectoryResult{Entries: make([]wire.DirEntry, 0, len(entries))}
	for _, e := range entries {
		res.Entries = append(res.Entries, wire.DirEntry{FileName: e.Name, IsDirectory: e.IsDirectory, IsFile: e.IsFile})
	}
	return res, nil
}

func remove(p *wire.RemoveParams) (any, error) {
	opts := RemoveOptions{
		Recursive:        boolOr(p.Recursive, true),
		Force:            boolOr(p.Force, true),
		NoFollowSymlinks: pathOptions(p.FollowSymlinks).NoFollowSymlinks,
	}
	if err := Remove(p.Path.Native, opts); err != nil {
		return nil, err
	}
	return wire.EmptyResult{}, nil
}

func copyMethod(p *wire.CopyParams) (any, error) {
	if p.Recursive == nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, errNullField, "a boolean")
	}
	opts := CopyOptions{Recursive: *p.Recursive}
	if err := Copy(p.SourcePath.Native, p.DestinationPath.Native, opts); err != nil {
		return nil, err
	}
	return wire.EmptyResult{}, nil
}

func canonicalize(p *wire.CanonicalizeParams) (any, error) {
	resolved, err := Canonicalize(p.Path.Native)
	if err != nil {
		return nil, err
	}
	return wire.CanonicalizeResult{Path: p.Path.WithNative(resolved)}, nil
}

// boolOr returns *b, or def when b is nil (absent or null on the wire).
func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// ConnHandlers returns the maker of the fs/* handlers bound per connection
// (execserver's Config.ConnExtra): fs/watchMissing and its single watch
// slot, the file handles (fs/open, fs/readBlock, fs/writeBlock, fs/close),
// and the stateless GatedHandlers (fs/walk, capabilities/discoverV2). env is the environment the server gives its
// children, for the fs helper of a sandboxed fs/open (as in Handlers).
//
// The maker is called from the connection's Bind. fs/missingChanged goes
// out through c.Notify (ordered with the connection's other messages,
// blocking while the peer does not read). The watch and the handles end
// with the connection: a goroutine owned by c closes the slot, which stops
// the watch's goroutine and closes its inotify fd, and closes every handle.
// gate is the handshake check, called after the params decoded (a decoding
// error wins over it, as in the reference).
func ConnHandlers(env []string) func(c *rpc.Conn, gate func() error) map[string]rpc.HandlerFunc {
	return func(c *rpc.Conn, gate func() error) map[string]rpc.HandlerFunc {
		w := NewMissingWatcher(func(ctx context.Context, id uint64) {
			_ = c.Notify(ctx, wire.MethodFSMissingChanged, wire.MissingChangedParams{WatchID: id})
		})
		hs := NewHandles(env)
		c.AtEnd(func() {
			w.Close()
			hs.Close()
		})
		m := map[string]rpc.HandlerFunc{
			wire.MethodFSWatchMissing: func(_ context.Context, req *rpc.Request) (any, error) {
				p, err := wire.DecodeWatchMissing(req.Params)
				if err != nil {
					return nil, err
				}
				if err := gate(); err != nil {
					return nil, err
				}
				missing := make([]string, len(p.Missing))
				for i, m := range p.Missing {
					missing[i] = m.Native
				}
				present := ""
				if p.Present != nil {
					present = p.Present.Native
				}
				return wire.WatchMissingResult{Watching: w.Watch(p.WatchID, missing, present)}, nil
			},
		}
		for method, h := range handleBindings(hs) {
			m[method] = gated(gate, h)
		}
		maps.Copy(m, GatedHandlers(env, gate))
		return m
	}
}

// gated runs h after its params decoded and the handshake check passed:
// h returns its decoded params' runner, or the decoding error.
func gated(gate func() error, h func(ctx context.Context, raw json.RawMessage) (func() (any, error), error)) rpc.HandlerFunc {
	return func(ctx context.Context, req *rpc.Request) (any, error) {
		run, err := h(ctx, req.Params)
		if err != nil {
			return nil, err
		}
		if err := gate(); err != nil {
			return nil, err
		}
		return run()
	}
}

// handleBindings are the file-handle methods on hs: each decodes its
// params (the reference's texts) and returns what runs after the gate.
func handleBindings(hs *Handles) map[string]func(ctx context.Context, raw json.RawMessage) (func() (any, error), error) {
	wireErr := func(err error) error {
		if err == nil {
			return nil
		}
		return WireError(err)
	}
	return map[string]func(ctx context.Context, raw json.RawMessage) (func() (any, error), error){
		wire.MethodFSOpen: func(ctx context.Context, raw json.RawMessage) (func() (any, error), error) {
			p, err := wire.DecodeOpen(raw)
			if err != nil {
				return nil, err
			}
			if _, err := sandbox.ParseSandbox(p.Sandbox); err != nil {
				return nil, fsSandboxError(err)
			}
			return func() (any, error) {
				if err := hs.Open(ctx, &p); err != nil {
					return nil, wireErr(err)
				}
				return wire.OpenResult{HandleID: p.HandleID}, nil
			}, nil
		},
		wire.MethodFSReadBlock: func(_ context.Context, raw json.RawMessage) (func() (any, error), error) {
			p, err := wire.DecodeReadBlock(raw)
			if err != nil {
				return nil, err
			}
			return func() (any, error) {
				data, eof, release, err := hs.ReadBlock(p.HandleID, p.Offset, p.Len)
				if err != nil {
					return nil, wireErr(err)
				}
				return wire.ReadBlockChunk{Chunk: data, EOF: eof, Release: release}, nil
			}, nil
		},
		wire.MethodFSWriteBlock: func(_ context.Context, raw json.RawMessage) (func() (any, error), error) {
			bp := blockBuffers.Get().(*[]byte)
			p, err := wire.DecodeWriteBlock(raw, *bp)
			if err != nil {
				blockBuffers.Put(bp)
				return nil, err
			}
			return func() (any, error) {
				defer blockBuffers.Put(bp) // p.Chunk is in it, or new memory
				if err := hs.WriteBlock(p.HandleID, p.Offset, p.Chunk); err != nil {
					return nil, wireErr(err)
				}
				return wire.EmptyResult{}, nil
			}, nil
		},
		wire.MethodFSClose: func(_ context.Context, raw json.RawMessage) (func() (any, error), error) {
			p, err := wire.DecodeClose(raw)
			if err != nil {
				return nil, err
			}
			return func() (any, error) {
				hs.CloseHandle(p.HandleID)
				return wire.EmptyResult{}, nil
			}, nil
		},
	}
}

// GatedHandlers returns the fs/* handlers that check the handshake
// themselves, after decoding their params (a decoding error wins over the
// handshake's, as in the reference): fs/walk. gate is the connection's
// handshake check; env is as for Handlers. Call it from the connection's
// Bind, as ConnHandlers; the handlers keep no state.
//
// A walk whose sandbox must be enforced runs in a sandboxed `--fs-helper`
// child, as the other fs calls do (docs/protocol.md §8.3): what its sandbox
// cannot read comes back as errors items, never as entries.
func GatedHandlers(env []string, gate func() error) map[string]rpc.HandlerFunc {
	env = helperEnv(env)
	return map[string]rpc.HandlerFunc{
		wire.MethodFSWalk: func(ctx context.Context, req *rpc.Request) (any, error) {
			p, err := wire.DecodeWalkParams(req.Params)
			if err != nil {
				return nil, err
			}
			if err := gate(); err != nil {
				return nil, err
			}
			if err := p.Options.CheckWalkLimits(); err != nil {
				return nil, err // before a helper is started for nothing
			}
			if res, handled, err := sandboxedCall(ctx, req.Method, req.Params, env); handled {
				return res, err
			}
			return walk(&p)
		},
		wire.MethodCapabilitiesDiscoverV2: func(ctx context.Context, req *rpc.Request) (any, error) {
			p, err := wire.DecodeDiscoverV2Params(req.Params)
			if err != nil {
				return nil, err
			}
			if err := regate(gate(), "capability discovery"); err != nil {
				return nil, err
			}
			// The roots are the server's; a sandboxed discovery reads them
			// in the fs helper, under the request's sandbox.
			hp, err := json.Marshal(discoverHelperParams{Roots: SkillRoots(os.Getenv), Sandbox: p.Sandbox})
			if err != nil {
				return nil, rpc.Errorf(rpc.CodeInternalError, "%v", err)
			}
			if res, handled, err := sandboxedCall(ctx, req.Method, hp, env); handled {
				return res, err
			}
			return discoverDirect(context.Background(), &rpc.Request{Params: hp})
		},
	}
}

// regate words a handshake error of the "filesystem" family (the gate a
// connection's extra methods get) for family instead.
func regate(err error, family string) error {
	if err == nil {
		return nil
	}
	switch rpc.ToWire(err).Message {
	case wire.ErrBeforeInitialize("filesystem").Message:
		return wire.ErrBeforeInitialize(family)
	case wire.ErrBeforeInitialized("filesystem").Message:
		return wire.ErrBeforeInitialized(family)
	}
	return err
}

// discoverHelperParams is what capabilities/discoverV2 runs on, in this
// process or in the fs helper: the roots the server chose.
type discoverHelperParams struct {
	Roots   []SkillRootDir  `json:"roots"`
	Sandbox json.RawMessage `json:"sandbox,omitempty"`
}

// discoverDirect lists the skills of the roots in the params.
func discoverDirect(_ context.Context, req *rpc.Request) (any, error) {
	var p discoverHelperParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	skills, incomplete := DiscoverSkills(p.Roots)
	res := wire.DiscoverV2Result{Plugins: []json.RawMessage{}, Skills: skills, Warnings: []string{}}
	if incomplete {
		res.Warnings = append(res.Warnings, wire.DiscoverWarningIncomplete)
	}
	return res, nil
}

// walkDirect is fs/walk in this process: the helper's binding.
func walkDirect(_ context.Context, req *rpc.Request) (any, error) {
	p, err := wire.DecodeWalkParams(req.Params)
	if err != nil {
		return nil, err
	}
	return walk(&p)
}

func walk(p *wire.WalkParams) (any, error) {
	if err := p.Options.CheckWalkLimits(); err != nil {
		return nil, err
	}
	o := p.Options
	r, err := Walk(p.Path.Native, WalkOptions{
		MaxDepth: o.MaxDepth, MaxDirectories: o.MaxDirectories, MaxEntries: o.MaxEntries,
		FollowDirectorySymlinks: o.FollowDirectorySymlinks, PruneHiddenDirectories: o.PruneHiddenDirectories,
	})
	if err != nil {
		return nil, WireError(err)
	}
	res := wire.WalkResult{
		Entries:   make([]wire.WalkEntry, len(r.Entries)),
		Errors:    make([]wire.WalkError, len(r.Errors)),
		Truncated: r.Truncated,
	}
	for i, e := range r.Entries {
		kind := wire.WalkKindFile
		if e.Directory {
			kind = wire.WalkKindDirectory
		}
		res.Entries[i] = wire.WalkEntry{Path: p.Path.WithNative(e.Path), Kind: kind}
	}
	for i, e := range r.Errors {
		res.Errors[i] = wire.WalkError{Path: p.Path.WithNative(e.Path), Message: WireError(e.Err).Message}
	}
	return res, nil
}
