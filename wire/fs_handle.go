package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/codexec/codex/rpc"
)

// The file-handle methods of docs/protocol.md §6.11.3: a file opened once,
// then read or written in blocks at any offset, and closed.
const (
	MethodFSOpen       = "fs/open"
	MethodFSReadBlock  = "fs/readBlock"
	MethodFSWriteBlock = "fs/writeBlock"
	MethodFSClose      = "fs/close"
)

// Bounds of the file-handle methods (docs/protocol.md §6.11.3, §11).
const (
	// MaxFileBlock is the largest block fs/readBlock reads and
	// fs/writeBlock writes: 1 MiB.
	MaxFileBlock = 1 << 20
	// MaxFileHandles is how many handles one connection may hold open.
	MaxFileHandles = 128
)

// Modes of fs/open.
const (
	OpenModeRead    = "read"
	OpenModeReplace = "replace"
)

// OpenParams is the params of fs/open. Decode it with DecodeOpen, which
// reports problems with the reference's texts. Positional params are
// [handleId, path, mode, sandbox].
type OpenParams struct {
	// HandleID names the handle on this connection; any string, "" too.
	HandleID string `json:"handleId" rpc:"required"`
	Path     Path   `json:"path" rpc:"required"`
	// Mode is "read" (the default) or "replace"; the decoder also takes the
	// one-member map form {"replace": null}.
	Mode    *string         `json:"mode,omitempty" jsonschema:"enum=read,enum=replace" schema:"variantmap"`
	Sandbox json.RawMessage `json:"sandbox"`
}

// Replace reports whether the handle is opened for writing.
func (p *OpenParams) Replace() bool { return p.Mode != nil && *p.Mode == OpenModeReplace }

// OpenResult is the result of fs/open.
type OpenResult struct {
	HandleID string `json:"handleId"`
}

// ReadBlockParams is the params of fs/readBlock ([handleId, offset, len]).
type ReadBlockParams struct {
	HandleID string `json:"handleId" rpc:"required"`
	Offset   uint64 `json:"offset" rpc:"required"`
	Len      uint64 `json:"len" rpc:"required" jsonschema:"minimum=1,maximum=1048576"`
}

// ReadBlockResult is the JSON shape of the fs/readBlock result: the bytes
// read from the offset, and EOF when fewer than the requested length came
// back. The server streams it as a ReadBlockChunk instead of encoding this
// type.
type ReadBlockResult struct {
	Chunk Bytes `json:"chunk"`
	EOF   bool  `json:"eof"`
}

// ReadBlockChunk is the fs/readBlock result as the server sends it, an
// rpc.StreamedResult: the base64 text is encoded into the response
// piecewise, never built apart from the message.
type ReadBlockChunk struct {
	Chunk []byte
	EOF   bool
	// Release, when set, is called once WriteJSON has written the chunk:
	// the server lends Chunk from a pool.
	Release func()
}

// WriteJSON implements rpc.StreamedResult.
func (r ReadBlockChunk) WriteJSON(w io.Writer) error {
	if r.Release != nil {
		defer r.Release()
	}
	if err := writeBase64Open(w, "chunk", r.Chunk); err != nil {
		return err
	}
	tail := `","eof":false}`
	if r.EOF {
		tail = `","eof":true}`
	}
	_, err := io.WriteString(w, tail)
	return err
}

// MarshalJSON implements json.Marshaler.
func (r ReadBlockChunk) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(base64.StdEncoding.EncodedLen(len(r.Chunk)) + 32)
	err := r.WriteJSON(&buf)
	return buf.Bytes(), err
}

// WriteBlockParams is the params of fs/writeBlock ([handleId, offset,
// chunk]). DecodeWriteBlock decodes the chunk's base64 as it decodes the
// params, as the reference does.
type WriteBlockParams struct {
	HandleID string `json:"handleId" rpc:"required"`
	Offset   uint64 `json:"offset" rpc:"required"`
	Chunk    Bytes  `json:"chunk" rpc:"required"`
}

// CloseParams is the params of fs/close ([handleId]).
type CloseParams struct {
	HandleID string `json:"handleId" rpc:"required"`
}

// Errors of the file-handle methods, with the reference's texts.

// ErrFileHandleExists is an fs/open of an id already open on the connection.
func ErrFileHandleExists(id string) *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "file handle `%s` already exists", rpc.Clip(id))
}

// ErrTooManyFileHandles is an fs/open beyond MaxFileHandles.
func ErrTooManyFileHandles() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "at most %d file handles may be open per connection", MaxFileHandles)
}

