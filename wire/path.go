package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/codexec/codex/rpc"
)

// Path is a filesystem path received as a `file://` URI or, as the older
// design documents allow, a plain absolute path (docs/protocol.md §4). It keeps the
// form it arrived in so that derived response paths can use the same form.
// The zero value is an empty, unset path.
type Path struct {
	// Native is the absolute, lexically cleaned OS path.
	Native string
	// URI records whether the path arrived as a `file://` URI.
	URI bool
}

// ParsePath parses a wire path. Errors carry the protocol's codes: -32602 for
// relative paths and foreign schemes, -32600 for a foreign host.
func ParsePath(s string) (Path, error) {
	if strings.HasPrefix(s, "/") {
		return Path{Native: path.Clean(s)}, nil
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/?#") {
		return Path{}, rpc.Errorf(rpc.CodeInvalidParams, "invalid URI: relative URL without a base")
	}
	if !strings.EqualFold(scheme, "file") {
		return Path{}, rpc.Errorf(rpc.CodeInvalidParams, "unsupported path URI scheme `%s`", rpc.Clip(strings.ToLower(scheme)))
	}
	_ = rest
	u, err := url.Parse(s)
	if err != nil {
		return Path{}, rpc.Errorf(rpc.CodeInvalidParams, "invalid URI: %s", rpc.Clip(err.Error()))
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return Path{}, rpc.Errorf(rpc.CodeInvalidRequest, "'%s' is invalid on 'linux'", s)
	}
	p := u.Path
	if !strings.HasPrefix(p, "/") {
		return Path{}, rpc.Errorf(rpc.CodeInvalidParams, "invalid URI: relative URL without a base")
	}
	return Path{Native: path.Clean(p), URI: true}, nil
}

// String returns the path in the form it arrived in.
func (p Path) String() string {
	if p.URI {
		return FileURI(p.Native)
	}
	return p.Native
}

// WithNative returns a path with the same form as p and a new native value.
func (p Path) WithNative(native string) Path { return Path{Native: native, URI: p.URI} }

// UnmarshalJSON implements json.Unmarshaler.
func (p *Path) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParsePath(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// MarshalJSON writes the path in the form it arrived in.
func (p Path) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// FileURI turns an absolute native path into a `file://` URI, percent-encoding
// the bytes the reference's URL library encodes in a file path (its path
// segment set): C0 controls, space, `"#%<>?\`{}`, DEL and every byte
// above 0x7F; '/' and the other printable ASCII characters stay as they are.
func FileURI(native string) string {
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len("file://")+len(native)+8)
	b = append(b, "file://"...)
	for i := 0; i < len(native); i++ {
		c := native[i]
		if uriEscaped(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// FileURILen is len(FileURI(native)), without building it.
func FileURILen(native string) int {
	n := len("file://") + len(native)
	for i := 0; i < len(native); i++ {
		if uriEscaped(native[i]) {
			n += 2
		}
	}
	return n
}

// uriEscaped reports whether FileURI percent-encodes c.
func uriEscaped(c byte) bool {
	switch c {
	case ' ', '"', '#', '%', '<', '>', '?', '\\', '`', '{', '}':
		return true
	}
	return c < 0x20 || c >= 0x7F
}

// Bytes is a byte string carried as standard padded base64.
type Bytes []byte

// MarshalJSON implements json.Marshaler.
func (b Bytes) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(b))+2)
	out = append(out, '"')
	out = base64.StdEncoding.AppendEncode(out, b)
	return append(out, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("invalid base64: %w", err)
	}
	*b = v
	return nil
}
