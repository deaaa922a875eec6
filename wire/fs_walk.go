package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/codexec/codex/rpc"
)

// MethodFSWalk lists a directory tree breadth-first within budgets
// (docs/protocol.md §6.11.2).
const MethodFSWalk = "fs/walk"

// The largest budgets fs/walk accepts, the reference's: a request above any
// of them is refused with ErrWalkLimitsExceeded.
const (
	WalkMaxDepth       = 64
	WalkMaxDirectories = 10000
	WalkMaxEntries     = 50000
)

// WalkResultBudget is the reference's bound on one fs/walk answer: an
// entry costs the length of its URI plus WalkItemOverhead, an errors item
// the length of its URI and of its message plus WalkItemOverhead; the walk
// stops, truncated, before an item that would take the sum above the
// budget (docs/protocol.md §6.11.2).
const (
	WalkResultBudget = 4 << 20
	WalkItemOverhead = 64
)

// Walk entry kinds.
const (
	WalkKindFile      = "file"
	WalkKindDirectory = "directory"
)

// WalkParams is the params of fs/walk. Decode it with DecodeWalkParams,
// which reports problems with the reference's texts.
type WalkParams struct {
	Path    Path            `json:"path" rpc:"required"`
	Options WalkOptions     `json:"options" rpc:"required"`
	Sandbox json.RawMessage `json:"sandbox"`
}

// WalkOptions are the budgets and rules of one walk.
type WalkOptions struct {
	// MaxDepth is how many levels below the root's children are listed:
	// 0 lists the root's children only.
	MaxDepth uint64 `json:"maxDepth" rpc:"required"`
	// MaxDirectories is how many directories are read, the root included.
	MaxDirectories uint64 `json:"maxDirectories" rpc:"required"`
	// MaxEntries is how many directory entries are examined.
	MaxEntries uint64 `json:"maxEntries" rpc:"required"`
	// FollowDirectorySymlinks lists a link to a directory as a directory
	// and walks it once.
	FollowDirectorySymlinks bool `json:"followDirectorySymlinks" rpc:"required"`
	// PruneHiddenDirectories lists directories whose name starts with a dot
	// without walking them.
	PruneHiddenDirectories bool `json:"pruneHiddenDirectories,omitempty"`
}

// WalkResult is the result of fs/walk. Entries and Errors are never nil.
type WalkResult struct {
	Entries   []WalkEntry `json:"entries"`
	Errors    []WalkError `json:"errors"`
	Truncated bool        `json:"truncated"`
}

// WalkEntry is one listed file or directory.
type WalkEntry struct {
	Path Path   `json:"path"`
	Kind string `json:"kind" jsonschema:"enum=file,enum=directory"`
}

// WalkError is a directory that could not be read, or an entry whose type
// could not be read, with the OS error's text.
type WalkError struct {
	Path    Path   `json:"path"`
	Message string `json:"message"`
}

// ErrWalkLimitsZero is a maxDirectories or maxEntries of 0.
func ErrWalkLimitsZero() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "filesystem walk limits must be greater than zero")
}

// ErrWalkLimitsExceeded is a budget above the maximums.
func ErrWalkLimitsExceeded() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "filesystem walk limits exceed maximums: depth=%d, directories=%d, entries=%d",
		WalkMaxDepth, WalkMaxDirectories, WalkMaxEntries)
}

// CheckWalkLimits applies the reference's budget rules, zero first.
func (o WalkOptions) CheckWalkLimits() error {
	if o.MaxDirectories == 0 || o.MaxEntries == 0 {
		return ErrWalkLimitsZero()
	}
	if o.MaxDepth > WalkMaxDepth || o.MaxDirectories > WalkMaxDirectories || o.MaxEntries > WalkMaxEntries {
		return ErrWalkLimitsExceeded()
	}
	return nil
}

// DecodeWalkParams decodes fs/walk params as the reference's serde does
// (docs/protocol.md §6.11.2): an object or the positional
// [path, options, sandbox]; options an object or
// [maxDepth, maxDirectories, maxEntries, followDirectorySymlinks,
// pruneHiddenDirectories?]. Members are checked in their order of
// declaration, unknown members are ignored, and every failure is -32602.
// The sandbox is checked to be an object or null; its contents are the
// sandbox package's to read.
func DecodeWalkParams(raw json.RawMessage) (WalkParams, error) {
	var p WalkParams
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	var path, options, sb json.RawMessage
	switch raw[0] {
	case '{':
		m, err := objectMap(raw)
		if err != nil {
			return p, err
		}
		var ok bool
		if path, ok = m["path"]; !ok {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "missing field `path`")
		}
		if options, ok = m["options"]; !ok {
			if _, err := decodeURI(path); err != nil {
				return p, err
			}
			return p, rpc.Errorf(rpc.CodeInvalidParams, "missing field `options`")
		}
		sb = m["sandbox"]
	case '[':
		a, err := arrayItems(raw)
		if err != nil {
			return p, err
		}
		if len(a) < 3 {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected struct WireFsWalkParams with 3 elements", len(a))
		}
		if len(a) > 3 {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected fewer elements in array", len(a))
		}
		path, options, sb = a[0], a[1], a[2]
	default:
		return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct WireFsWalkParams", paramKind(raw))
	}
	if path[0] != '"' {
		return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a string", paramKind(path))
	}
	var err error
	if p.Path, err = decodeURI(path); err != nil {
		return p, err
	}
	if p.Options, err = decodeWalkOptions(options); err != nil {
		return p, err
	}
	if len(sb) > 0 && !isNull(sb) {
		if sb[0] != '{' {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct WireFileSystemSandboxContext", paramKind(sb))
		}
		p.Sandbox = sb
	}
	return p, nil
}