// ErrUnknownFileHandle names an id that is not open on the connection.
func ErrUnknownFileHandle(id string) *rpc.Error {
	return rpc.Errorf(CodeNotFound, "unknown file handle `%s`", rpc.Clip(id))
}

// ErrReadBlockLen is an fs/readBlock length outside 1…MaxFileBlock.
func ErrReadBlockLen() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "file read block length must be between 1 and %d", MaxFileBlock)
}

// ErrWriteBlockLen is an fs/writeBlock chunk outside 1…MaxFileBlock bytes.
func ErrWriteBlockLen() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "file write block length must be between 1 and %d", MaxFileBlock)
}

// ErrWriteBlockRange is an fs/writeBlock whose last byte would lie beyond
// the largest signed 64-bit offset.
func ErrWriteBlockRange() *rpc.Error {
	return rpc.Errorf(rpc.CodeInvalidRequest, "file write range exceeds the signed 64-bit file offset limit")
}

// member is one member of a JSON object, in the order it came.
type member struct {
	key string
	val json.RawMessage
}

// serdeStruct is the reference's view of params: the members of an object
// in their order (a repeated key keeps its first place and its last value),
// or the elements of an array taken positionally. name is the struct's name
// in the reference's texts, fields its members in order.
//
// Positional params may leave out the trailing fields that have a default
// (fs/open's mode): a short array names the first missing one without.
func serdeStruct(raw json.RawMessage, name string, fields []string, defaulted ...string) ([]member, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	switch raw[0] {
	case '{':
		return objectMembers(raw)
	case '[':
		var a []json.RawMessage
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
		}
		if len(a) > len(fields) {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected fewer elements in array", len(a))
		}
		ms := make([]member, len(a))
		for i, v := range a {
			ms[i] = member{fields[i], v}
		}
		n := len(a)
		for n < len(fields) && slices.Contains(defaulted, fields[n]) {
			n++
		}
		if n < len(fields) {
			// The elements present are decoded first (their errors win).
			return ms, &shortArray{n: n, name: name, want: len(fields)}
		}
		return ms, nil
	}
	return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct %s", paramKind(raw), name)
}

// shortArray is positional params with too few elements: reported once the
// elements present decoded.
type shortArray struct {
	n, want int
	name    string
}

func (s *shortArray) rpcError() *rpc.Error {
	el := "elements"
	if s.want == 1 {
		el = "element"
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected struct %s with %d %s", s.n, s.name, s.want, el)
}

func (s *shortArray) Error() string { return s.rpcError().Message }

// objectMembers lists the members of a JSON object in order, a repeated key
// in its first place with its last value. The object was already checked
// as JSON by the envelope's decoding; a string value is cut out by a scan
// for its closing quote, not decoded (a 1 MiB block's base64 is one).
func objectMembers(raw []byte) ([]member, error) {
	var ms []member
	i := skipSpace(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		return ms, nil
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params")
		}
		end := stringEnd(raw, i)
		if end > len(raw) || raw[end-1] != '"' {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params")
		}
		var key string
		if err := json.Unmarshal(raw[i:end], &key); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params")
		}
		i = skipSpace(raw, i+1)
		if i < len(raw) && raw[i] == '"' {
			end = quickStringEnd(raw, i)
		} else {
			end = valueEnd(raw, i)
		}
		if end <= i {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params")
		}
		val := json.RawMessage(raw[i:end])
		dup := false
		for k := range ms {
			if ms[k].key == key {
				ms[k].val, dup = val, true
			}
		}
		if !dup {
			ms = append(ms, member{key, val})
		}
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		break
	}
	return ms, nil
}

// quickStringEnd is stringEnd for long strings: it jumps from quote to
// quote (a 1 MiB block's base64 is one string) and counts the backslashes
// before each to tell an escaped one.
func quickStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		n := 0
		for m := j - 1; m > i && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return len(b)
}

// paramKind is how the reference names a JSON value's type in a decoding
// error: numbers are "number", strings and booleans show their value.
func paramKind(raw json.RawMessage) string {
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		return "number"
	}
	return serdeKind(raw)
}

// decodeString decodes a string member.
func decodeHandleString(raw json.RawMessage, v *string) error {
	if raw[0] != '"' {
		return rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a string", paramKind(raw))
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		*v = string(raw[1 : len(raw)-1])
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	return nil
}

// decodeUnsigned decodes a u64 or usize member ("invalid number" for a
// negative, fractional or too large number).
func decodeUnsigned(raw json.RawMessage, v *uint64, typ string) error {
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		n, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil {
			return rpc.Errorf(rpc.CodeInvalidParams, "invalid number")
		}
		*v = n
		return nil
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected %s", paramKind(raw), typ)
}

// decodeMembers runs each member's decoder in order, the first failure
// winning, then reports a short positional array, then the first required
// field that was missing.
func decodeMembers(ms []member, short error, decoders map[string]func(json.RawMessage) error, required []string) error {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		seen[m.key] = true
		if d, ok := decoders[m.key]; ok {
			if err := d(m.val); err != nil {
				return err
			}
		}
	}
	if s, ok := short.(*shortArray); ok {
		return s.rpcError()
	}
	for _, f := range required {
		if !seen[f] {
			return rpc.Errorf(rpc.CodeInvalidParams, "missing field `%s`", f)
		}
	}
	return nil
}

