package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// wantTools is the tools/list result of docs/shell-tool.md §3.2.
const wantTools = `{"tools":[{"name":"shell",
  "description":"Runs a shell command and returns its output. You MUST provide the workdir as an absolute path.",
  "inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"ExecParams","type":"object",
    "properties":{
      "command":{"description":"The bash string to execute.","type":"string"},
      "workdir":{"description":"The working directory to execute the command in. Must be an absolute path.","type":"string"},
      "timeout_ms":{"description":"The timeout for the command in milliseconds.","type":"integer","format":"uint64","minimum":0,"nullable":true},
      "login":{"description":"Launch Bash with -lc instead of -c: defaults to true.","type":"boolean","nullable":true}},
    "required":["command","workdir"]}}]}`

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return v
}

// docs/shell-tool.md §9.1: tools/list returns exactly the name, description and schema.
func TestToolsListExact(t *testing.T) {
	t.Parallel()
	s := start(t, opts{noUpdate: true})
	r := s.request("tools/list", nil)
	if r.Error != nil {
		t.Fatalf("tools/list: %s", r.Raw)
	}
	got, want := decode(t, r.Result), decode(t, []byte(wantTools))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tools/list result\n got: %s\nwant: %s", r.Result, wantTools)
	}
}

// docs/shell-tool.md §9.2: login is a nullable boolean; timeout_ms a nullable integer with
// format uint64 and minimum 0.
func TestToolsListSchemaTypes(t *testing.T) {
	t.Parallel()
	s := start(t, opts{noUpdate: true})
	r := s.request("tools/list", nil)
	var res struct {
		Tools []struct {
			InputSchema struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Tools) != 1 {
		t.Fatalf("tools/list: %v: %s", err, r.Raw)
	}
	p := res.Tools[0].InputSchema.Properties
	login, tmo := p["login"], p["timeout_ms"]
	if login["type"] != "boolean" || login["nullable"] != true {
		t.Errorf("login = %v, want a nullable boolean", login)
	}
	if tmo["type"] != "integer" || tmo["nullable"] != true || tmo["format"] != "uint64" || tmo["minimum"] != float64(0) {
		t.Errorf("timeout_ms = %v, want a nullable integer, format uint64, minimum 0", tmo)
	}
}

// docs/shell-tool.md §9.3: the result shape of docs/shell-tool.md §3.3; isError is false for a non-zero exit. The
// text's members come in the order exit_code, output, duration, timed_out.
func TestCallResultShape(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	out := s.run("echo hi; exit 3")
	if out.res.ExitCode != 3 || out.res.Output != "hi\n" || out.res.TimedOut {
		t.Errorf("result = %+v, want exit_code 3, output \"hi\\n\", timed_out false", out.res)
	}
	if out.res.Duration.Nanos >= 1e9 {
		t.Errorf("duration.nanos = %d, want < 1e9", out.res.Duration.Nanos)
	}
	keys := objectKeys(t, out.text)
	if want := []string{"exit_code", "output", "duration", "timed_out"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("result members %v, want %v", keys, want)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(out.resp.Result, &env); err != nil {
		t.Fatal(err)
	}
	if len(env) != 2 || string(env["isError"]) != "false" {
		t.Errorf("result = %s, want exactly content and isError:false", out.resp.Result)
	}
	if !strings.HasPrefix(string(out.resp.Raw), `{"jsonrpc":"2.0",`) {
		t.Errorf("response does not start with the jsonrpc member: %s", out.resp.Raw)
	}
}

// objectKeys returns the top-level member names of a JSON object, in order.
func objectKeys(t *testing.T, text string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", text)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// The patched Bash's argv bug (docs/shell-tool.md §2.1) must not crash the server: two
// consecutive external commands give a result, whatever Bash does with
// them, and the server keeps serving.
func TestArgvBugDoesNotCrash(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	out := s.run("ls x; ls y; echo b")
	t.Logf("ls x; ls y; echo b -> exit %d, output %q", out.res.ExitCode, out.res.Output)
	if next := s.run("echo still-here"); next.res.Output != "still-here\n" {
		t.Errorf("after the argv-bug call: %+v", next.res)
	}
}
