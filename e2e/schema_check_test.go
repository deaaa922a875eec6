package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codexec/codex/schema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The committed JSON Schema must describe what the server accepts and
// answers (docs/protocol.md §13): every request a test sends through
// client, cx or a raw stdio server and the server answers with a result is
// validated against the schema of its method's params, and the result
// against the schema of its result; a mismatch fails the test that sent
// the request.

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{}
)

// paramsSchema compiles the committed params schema of method once.
func paramsSchema(t *testing.T, method string) *jsonschema.Schema {
	t.Helper()
	s := compiledSchema(t, method, ".params.json")
	if s == nil {
		t.Fatalf("no params schema for %s", method)
	}
	return s
}

// compiledSchema compiles the committed schema file of method with suffix
// once; nil if there is no such file.
func compiledSchema(t *testing.T, method, suffix string) *jsonschema.Schema {
	t.Helper()
	schemaMu.Lock()
	defer schemaMu.Unlock()
	key := method + suffix
	if s, ok := schemaCache[key]; ok {
		return s
	}
	abs, err := filepath.Abs(filepath.Join("..", "schema", schema.FileName(method, suffix)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		schemaCache[key] = nil
		return nil
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	s, err := c.Compile(abs)
	if err != nil {
		t.Fatalf("%s: %v", abs, err)
	}
	schemaCache[key] = s
	return s
}

// schemaChecked reports whether the requests of method are checked: every
// method with a params schema. A method without one is an unknown method
// (answered -32601), which no test expects to be accepted.
func schemaChecked(method string) bool {
	if method == "" {
		return false
	}
	_, err := os.Stat(filepath.Join("..", "schema", schema.FileName(method, ".params.json")))
	return err == nil
}

// checkAcceptedParams validates the params of an accepted request of
// method against our schema.
func checkAcceptedParams(t *testing.T, method string, params json.RawMessage) {
	t.Helper()
	if len(params) == 0 {
		return
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		t.Errorf("%s params %s: %v", method, params, err)
		return
	}
	if err := paramsSchema(t, method).Validate(v); err != nil {
		t.Errorf("%s %s: accepted by the server, rejected by schema/: %v", method, params, err)
	}
}

// pendingRequest is a sent request whose params are checked once the
// server accepts it.
type pendingRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// requestLog holds the checked requests sent on one connection until
// their response.
type requestLog struct {
	mu      sync.Mutex
	pending map[string]pendingRequest
}

// sent records a request (its whole JSON, id apart) sent with id.
func (l *requestLog) sent(id string, raw []byte) {
	var r pendingRequest
	if json.Unmarshal(raw, &r) != nil || !schemaChecked(r.Method) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[string]pendingRequest{}
	}
	l.pending[id] = r
}

// answered checks the request of id and its result against the schema
// when the response is a result (result non-nil).
func (l *requestLog) answered(t *testing.T, id string, result json.RawMessage) {
	t.Helper()
	l.mu.Lock()
	r, ok := l.pending[id]
	delete(l.pending, id)
	l.mu.Unlock()
	if ok && result != nil {
		checkAcceptedParams(t, r.Method, r.Params)
		checkResult(t, r.Method, result)
	}
}

// answeredValue is answered for a response already decoded by
// encoding/json (numbers as float64), as cx holds it: isResult when it
// is a result, result its value, validated as it is (encoding it and
// decoding it again cost a 4 MiB fs/walk answer seconds under -race).
func (l *requestLog) answeredValue(t *testing.T, id string, isResult bool, result any) {
	t.Helper()
	l.mu.Lock()
	r, ok := l.pending[id]
	delete(l.pending, id)
	l.mu.Unlock()
	if ok && isResult {
		checkAcceptedParams(t, r.Method, r.Params)
		if s := compiledSchema(t, r.Method, ".result.json"); s != nil {
			validateResult(t, r.Method, s, result)
		}
	}
}

// checkResult validates the result the server gave to a request of method
// against our schema of that result.
func checkResult(t *testing.T, method string, result json.RawMessage) {
	t.Helper()
	s := compiledSchema(t, method, ".result.json")
	if s == nil {
		return
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(result))
	if err != nil {
		t.Errorf("%s result %s: %v", method, result, err)
		return
	}
	validateResult(t, method, s, v)
}

// validateResult validates a decoded result of method against s, its
// result schema.
func validateResult(t *testing.T, method string, s *jsonschema.Schema, v any) {
	t.Helper()
	if err := s.Validate(v); err != nil {
		b, _ := json.Marshal(v)
		t.Errorf("%s: the server's result %.300s does not match schema/: %v", method, b, err)
	}
}

// TestSchemaCheckOfDecodedResults: a result decoded by encoding/json
// (numbers as float64), as answeredValue validates it, is checked like
// its text: a whole number passes as an integer, a fraction or a string
// does not, nor does a missing field.
func TestSchemaCheckOfDecodedResults(t *testing.T) {
	s := compiledSchema(t, "command/exec", ".result.json")
	for text, ok := range map[string]bool{
		`{"exitCode":1,"stdout":"","stderr":""}`:   true,
		`{"exitCode":-9,"stdout":"a","stderr":""}`: true,
		`{"exitCode":1.5,"stdout":"","stderr":""}`: false,
		`{"exitCode":"1","stdout":"","stderr":""}`: false,
		`{"exitCode":1,"stdout":""}`:               false,
		`null`:                                     false,
	} {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); (err == nil) != ok {
			t.Errorf("%s: %v, want valid %v", text, err, ok)
		}
	}
}