// structMembers is serdeStruct that lets a short array through to
// decodeMembers.
func structMembers(raw json.RawMessage, name string, fields []string, defaulted ...string) ([]member, error, error) {
	ms, err := serdeStruct(raw, name, fields, defaulted...)
	if _, ok := err.(*shortArray); ok {
		return ms, err, nil
	}
	return ms, nil, err
}

// DecodeOpen decodes fs/open params the way the reference does: members
// in their order, the first bad one winning, then the missing ones.
func DecodeOpen(raw json.RawMessage) (OpenParams, error) {
	var p OpenParams
	ms, short, err := structMembers(raw, "WireFsOpenParams", []string{"handleId", "path", "mode", "sandbox"}, "mode")
	if err != nil {
		return p, err
	}
	err = decodeMembers(ms, short, map[string]func(json.RawMessage) error{
		"handleId": func(v json.RawMessage) error { return decodeHandleString(v, &p.HandleID) },
		"path": func(v json.RawMessage) (err error) {
			p.Path, err = decodeURI(v)
			return err
		},
		"mode": func(v json.RawMessage) error {
			m, err := decodeOpenMode(v)
			p.Mode = &m
			return err
		},
		"sandbox": func(v json.RawMessage) error {
			switch v[0] {
			case 'n':
				return nil
			case '{':
				p.Sandbox = v
				return nil
			case '[':
				// The reference's sandbox context has 10 members.
				var a []json.RawMessage
				_ = json.Unmarshal(v, &a)
				if len(a) < 10 {
					return rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected struct WireFileSystemSandboxContext with 10 elements", len(a))
				}
				return rpc.Errorf(rpc.CodeInvalidParams, "invalid type: sequence, expected struct WireFileSystemSandboxContext")
			}
			return rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct WireFileSystemSandboxContext", paramKind(v))
		},
	}, []string{"handleId", "path"})
	return p, err
}

// decodeOpenMode decodes the mode enum: a variant name, or a map of one
// variant to null.
func decodeOpenMode(raw json.RawMessage) (string, error) {
	variant := func(s string) (string, error) {
		if s == OpenModeRead || s == OpenModeReplace {
			return s, nil
		}
		return "", rpc.Errorf(rpc.CodeInvalidParams, "unknown variant `%s`, expected `read` or `replace`", rpc.Clip(s))
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
		}
		return variant(s)
	case '{':
		ms, err := objectMembers(raw)
		if err != nil {
			return "", err
		}
		if len(ms) != 1 {
			return "", rpc.Errorf(rpc.CodeInvalidParams, "invalid value: map, expected map with a single key")
		}
		s, err := variant(ms[0].key)
		if err != nil {
			return "", err
		}
		if !bytes.Equal(ms[0].val, []byte("null")) {
			return "", rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected unit", paramKind(ms[0].val))
		}
		return s, nil
	}
	return "", rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected string or map", paramKind(raw))
}

// DecodeReadBlock decodes fs/readBlock params.
func DecodeReadBlock(raw json.RawMessage) (ReadBlockParams, error) {
	var p ReadBlockParams
	ms, short, err := structMembers(raw, "FsReadBlockParams", []string{"handleId", "offset", "len"})
	if err != nil {
		return p, err
	}
	err = decodeMembers(ms, short, map[string]func(json.RawMessage) error{
		"handleId": func(v json.RawMessage) error { return decodeHandleString(v, &p.HandleID) },
		"offset":   func(v json.RawMessage) error { return decodeUnsigned(v, &p.Offset, "u64") },
		"len":      func(v json.RawMessage) error { return decodeUnsigned(v, &p.Len, "usize") },
	}, []string{"handleId", "offset", "len"})
	return p, err
}

