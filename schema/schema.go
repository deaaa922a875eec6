// Package schema generates the JSON Schema (draft 2020-12) of the
// exec-server protocol from the Go types of package wire: one file per
// method's params and result and per notification, from the single table
// wire.Methods. The files are committed in this directory and a test keeps
// them equal to what the code generates.
//
// The schemas are reflected by github.com/invopop/jsonschema and then
// corrected where the wire differs from what plain reflection sees:
//
//   - required members: in params, those tagged `rpc:"required"` (what
//     rpc.DecodeParams enforces); in results and server notifications,
//     every member that is not omitempty (what the server always writes);
//   - null: a pointer member without omitempty is "T or null", and so is
//     a member tagged `schema:"nullable"` (an optional member the server
//     also takes as null) and the value of a map of pointers;
//   - types with their own JSON encoding (wire.Path, wire.Bytes,
//     json.RawMessage, and the firstRetainedSeq member that
//     wire.ReadResult writes by hand) are described explicitly, and a type
//     with a MarshalJSON the generator does not know is an error, so that a
//     new one cannot be described wrongly in silence;
//   - integers carry the bounds of their Go type (uint64 is 0…2^64-1).
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/codexec/codex/wire"
	"github.com/invopop/jsonschema"
)

// RefreshCommand is the command that rewrites the committed schema files.
const RefreshCommand = "go run . exec-server generate-json-schema --out schema (or: make schema)"

// Suffixes of the generated files; Write removes stale files with them.
const (
	paramsSuffix       = ".params.json"
	resultSuffix       = ".result.json"
	notificationSuffix = ".notification.json"
)

// FileName is the file of one method's params, result or notification:
// "process/start" gives process_start.params.json.
func FileName(method, suffix string) string {
	return strings.ReplaceAll(method, "/", "_") + suffix
}

// Generate returns every schema file of the protocol, keyed by file name.
func Generate() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, m := range wire.Methods() {
		arrow := "client → server"
		if m.From == wire.ServerToClient {
			arrow = "server → client"
		}
		kind, suffix := "request", paramsSuffix
		if m.Notification {
			kind, suffix = "notification", notificationSuffix
		}
		title := fmt.Sprintf("%s %s params (%s)", m.Name, kind, arrow)
		b, err := document(m.Params, m.From, title, m.Extension)
		if err != nil {
			return nil, fmt.Errorf("%s params: %w", m.Name, err)
		}
		out[FileName(m.Name, suffix)] = b
		if m.Result == nil {
			continue
		}
		// The result goes back the other way.
		resFrom, resArrow := wire.ServerToClient, "server → client"
		if m.From == wire.ServerToClient {
			resFrom, resArrow = wire.ClientToServer, "client → server"
		}
		title = fmt.Sprintf("%s result (%s)", m.Name, resArrow)
		if b, err = document(m.Result, resFrom, title, m.Extension); err != nil {
			return nil, fmt.Errorf("%s result: %w", m.Name, err)
		}
		out[FileName(m.Name, resultSuffix)] = b
	}
	return out, nil
}

