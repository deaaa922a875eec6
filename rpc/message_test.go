package rpc_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codexec/codex/rpc"
)

func TestDecodeMessage(t *testing.T) {
	cases := []struct {
		in   string
		kind string // "req", "notif", "resp", "err"
		id   string
	}{
		{`{"id":1,"method":"initialize","params":{"clientName":"x"}}`, "req", "1"},
		{`{"jsonrpc":"2.0","id":"a","method":"m"}`, "req", `"a"`},
		{`{"method":"initialized","params":{}}`, "notif", ""},
		{`{"id":3,"result":{}}`, "resp", "3"},
		{`{"id":3,"error":{"code":-1,"message":"x"}}`, "resp", "3"},
		{`{"id":1.5,"method":"m"}`, "err", ""},
		{`{"id":null,"method":"m"}`, "err", ""},
		{`{"id":true,"method":"m"}`, "err", ""},
		{`[{"id":1,"method":"m"}]`, "err", ""},
		{`{"params":{}}`, "err", ""},
		{`{"id":4}`, "err", ""},
		{`not json`, "err", ""},
		{``, "err", ""},
	}
	for _, tc := range cases {
		m, err := rpc.DecodeMessage([]byte(tc.in))
		switch tc.kind {
		case "err":
			if err == nil {
				t.Errorf("%s: decoded as %#v, want an error", tc.in, m)
			}
		case "req", "notif":
			r, ok := m.(*rpc.Request)
			if err != nil || !ok || r.IsNotification() != (tc.kind == "notif") {
				t.Errorf("%s: %#v, %v", tc.in, m, err)
				continue
			}
			if tc.id != "" {
				if b, _ := json.Marshal(r.ID); string(b) != tc.id {
					t.Errorf("%s: id %s, want %s", tc.in, b, tc.id)
				}
			}
		case "resp":
			if _, ok := m.(*rpc.Response); err != nil || !ok {
				t.Errorf("%s: %#v, %v", tc.in, m, err)
			}
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{`{"id":1,"method":"a","params":{}}`, `{"method":"initialized"}`, `{"id":"x","result":null}`, `{`, `[]`, `{"id":9223372036854775807,"method":"m"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := rpc.DecodeMessage(data)
		if err != nil {
			return
		}
		switch v := m.(type) {
		case *rpc.Request:
			if v.IsNotification() {
				return
			}
			// Any request id must survive a round trip.
			b, _ := json.Marshal(v.ID)
			var back rpc.ID
			if err := json.Unmarshal(b, &back); err != nil || back != v.ID {
				t.Fatalf("id %s does not round-trip: %v", b, err)
			}
		case *rpc.Response:
		default:
			t.Fatalf("unexpected kind %T", m)
		}
	})
}

func TestClip(t *testing.T) {
	if got := rpc.Clip("short"); got != "short" {
		t.Fatal(got)
	}
	long := strings.Repeat("é", rpc.MaxEchoBytes) // 2 bytes each
	got := rpc.Clip(long)
	if len(got) > rpc.MaxEchoBytes+len("…") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Fatalf("clipped to %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}