// DecodeWriteBlock decodes fs/writeBlock params, the chunk's base64
// included (its errors are -32602, with the texts of the reference's
// decoder: DecodeBase64). The chunk is decoded into buf when it fits
// there (a caller's reused buffer), else into new memory.
func DecodeWriteBlock(raw json.RawMessage, buf []byte) (WriteBlockParams, error) {
	var p WriteBlockParams
	ms, short, err := structMembers(raw, "FsWriteBlockParams", []string{"handleId", "offset", "chunk"})
	if err != nil {
		return p, err
	}
	err = decodeMembers(ms, short, map[string]func(json.RawMessage) error{
		"handleId": func(v json.RawMessage) error { return decodeHandleString(v, &p.HandleID) },
		"offset":   func(v json.RawMessage) error { return decodeUnsigned(v, &p.Offset, "u64") },
		"chunk": func(v json.RawMessage) error {
			if v[0] != '"' {
				return rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a string", paramKind(v))
			}
			text := []byte(v[1 : len(v)-1])
			if bytes.IndexByte(text, '\\') >= 0 {
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
				}
				text = []byte(s)
			}
			b, msg := decodeBase64Into(text, buf)
			if msg != "" {
				return rpc.Errorf(rpc.CodeInvalidParams, "%s", msg)
			}
			p.Chunk = b
			return nil
		},
	}, []string{"handleId", "offset", "chunk"})
	return p, err
}

// DecodeClose decodes fs/close params.
func DecodeClose(raw json.RawMessage) (CloseParams, error) {
	var p CloseParams
	ms, short, err := structMembers(raw, "FsCloseParams", []string{"handleId"})
	if err != nil {
		return p, err
	}
	err = decodeMembers(ms, short, map[string]func(json.RawMessage) error{
		"handleId": func(v json.RawMessage) error { return decodeHandleString(v, &p.HandleID) },
	}, []string{"handleId"})
	return p, err
}

// DecodeBase64 decodes standard base64 with padding strictly, as the
// reference's decoder (Rust's base64 crate) does; a failure returns that
// decoder's text ("Invalid symbol 33, offset 0.", "Invalid padding", …).
func DecodeBase64(s []byte) ([]byte, string) { return decodeBase64Into(s, nil) }

// decodeBase64Into is DecodeBase64 into buf when it has the room.
func decodeBase64Into(s, buf []byte) ([]byte, string) {
	// Go's decoder skips CR and LF, which the reference refuses.
	if bytes.IndexByte(s, '\n') < 0 && bytes.IndexByte(s, '\r') < 0 {
		out := buf[:cap(buf)]
		if n := base64.StdEncoding.DecodedLen(len(s)); n > len(out) {
			out = make([]byte, n)
		}
		if n, err := base64.StdEncoding.Strict().Decode(out, s); err == nil {
			return out[:n], ""
		}
	}
	return nil, base64Error(s)
}

// base64Error words why s is not strict base64 the way the reference's
// decoder (Rust's base64 0.22, standard alphabet, canonical padding) finds
// it: a last byte that cannot start padding when the length is 1 mod 4;
// then any byte outside the alphabet, '=' included, in the quanta before
// the last one; then, in the last one, padding too early or followed by a
// symbol, a single symbol (a bad length), padding that does not complete
// the quantum, and a last symbol with bits the output drops.
func base64Error(s []byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	valid := func(c byte) bool { return bytes.IndexByte([]byte(alphabet), c) >= 0 }
	sym := func(i int, c byte) string { return fmt.Sprintf("Invalid symbol %d, offset %d.", c, i) }
	rem := len(s) % 4
	if rem == 1 {
		if last := s[len(s)-1]; last != '=' && !valid(last) {
			return sym(len(s)-1, last)
		}
	}
	start := len(s) - rem
	if rem == 0 {
		start = max(start-4, 0)
	}
	for i := 0; i < start; i++ {
		if !valid(s[i]) {
			return sym(i, s[i])
		}
	}
	morsels, padding, firstPad := 0, 0, 0
	var last byte
	for li, c := range s[start:] {
		if c == '=' {
			if li < 2 {
				return sym(start+li, c)
			}
			if padding == 0 {
				firstPad = li
			}
			padding++
			continue
		}
		if padding > 0 {
			return sym(start+firstPad, '=')
		}
		if !valid(c) {
			return sym(start+li, c)
		}
		morsels++
		last = c
	}
	if len(s) > 0 && morsels < 2 {
		return fmt.Sprintf("Invalid input length: %d", start+morsels)
	}
	if (padding+morsels)%4 != 0 {
		return "Invalid padding"
	}
	// The bits of the last symbol that no output byte holds must be 0.
	if dropped := (morsels * 6) % 8; dropped != 0 {
		if bytes.IndexByte([]byte(alphabet), last)&(1<<dropped-1) != 0 {
			return fmt.Sprintf("Invalid last symbol %d, offset %d.", last, start+morsels-1)
		}
	}
	return "Invalid padding"
}
