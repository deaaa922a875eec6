package fshelper_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/rpc"
)

func TestHandlersKeys(t *testing.T) {
	got := slices.Sorted(maps.Keys(fshelper.Handlers(nil)))
	want := []string{
		"fs/canonicalize", "fs/copy", "fs/createDirectory", "fs/getMetadata",
		"fs/readDirectory", "fs/readFile", "fs/remove", "fs/writeFile",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("methods %v, want %v", got, want)
	}
}

// pathMethods lists each method with valid params except for the path under
// test, written as %P.
var pathMethods = []struct{ method, params string }{
	{"fs/readFile", `{"path":%P}`},
	{"fs/writeFile", `{"path":%P,"dataBase64":""}`},
	{"fs/createDirectory", `{"path":%P}`},
	{"fs/getMetadata", `{"path":%P}`},
	{"fs/readDirectory", `{"path":%P}`},
	{"fs/remove", `{"path":%P}`},
	{"fs/canonicalize", `{"path":%P}`},
	{"fs/copy", `{"sourcePath":%P,"destinationPath":"/tmp/x","recursive":false}`},
	{"fs/copy", `{"sourcePath":"/tmp/x","destinationPath":%P,"recursive":false}`},
}

// TestBadPaths runs every method with the rejected path forms of
// docs/protocol.md §4; nothing touches the filesystem.
func TestBadPaths(t *testing.T) {
	bad := []struct {
		name, path string
		code       int
		msg        string
	}{
		{"relative", `"tmp/x"`, rpc.CodeInvalidParams, "invalid URI: relative URL without a base"},
		{"bare name", `"x"`, rpc.CodeInvalidParams, "invalid URI: relative URL without a base"},
		{"empty", `""`, rpc.CodeInvalidParams, "invalid URI: relative URL without a base"},
		{"http scheme", `"http://example.com/a"`, rpc.CodeInvalidParams, "unsupported path URI scheme `http`"},
		{"foreign host", `"file://server/share/a.txt"`, rpc.CodeInvalidRequest, "'file://server/share/a.txt' is invalid on 'linux'"},
		{"number", `5`, rpc.CodeInvalidParams, "invalid type*"},
		{"object", `{}`, rpc.CodeInvalidParams, "invalid type*"},
	}
	for _, m := range pathMethods {
		for _, b := range bad {
			t.Run(m.method+"/"+b.name, func(t *testing.T) {
				params := replacePlaceholder(m.params, b.path)
				_, werr := call(t, m.method, params)
				if werr == nil {
					t.Fatalf("%s succeeded", params)
				}
				checkWireError(t, werr, b.code, b.msg)
			})
		}
	}
}

func replacePlaceholder(s, v string) string {
	for i := 0; i+1 < len(s); i++ {
		if s[i:i+2] == "%P" {
			return s[:i] + v + s[i+2:]
		}
	}
	return s
}

func TestBadParams(t *testing.T) {
	cases := []struct {
		method, params string
		msg            string
	}{
		{"fs/readFile", `{}`, "missing field `path`"},
		{"fs/readFile", ``, "missing field `path`"},
		{"fs/readFile", `{"sandbox":null}`, "missing field `path`"},
		{"fs/readFile", `[]`, "invalid type: sequence, expected struct"},
		{"fs/readFile", `"x"`, "invalid type: string, expected struct"},
		{"fs/readFile", `{"path":"/tmp/x","followSymlinks":"no"}`, "invalid type*"},
		{"fs/writeFile", `{"path":"/tmp/x"}`, "missing field `dataBase64`"},
		{"fs/writeFile", `{"dataBase64":""}`, "missing field `path`"},
		{"fs/writeFile", `{"path":"/tmp/x","dataBase64":null}`, "invalid type: null, expected a string"},
		{"fs/writeFile", `{"path":"/tmp/x","dataBase64":5}`, "invalid type*"},
		{"fs/createDirectory", `{"path":"/tmp/x","recursive":"yes"}`, "invalid type*"},
		{"fs/getMetadata", `{"path":"/tmp/x","followSymlinks":1}`, "invalid type*"},
		{"fs/readDirectory", `{}`, "missing field `path`"},
		{"fs/remove", `{"path":"/tmp/x","force":"no"}`, "invalid type*"},
		{"fs/remove", `{"path":"/tmp/x","recursive":0}`, "invalid type*"},
		{"fs/copy", `{"destinationPath":"/tmp/y","recursive":true}`, "missing field `sourcePath`"},
		{"fs/copy", `{"sourcePath":"/tmp/x","recursive":true}`, "missing field `destinationPath`"},
		{"fs/copy", `{"sourcePath":"/tmp/x","destinationPath":"/tmp/y"}`, "missing field `recursive`"},
		{"fs/copy", `{"sourcePath":"/tmp/x","destinationPath":"/tmp/y","recursive":null}`, "invalid type: null, expected a boolean"},
		{"fs/copy", `{"sourcePath":"/tmp/x","destinationPath":"/tmp/y","recursive":"yes"}`, "invalid type*"},
		{"fs/canonicalize", `{"path":null}`, "invalid URI: relative URL without a base"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.params, func(t *testing.T) {
			var params any
			if tc.params != "" {
				params = tc.params
			}
			_, werr := call(t, tc.method, params)
			if werr == nil {
				t.Fatalf("%s succeeded", tc.params)
			}
			checkWireError(t, werr, rpc.CodeInvalidParams, tc.msg)
		})
	}
}