func decodeWalkOptions(raw json.RawMessage) (WalkOptions, error) {
	var o WalkOptions
	names := [...]string{"maxDepth", "maxDirectories", "maxEntries", "followDirectorySymlinks", "pruneHiddenDirectories"}
	var vals [5]json.RawMessage
	switch raw[0] {
	case '{':
		m, err := objectMap(raw)
		if err != nil {
			return o, err
		}
		for i, n := range names {
			vals[i] = m[n]
		}
	case '[':
		a, err := arrayItems(raw)
		if err != nil {
			return o, err
		}
		if len(a) < 4 {
			return o, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected struct WalkOptions with 5 elements", len(a))
		}
		if len(a) > 5 {
			return o, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected fewer elements in array", len(a))
		}
		copy(vals[:], a)
	default:
		return o, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct WalkOptions", paramKind(raw))
	}
	// serde reads the members in document order and reports a missing one
	// at the end; an object's members are checked here in declaration
	// order, which gives the same answer for every single fault.
	nums := [...]*uint64{&o.MaxDepth, &o.MaxDirectories, &o.MaxEntries}
	for i, dst := range nums {
		if vals[i] == nil {
			continue
		}
		if err := decodeUsize(vals[i], dst); err != nil {
			return o, err
		}
	}
	for i, dst := range [...]*bool{&o.FollowDirectorySymlinks, &o.PruneHiddenDirectories} {
		v := vals[3+i]
		if v == nil {
			continue
		}
		switch string(v) {
		case "true", "false":
			*dst = string(v) == "true"
		default:
			return o, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a boolean", paramKind(v))
		}
	}
	for i, n := range names[:4] {
		if vals[i] == nil {
			return o, rpc.Errorf(rpc.CodeInvalidParams, "missing field `%s`", n)
		}
	}
	return o, nil
}

// decodeUsize is a u64 member that serde names usize in its type errors;
// a negative, fractional or too large number is "invalid number".
func decodeUsize(raw json.RawMessage, v *uint64) error {
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		return decodeU64(raw, v)
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected usize", paramKind(raw))
}

// objectMap is a JSON object's members by name (the last of a repeated
// name wins).
func objectMap(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	for k, v := range m {
		m[k] = bytes.TrimSpace(v)
	}
	return m, nil
}

func arrayItems(raw json.RawMessage) ([]json.RawMessage, error) {
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	for i, v := range a {
		a[i] = bytes.TrimSpace(v)
	}
	return a, nil
}

// WriteJSON writes the result as JSON: by hand, because an answer holds
// up to 50,000 paths and encoding/json's reflection and validation cost
// more than the walk (rpc.StreamedResult).
func (r WalkResult) WriteJSON(w io.Writer) error {
	_, err := w.Write(r.AppendJSON(nil))
	return err
}

// AppendJSON appends the result's JSON to b.
func (r WalkResult) AppendJSON(b []byte) []byte {
	b = append(b, `{"entries":[`...)
	for i, e := range r.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendPath(b, e.Path)
		b = append(b, `,"kind":`...)
		b = strconv.AppendQuote(b, e.Kind)
		b = append(b, '}')
	}
	b = append(b, `],"errors":[`...)
	for i, e := range r.Errors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendPath(b, e.Path)
		b = append(b, `,"message":`...)
		b = appendJSONString(b, e.Message)
		b = append(b, '}')
	}
	b = append(b, `],"truncated":`...)
	b = strconv.AppendBool(b, r.Truncated)
	return append(b, '}')
}

// appendPath appends p as a JSON string: a URI as it is (FileURI leaves
// no character JSON must escape), a plain path through encoding/json.
func appendPath(b []byte, p Path) []byte {
	if !p.URI {
		return appendJSONString(b, p.Native)
	}
	b = append(b, '"')
	b = append(b, "file://"...)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(p.Native); i++ {
		c := p.Native[i]
		if uriEscaped(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return append(b, '"')
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