// TestSchemaCheckCatchesARejectedRequest: the check fails on params the
// schema rejects (a number where a string belongs), so a passing suite
// means something.
func TestSchemaCheckCatchesARejectedRequest(t *testing.T) {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"command":["true"],"cwd":7}`))
	if err != nil {
		t.Fatal(err)
	}
	if paramsSchema(t, "command/exec").Validate(v) == nil {
		t.Fatal("a numeric cwd validated")
	}
	v, err = jsonschema.UnmarshalJSON(strings.NewReader(`{"command":["true"],"cwd":null,"env":{"A":null},"timeoutMs":null,"outputBytesCap":null,"processId":null,"sandboxPolicy":null,"size":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := paramsSchema(t, "command/exec").Validate(v); err != nil {
		t.Fatalf("nulls the server accepts: %v", err)
	}
}

// sentLines records the requests among the newline-delimited messages of
// a raw stdio write (lines that are not a request with an id are not).
func (l *requestLog) sentLines(text string) {
	for _, line := range strings.Split(text, "\n") {
		var m struct {
			ID any `json:"id"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil {
			l.sent(fmt.Sprint(m.ID), []byte(line))
		}
	}
}

// answeredLine checks the request a raw stdio line answers, if it is a
// response to a recorded one.
func (l *requestLog) answeredLine(t *testing.T, line []byte) {
	if isNotificationLine(line) {
		return // answers nothing: not worth decoding (a body delta is 87 KB)
	}
	var m struct {
		ID     any             `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != "" {
		return
	}
	l.answered(t, fmt.Sprint(m.ID), m.Result)
}

// isNotificationLine reports whether a line opens with a non-empty
// "method" as its first key, as the server writes every notification
// and request: such a line is no response. Any other line is decoded.
func isNotificationLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"method":"`))
	return ok && len(rest) > 0 && rest[0] != '"'
}

// TestNotificationLinesSkipped: the shortcut of answeredLine takes the
// server's notifications and nothing that may be a response.
func TestNotificationLinesSkipped(t *testing.T) {
	for line, want := range map[string]bool{
		`{"method":"process/output","params":{"processId":"p","seq":1}}`: true,
		`{"method":"http/request/bodyDelta","params":{}}`:                true,
		`{"id":1,"result":{}}`:                           false,
		`{"method":"","id":1,"result":{}}`:               false,
		`{"result":{},"method":"x","id":1}`:              false,
		` {"method":"process/output","params":{}}`:       false,
		`{"id":2,"error":{"code":-32601,"message":"m"}}`: false,
	} {
		if got := isNotificationLine([]byte(line)); got != want {
			t.Errorf("%s: %v, want %v", line, got, want)
		}
	}
}
