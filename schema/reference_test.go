package schema_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/codexec/codex/schema"
)

// memberFacts are what TestCommandExecSchemaMatchesReference compares of
// one member: its JSON types (null apart), whether null is allowed, and
// for a map, the same of its values.
type memberFacts struct {
	Types    []string     `json:"types"`
	Nullable bool         `json:"nullable"`
	Values   *memberFacts `json:"values,omitempty"`
}

// schemaFacts are the facts of one schema file: its members and its
// required list.
type schemaFacts struct {
	Reference string                 `json:"reference"`
	Required  []string               `json:"required"`
	Members   map[string]memberFacts `json:"members"`
}

// referenceFacts reads testdata/reference_command_exec.json: the facts of
// the reference's v2/CommandExec*.json (0.169.0, generated with
// `codex app-server generate-json-schema --experimental --out DIR`),
// extracted once with the same rules as factsOf, keyed by our file name.
func referenceFacts(t *testing.T) map[string]schemaFacts {
	t.Helper()
	b, err := os.ReadFile("testdata/reference_command_exec.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Files map[string]schemaFacts `json:"files"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Files
}

// resolveSchema returns the JSON types a schema node allows, null apart,
// and whether it allows null: through $ref (to $defs or definitions),
// anyOf, oneOf and allOf; a node with properties is an object, one with
// an enum a string.
func resolveSchema(node, root map[string]any) (types []string, nullable bool) {
	set := map[string]bool{}
	if ref, ok := node["$ref"].(string); ok {
		name := ref[strings.LastIndexByte(ref, '/')+1:]
		for _, key := range []string{"$defs", "definitions"} {
			if defs, ok := root[key].(map[string]any); ok {
				if d, ok := defs[name].(map[string]any); ok {
					return resolveSchema(d, root)
				}
			}
		}
		return nil, false
	}
	addType := func(v any) {
		if s, ok := v.(string); ok {
			if s == "null" {
				nullable = true
			} else {
				set[s] = true
			}
		}
	}
	switch v := node["type"].(type) {
	case string:
		addType(v)
	case []any:
		for _, x := range v {
			addType(x)
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		alts, _ := node[key].([]any)
		for _, alt := range alts {
			if m, ok := alt.(map[string]any); ok {
				ts, n := resolveSchema(m, root)
				for _, t := range ts {
					set[t] = true
				}
				nullable = nullable || n
			}
		}
	}
	if len(set) == 0 && !nullable {
		if _, ok := node["properties"]; ok {
			set["object"] = true
		} else if _, ok := node["enum"]; ok {
			set["string"] = true
		}
	}
	for t := range set {
		types = append(types, t)
	}
	sort.Strings(types)
	return types, nullable
}

// factsOf extracts the facts of one of our schema documents.
func factsOf(t *testing.T, doc []byte) schemaFacts {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	f := schemaFacts{Required: []string{}, Members: map[string]memberFacts{}}
	required, _ := root["required"].([]any)
	for _, r := range required {
		f.Required = append(f.Required, r.(string))
	}
	sort.Strings(f.Required)
	props, _ := root["properties"].(map[string]any)
	for name, p := range props {
		node := p.(map[string]any)
		var m memberFacts
		m.Types, m.Nullable = resolveSchema(node, root)
		// A map's values: additionalProperties of the member itself, or of
		// its non-null alternative.
		for _, n := range append([]any{node}, anyOf(node)...) {
			if ap, ok := n.(map[string]any)["additionalProperties"].(map[string]any); ok {
				var v memberFacts
				v.Types, v.Nullable = resolveSchema(ap, root)
				m.Values = &v
			}
		}
		f.Members[name] = m
	}
	return f
}

func anyOf(node map[string]any) []any {
	alts, _ := node["anyOf"].([]any)
	return alts
}

// The schema must describe what the server accepts, as the reference's own
// generated schema does (issue 20, item 9): every command/exec* schema
// file has the reference's members, each with its JSON types and
// nullability (null where the server takes null: cwd, env and its values,
// timeoutMs, outputBytesCap, processId, sandboxPolicy, size,
// permissionProfile, deltaBase64), and the same required list. Integer
// widths and formats, descriptions and the members of nested objects are
// not compared.
func TestCommandExecSchemaMatchesReference(t *testing.T) {
	files, err := schema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ref := referenceFacts(t)
	if len(ref) != 9 {
		t.Fatalf("%d reference files, want the 9 command/exec* ones", len(ref))
	}
	var ours []string
	for name := range files {
		if strings.HasPrefix(name, "command_exec") {
			ours = append(ours, name)
		}
	}
	sort.Strings(ours)
	var want []string
	for name := range ref {
		want = append(want, name)
	}
	sort.Strings(want)
	if !slices.Equal(ours, want) {
		t.Fatalf("our command/exec* files %v, the reference's %v", ours, want)
	}
	for _, name := range want {
		r := ref[name]
		got := factsOf(t, files[name])
		if !slices.Equal(got.Required, r.Required) {
			t.Errorf("%s (%s): required %v, reference %v", name, r.Reference, got.Required, r.Required)
		}
		for member, rm := range r.Members {
			gm, ok := got.Members[member]
			if !ok {
				t.Errorf("%s: member %s missing (reference %+v)", name, member, rm)
				continue
			}
			if !reflect.DeepEqual(gm, rm) {
				t.Errorf("%s: member %s: ours %s, reference %s", name, member, factString(gm), factString(rm))
			}
		}
		for member := range got.Members {
			if _, ok := r.Members[member]; !ok {
				t.Errorf("%s: member %s is not in the reference's %s", name, member, r.Reference)
			}
		}
	}
}

func factString(m memberFacts) string {
	b, _ := json.Marshal(m)
	return string(b)
}
