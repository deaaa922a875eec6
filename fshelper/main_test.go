package fshelper_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// callTimeout fails a call that blocks, e.g. on a FIFO. It is a failure
// guard only; no test waits for it to pass.
const callTimeout = 20 * time.Second

// call runs method through Handlers() with params (a raw JSON string, or a
// value to marshal) and returns the marshalled result or the wire error.
func call(t *testing.T, method string, params any) (string, *rpc.Error) {
	t.Helper()
	h, ok := fshelper.Handlers(nil)[method]
	if !ok {
		t.Fatalf("no handler for %s", method)
	}
	var raw json.RawMessage
	switch p := params.(type) {
	case nil:
	case string:
		raw = json.RawMessage(p)
	default:
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	type outcome struct {
		res any
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := h(context.Background(), &rpc.Request{ID: rpc.Int64ID(1), Method: method, Params: raw})
		done <- outcome{res, err}
	}()
	var out outcome
	select {
	case out = <-done:
	case <-time.After(callTimeout):
		t.Fatalf("%s %s blocked", method, raw)
	}
	if out.err != nil {
		var we *rpc.Error
		if !errors.As(out.err, &we) {
			t.Fatalf("%s: error %v (%T) is not an *rpc.Error", method, out.err, out.err)
		}
		return "", we
	}
	b, err := json.Marshal(out.res)
	if err != nil {
		t.Fatalf("%s: marshal result: %v", method, err)
	}
	return string(b), nil
}

// mustCall calls method and fails the test on a wire error.
func mustCall(t *testing.T, method string, params any) string {
	t.Helper()
	res, werr := call(t, method, params)
	if werr != nil {
		t.Fatalf("%s: unexpected error %d %q", method, werr.Code, werr.Message)
	}
	return res
}

// wireCase is one table entry run through Handlers(). In every string,
// $ROOT stands for the test's fixture directory and $URI for its file:// URI.
type wireCase struct {
	name   string
	method string
	params string
	want   string // the result JSON, when code is 0
	code   int
	msg    string // the exact message; a trailing "*" matches a prefix
	check  func(t *testing.T, root string)
}

// runWireCases runs each case in a fresh fixture made by setup.
func runWireCases(t *testing.T, setup func(t *testing.T) string, cases []wireCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := setup(t)
			expand := func(s string) string {
				s = strings.ReplaceAll(s, "$URI", wire.FileURI(root))
				return strings.ReplaceAll(s, "$ROOT", root)
			}
			res, werr := call(t, tc.method, expand(tc.params))
			switch {
			case tc.code == 0 && werr != nil:
				t.Fatalf("unexpected error %d %q", werr.Code, werr.Message)
			case tc.code == 0 && res != expand(tc.want):
				t.Fatalf("result\n got %s\nwant %s", res, expand(tc.want))
			case tc.code != 0 && werr == nil:
				t.Fatalf("got result %s, want error %d %q", res, tc.code, expand(tc.msg))
			case tc.code != 0:
				checkWireError(t, werr, tc.code, expand(tc.msg))
			}
			if tc.check != nil {
				tc.check(t, root)
			}
		})
	}
}

// checkWireError compares a wire error; a msg ending in "*" is a prefix.
func checkWireError(t *testing.T, werr *rpc.Error, code int, msg string) {
	t.Helper()
	ok := werr.Message == msg
	if prefix, found := strings.CutSuffix(msg, "*"); found {
		ok = strings.HasPrefix(werr.Message, prefix)
	}
	if werr.Code != code || !ok {
		t.Fatalf("error\n got %d %q\nwant %d %q", werr.Code, werr.Message, code, msg)
	}
}
