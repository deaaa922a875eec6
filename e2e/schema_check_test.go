package e2e

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codexec/codex/schema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The committed JSON Schema must describe what the server accepts
// (docs/protocol.md §13): every command/exec* request a test sends
// through client or cx and the server answers with a result is validated
// against the schema of its method's params, and a request the schema
// rejects fails the test that sent it.

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{}
)

// paramsSchema compiles the committed params schema of method once.
func paramsSchema(t *testing.T, method string) *jsonschema.Schema {
	t.Helper()
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if s, ok := schemaCache[method]; ok {
		return s
	}
	abs, err := filepath.Abs(filepath.Join("..", "schema", schema.FileName(method, ".params.json")))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	s, err := c.Compile(abs)
	if err != nil {
		t.Fatalf("%s: %v", abs, err)
	}
	schemaCache[method] = s
	return s
}

// schemaChecked reports whether the requests of method are checked.
func schemaChecked(method string) bool { return strings.HasPrefix(method, "command/exec") }

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

// answered checks the request of id when the response is a result.
func (l *requestLog) answered(t *testing.T, id string, isResult bool) {
	t.Helper()
	l.mu.Lock()
	r, ok := l.pending[id]
	delete(l.pending, id)
	l.mu.Unlock()
	if ok && isResult {
		checkAcceptedParams(t, r.Method, r.Params)
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