// Write generates the schema files into dir (created if needed) and removes
// generated files of methods that no longer exist.
func Write(dir string) error {
	files, err := Generate()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := Existing(dir)
	if err != nil {
		return err
	}
	for name := range old {
		if _, ok := files[name]; !ok {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Existing reads the generated files present in dir, keyed by file name.
func Existing(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, paramsSuffix) && !strings.HasSuffix(n, resultSuffix) && !strings.HasSuffix(n, notificationSuffix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out[n] = b
	}
	return out, nil
}

// document is the schema of t (nil: no params) as indented JSON with sorted
// keys and a final newline. ext, for an extension, is its section of
// docs/protocol.md, which the description names.
func document(t reflect.Type, from wire.Direction, title, ext string) ([]byte, error) {
	var s *jsonschema.Schema
	if t == nil {
		s = noParams()
	} else {
		var err error
		if s, err = reflectType(t, from); err != nil {
			return nil, err
		}

	}
	if ext != "" {
		note := "An extension of this server (docs/protocol.md " + ext + "): the reference answers -32601."
		s.Description = strings.TrimSpace(note + " " + s.Description)
	}
	s.Version = jsonschema.Version
	s.Title = title
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keeps 18446744073709551615 exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// encoding/json writes map keys sorted: the files are deterministic.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// objectOrArray accepts obj, or an array of its members in the order of
// its properties (the Go fields' order), each as its property says, at
// least min of them (serde's sequence form of a struct).
func objectOrArray(obj *jsonschema.Schema, min int) *jsonschema.Schema {
	o := *obj
	var items []*jsonschema.Schema
	for p := o.Properties.Oldest(); p != nil; p = p.Next() {
		items = append(items, p.Value)
	}
	lo, hi := uint64(min), uint64(len(items))
	defs := o.Definitions
	o.Definitions, o.Version = nil, ""
	return &jsonschema.Schema{
		Description: "An object, or an array of its members in order (at least the first " + strconv.Itoa(min) + ").",
		AnyOf: []*jsonschema.Schema{
			&o,
			{Type: "array", PrefixItems: items, MinItems: &lo, MaxItems: &hi},
		},
		Definitions: defs,
	}
}

// noParams accepts what rpc.DecodeNoParams accepts: absent, null or {}.
func noParams() *jsonschema.Schema {
	zero := uint64(0)
	return &jsonschema.Schema{
		Description: "This method takes no params: absent, null or an empty object.",
		AnyOf: []*jsonschema.Schema{
			{Type: "null"},
			{Type: "object", MaxProperties: &zero},
		},
	}
}

// Types whose JSON form is not what reflection of their fields gives.
var (
	pathType    = reflect.TypeFor[wire.Path]()
	bytesType   = reflect.TypeFor[wire.Bytes]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	readResType = reflect.TypeFor[wire.ReadResult]()
	domainType  = reflect.TypeFor[wire.DomainPermission]()
	socketType  = reflect.TypeFor[wire.UnixSocketPermission]()
	marshaler   = reflect.TypeFor[json.Marshaler]()
)

// extraFields are members written by a hand-made MarshalJSON. The schema
// tag "nullable" marks an optional member that may also be null.
func extraFields(t reflect.Type) []reflect.StructField {
	if t == readResType {
		return []reflect.StructField{{
			Name: "FirstRetainedSeq",
			Type: reflect.TypeFor[*uint64](),
			Tag:  `json:"firstRetainedSeq,omitempty" schema:"nullable"`,
		}}
	}
	return nil
}

// custom describes the types with their own JSON encoding; it is nil for
// the others.
func custom(t reflect.Type) *jsonschema.Schema {
	switch t {
	case pathType:
		return &jsonschema.Schema{Type: "string", Description: "An absolute path: native, or a file:// URI."}
	case bytesType:
		return &jsonschema.Schema{Type: "string", ContentEncoding: "base64", Description: "Bytes in standard base64."}
	case rawType:
		return &jsonschema.Schema{Description: "Any JSON value (passed through or ignored by the server)."}
	case domainType:
		return variantOrMap("A domain's verdict (none: listed without one).", wire.PermissionNone, wire.PermissionAllow, wire.PermissionDeny)
	case socketType:
		return variantOrMap("A Unix socket's verdict.", wire.PermissionAllow, wire.PermissionDeny)
	}
	return integer(t.Kind())
}

// variantOrMap is an enum of names, each also given as a map of one
// member, the name, whose value is null (serde's two forms of a unit
// variant).
func variantOrMap(desc string, names ...string) *jsonschema.Schema {
	one := uint64(1)
	enum := make([]any, len(names))
	alts := []*jsonschema.Schema{{Type: "string", Enum: enum}}
	for i, n := range names {
		enum[i] = n
		props := jsonschema.NewProperties()
		props.Set(n, &jsonschema.Schema{Type: "null"})
		alts = append(alts, &jsonschema.Schema{Type: "object", Properties: props, Required: []string{n}, MinProperties: &one, MaxProperties: &one})
	}
	return &jsonschema.Schema{Description: desc, AnyOf: alts}
}

// integer gives an integer kind the bounds of its Go type.
func integer(k reflect.Kind) *jsonschema.Schema {
	bounds := map[reflect.Kind][2]string{
		reflect.Int:    {"-9223372036854775808", "9223372036854775807"},
		reflect.Int64:  {"-9223372036854775808", "9223372036854775807"},
		reflect.Int32:  {"-2147483648", "2147483647"},
		reflect.Int16:  {"-32768", "32767"},
		reflect.Int8:   {"-128", "127"},
		reflect.Uint:   {"0", "18446744073709551615"},
		reflect.Uint64: {"0", "18446744073709551615"},
		reflect.Uint32: {"0", "4294967295"},
		reflect.Uint16: {"0", "65535"},
		reflect.Uint8:  {"0", "255"},
	}
	b, ok := bounds[k]
	if !ok {
		return nil
	}
	return &jsonschema.Schema{Type: "integer", Minimum: json.Number(b[0]), Maximum: json.Number(b[1])}
}

// reflectType reflects t with invopop/jsonschema, then fixes the required
// members and null of every struct it reaches (see the package comment).
func reflectType(t reflect.Type, from wire.Direction) (*jsonschema.Schema, error) {
	if err := checkMarshalers(t, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	r := &jsonschema.Reflector{
		Anonymous:                  true,
		ExpandedStruct:             true,
		AllowAdditionalProperties:  true, // unknown members are ignored
		RequiredFromJSONSchemaTags: true, // required is set below instead
		Mapper:                     custom,
		AdditionalFields:           extraFields,
	}
	s := r.ReflectFromType(t)
	lookup := func(st reflect.Type) *jsonschema.Schema {
		if st == t {
			return s
		}
		return s.Definitions[st.Name()]
	}
	fixStructs(t, from, lookup, map[reflect.Type]bool{})
	if len(s.Definitions) == 0 {
		s.Definitions = nil
	}
	return s, nil
}

// checkMarshalers fails on a type reachable from t that encodes itself in a
// way this package does not describe.
func checkMarshalers(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if t.Kind() == reflect.Pointer && custom(t.Elem()) != nil {
		return nil // an optional Path: the Path's own schema, or null
	}
	if custom(t) != nil {
		return nil
	}
	if (t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler)) && t != readResType {
		return fmt.Errorf("%v has its own MarshalJSON: describe its JSON in package schema", t)
	}
	switch t.Kind() {
	case reflect.Map:
		if e := t.Elem(); e.Kind() == reflect.Interface && e.NumMethod() == 0 {
			return nil // an object whose members may be any JSON value
		}
		return checkMarshalers(t.Elem(), seen)
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkMarshalers(t.Elem(), seen)
	case reflect.Struct:
		for _, f := range fields(t) {
			if err := checkMarshalers(f.Type, seen); err != nil {
				return err
			}
		}
	case reflect.Interface:
		return fmt.Errorf("%v: an interface has no schema", t)
	}
	return nil
}

// fields are the exported members of t that are on the wire, with the
// members its MarshalJSON adds.
func fields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && f.Tag.Get("json") != "-" {
			out = append(out, f)
		}
	}
	return append(out, extraFields(t)...)
}

// fixStructs sets the required list and the null alternatives of struct t
// and of every struct reachable from it.
func fixStructs(t reflect.Type, from wire.Direction, lookup func(reflect.Type) *jsonschema.Schema, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || custom(t) != nil {
		return
	}
	seen[t] = true
	s := lookup(t)
	if s == nil {
		return
	}
	var required []string
	for _, f := range fields(t) {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		omitempty := strings.Contains(opts, "omitempty")
		if from == wire.ClientToServer && f.Tag.Get("rpc") == "required" ||
			from == wire.ServerToClient && !omitempty {
			required = append(required, name)
		}
		nullable := f.Type.Kind() == reflect.Pointer && !omitempty || f.Tag.Get("schema") == "nullable"
		if prop, ok := s.Properties.Get(name); ok && f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Pointer && prop.AdditionalProperties != nil {
			// A map of pointers holds null values (command/exec's env unsets
			// a variable with one).
			prop.AdditionalProperties = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{prop.AdditionalProperties, {Type: "null"}}}
		}
		if prop, ok := s.Properties.Get(name); ok && f.Tag.Get("schema") == "variantmap" && len(prop.Enum) > 0 {
			// An enum also given as a map of one member, the variant's
			// name, whose value is null ({"replace":null}), as serde takes it.
			var maps []*jsonschema.Schema
			one := uint64(1)
			for _, v := range prop.Enum {
				name, _ := v.(string)
				props := jsonschema.NewProperties()
				props.Set(name, &jsonschema.Schema{Type: "null"})
				maps = append(maps, &jsonschema.Schema{Type: "object", Properties: props, Required: []string{name}, MinProperties: &one, MaxProperties: &one})
			}
			s.Properties.Set(name, &jsonschema.Schema{AnyOf: append([]*jsonschema.Schema{prop}, maps...)})
		}
		if prop, ok := s.Properties.Get(name); ok && nullable {
			s.Properties.Set(name, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{prop, {Type: "null"}}})
		}
		fixStructs(f.Type, from, lookup, seen)
	}
	sort.Strings(required)
	s.Required = required
	if p, ok := reflect.Zero(t).Interface().(wire.Positional); ok && from == wire.ClientToServer {
		*s = *objectOrArray(s, p.PositionalMin())
	}
}
