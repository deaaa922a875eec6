package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fixtureSchemas maps each golden fixture of package wire to the schema
// file its JSON must satisfy. Notification fixtures are whole frames; their
// params are checked.
var fixtureSchemas = map[string]string{
	"initialize_params.json":              "initialize.params.json",
	"initialize_result.json":              "initialize.result.json",
	"status_result.json":                  "environment_status.result.json",
	"environment_config_read_params.json": "environmentConfig_read.params.json",
	"environment_config_read_result.json": "environmentConfig_read.result.json",
	"start_params.json":                   "process_start.params.json",
	"start_result.json":                   "process_start.result.json",
	"read_params.json":                    "process_read.params.json",
	"read_result.json":                    "process_read.result.json",
	"read_result_truncation.json":         "process_read.result.json",
	"read_result_truncation_empty.json":   "process_read.result.json",
	"write_params.json":                   "process_write.params.json",
	"write_result.json":                   "process_write.result.json",
	"close_stdin_params.json":             "process_closeStdin.params.json",
	"signal_params.json":                  "process_signal.params.json",
	"terminate_params.json":               "process_terminate.params.json",
	"terminate_result.json":               "process_terminate.result.json",
	"resize_params.json":                  "process_resize.params.json",
	"output_notification.json":            "process_output.notification.json",
	"output_notification_escaped.json":    "process_output.notification.json",
	"exited_notification.json":            "process_exited.notification.json",
	"exited_notification_denied.json":     "process_exited.notification.json",
	"closed_notification.json":            "process_closed.notification.json",
	"fs_write_file_params.json":           "fs_writeFile.params.json",
	"fs_create_directory_params.json":     "fs_createDirectory.params.json",
	"fs_get_metadata_params.json":         "fs_getMetadata.params.json",
	"fs_metadata_result.json":             "fs_getMetadata.result.json",
	"fs_read_directory_result.json":       "fs_readDirectory.result.json",
	"fs_remove_params.json":               "fs_remove.params.json",
	"fs_copy_params.json":                 "fs_copy.params.json",
	"fs_canonicalize_result.json":         "fs_canonicalize.result.json",
	"error_not_found.json":                "", // an error object, not a method shape
	"error_session_attached.json":         "",
	"error_session_limit.json":            "",
}

// compile compiles one committed schema file.
func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	abs, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(abs)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// TestGoldenFixturesValidate holds the schema to the wire: every golden
// fixture of package wire (the bytes the server writes and the reference
// sends) satisfies the schema of its method, and every fixture is mapped.
func TestGoldenFixturesValidate(t *testing.T) {
	dir := filepath.Join("..", "wire", "testdata")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		file, ok := fixtureSchemas[e.Name()]
		if !ok {
			t.Errorf("fixture %s has no schema in fixtureSchemas", e.Name())
			continue
		}
		if file == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(file, ".notification.json") {
			var frame struct{ Params json.RawMessage }
			if err := json.Unmarshal(b, &frame); err != nil {
				t.Fatal(err)
			}
			b = frame.Params
		}
		if err := compile(t, file).Validate(decode(t, b)); err != nil {
			t.Errorf("%s against %s: %v", e.Name(), file, err)
		}
	}
}

// TestSchemaRejects checks the corrections over plain reflection: required
// members follow rpc:"required" in params and omitempty in results,
// pointers admit null, integers keep their Go bounds, base64 is a string.
func TestSchemaRejects(t *testing.T) {
	cases := []struct {
		file, doc string
		ok        bool
	}{
		{"process_start.params.json", `{"processId":"p","argv":["true"],"cwd":"/","env":{},"tty":false}`, true},
		{"process_start.params.json", `{"argv":["true"],"cwd":"/","env":{},"tty":false}`, false},
		{"process_start.params.json", `{"processId":"p","argv":["true"],"cwd":"/","env":{},"tty":false,"arg0":null,"size":null}`, true},
		{"process_start.params.json", `{"processId":"p","argv":["true"],"cwd":"/","env":{},"tty":false,"size":{"rows":70000,"cols":1}}`, false},
		{"process_read.params.json", `{"processId":"p","afterSeq":18446744073709551615}`, true},
		{"process_read.params.json", `{"processId":"p","afterSeq":-1}`, false},
		{"process_read.result.json", `{"chunks":[],"nextSeq":1,"exited":false,"exitCode":null,"closed":false,"failure":null,"sandboxDenied":false}`, true},
		{"process_read.result.json", `{"chunks":[],"nextSeq":1,"exited":false,"closed":false,"failure":null,"sandboxDenied":false}`, false},
		{"process_read.result.json", `{"chunks":[],"nextSeq":1,"exited":false,"exitCode":0,"closed":false,"failure":null,"sandboxDenied":false,"firstRetainedSeq":null}`, true},
		{"process_read.result.json", `{"chunks":[],"nextSeq":1,"exited":false,"exitCode":0,"closed":false,"failure":null,"sandboxDenied":false,"truncated":null}`, false},
		{"process_write.params.json", `{"processId":"p","chunk":42}`, false},
		{"process_output.notification.json", `{"processId":"p","seq":1,"stream":"stdout"}`, false},
		{"environment_info.params.json", `null`, true},
		{"environment_info.params.json", `{}`, true},
		{"environment_info.params.json", `{"x":1}`, false},
		{"fs_copy.params.json", `{"sourcePath":"/a","destinationPath":"/b"}`, false},
	}
	for _, c := range cases {
		err := compile(t, c.file).Validate(decode(t, []byte(c.doc)))
		if (err == nil) != c.ok {
			t.Errorf("%s %s: valid=%v, want %v (%v)", c.file, c.doc, err == nil, c.ok, err)
		}
	}
}
