package rpc_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codexec/codex/internal/rpctest"
	"github.com/codexec/codex/rpc"
)

// TestStrictJSONRPC: with StrictJSONRPC, input that is not JSON gets -32700
// and a message that is not a JSON-RPC 2.0 request gets -32600, both with a
// null id (or the message's id when it could be read), and the connection
// carries on.
func TestStrictJSONRPC(t *testing.T) {
	a, b := stdioPair(t)
	startConn(t, a, rpc.Options{JSONRPC: true, StrictJSONRPC: true, Bind: func(*rpc.Conn) rpc.Handler { return rpc.HandlerFunc(echo) }})
	for _, tc := range []struct{ in, want string }{
		{`not json`, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error: invalid character 'o' in literal null (expecting 'u')"},"id":null}`},
		{`[{"jsonrpc":"2.0","id":1,"method":"m"}]`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: batches are not supported"},"id":null}`},
		{`{"id":7,"method":"m"}`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""},"id":7}`},
		{`{"jsonrpc":"1.0","id":"x","method":"m"}`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""},"id":"x"}`},
		{`{"jsonrpc":"2.0","id":true,"method":"m"}`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: invalid request id true: expected a string or an integer"},"id":null}`},
		{`17`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: expected a JSON object"},"id":null}`},
		{`{"jsonrpc":"2.0","id":3,"method":"m","params":{"a":1}}`, `{"jsonrpc":"2.0","id":3,"result":{"method":"m","params":{"a":1}}}`},
	} {
		if err := b.Write(context.Background(), []byte(tc.in)); err != nil {
			t.Fatal(err)
		}
		if got := string(rpctest.ReadRaw(t, b)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestStrictUnknownResponse: a response to no outstanding call is dropped
// (the peer may answer a request we gave up on); the connection stays.
func TestStrictUnknownResponse(t *testing.T) {
	a, b := stdioPair(t)
	startConn(t, a, rpc.Options{JSONRPC: true, StrictJSONRPC: true, Bind: func(*rpc.Conn) rpc.Handler { return rpc.HandlerFunc(echo) }})
	for _, in := range []string{`{"jsonrpc":"2.0","id":99,"result":{}}`, `{"jsonrpc":"2.0","id":1,"method":"m"}`} {
		if err := b.Write(context.Background(), []byte(in)); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(rpctest.ReadRaw(t, b)); got != `{"jsonrpc":"2.0","id":1,"result":{"method":"m","params":null}}` {
		t.Fatalf("got %s", got)
	}
}

// TestCallWithIDFromZero: CallIDsFromZero numbers calls 0, 1, …, and
// CallWithID builds the params from the id.
func TestCallWithIDFromZero(t *testing.T) {
	a, b := stdioPair(t)
	c := startConn(t, a, rpc.Options{JSONRPC: true, CallIDsFromZero: true})
	for want := 0; want < 2; want++ {
		errc := make(chan error, 1)
		var got map[string]int
		go func() {
			errc <- c.CallWithID(callCtx(t), "ask", func(id rpc.ID) any { return map[string]rpc.ID{"token": id} }, &got)
		}()
		var req struct {
			ID     int            `json:"id"`
			Params map[string]int `json:"params"`
		}
		raw := rpctest.ReadRaw(t, b)
		if err := json.Unmarshal(raw, &req); err != nil || req.ID != want || req.Params["token"] != want {
			t.Fatalf("request %s (%v), want id and token %d", raw, err, want)
		}
		if err := b.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+string(rune('0'+want))+`,"result":{"n":5}}`)); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil || got["n"] != 5 {
			t.Fatalf("call: %v %v", err, got)
		}
	}
}
