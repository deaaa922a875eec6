package wire

import (
	"encoding/json"
	"testing"

	"github.com/codexec/codex/rpc"
)

// TestDecodeWatchMissingTexts holds the decoder to the texts recorded from
// the reference for the same params (docs/protocol.md §6.11.1).
func TestDecodeWatchMissingTexts(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{`null`, "invalid type: null, expected struct FsWatchMissingParams"},
		{``, "invalid type: null, expected struct FsWatchMissingParams"},
		{`{}`, "missing field `watchId`"},
		{`{"watchId":"x"}`, `invalid type: string "x", expected u64`},
		{`{"watchId":null,"missing":[]}`, "invalid type: null, expected u64"},
		{`{"watchId":1}`, "missing field `missing`"},
		{`{"watchId":1,"missing":"x"}`, `invalid type: string "x", expected a sequence`},
		{`{"watchId":1,"missing":null}`, "invalid type: null, expected a sequence"},
		{`{"watchId":1,"missing":[{}]}`, "invalid type: map, expected a string"},
		{`{"watchId":1,"missing":[null]}`, "invalid type: null, expected a string"},
		{`{"watchId":1,"missing":["rel/x"]}`, "invalid URI: relative URL without a base"},
		{`{"watchId":1,"missing":["file:///a"],"present":"rel"}`, "invalid URI: relative URL without a base"},
		{`{"watchId":1,"missing":["file:///a"],"present":{}}`, "invalid type: map, expected a string"},
		{`{"watchId":-1,"missing":[]}`, "invalid number"},
		{`{"watchId":1.5,"missing":[]}`, "invalid number"},
		{`{"watchId":18446744073709551616,"missing":[]}`, "invalid number"},
		{`[1,[]]`, "invalid length 2, expected struct FsWatchMissingParams with 3 elements"},
		{`[]`, "invalid length 0, expected struct FsWatchMissingParams with 3 elements"},
		{`[1,["file:///a"],null,5]`, "invalid length 4, expected fewer elements in array"},
		{`"x"`, `invalid type: string "x", expected struct FsWatchMissingParams`},
		{`5`, "invalid type: number, expected struct FsWatchMissingParams"},
		{`true`, "invalid type: boolean `true`, expected struct FsWatchMissingParams"},
	} {
		_, err := DecodeWatchMissing(json.RawMessage(c.params))
		e, ok := err.(*rpc.Error)
		if !ok || e.Code != rpc.CodeInvalidParams || e.Message != c.want {
			t.Errorf("%s: %v, want -32602 %q", c.params, err, c.want)
		}
	}
	p, err := DecodeWatchMissing(json.RawMessage(`{"watchId":18446744073709551615,"missing":["file:///r/x/../a"],"present":null,"sandbox":{}}`))
	if err != nil || p.WatchID != 1<<64-1 || len(p.Missing) != 1 || p.Missing[0].Native != "/r/a" || p.Present != nil {
		t.Fatalf("%+v %v", p, err)
	}
	if p, err := DecodeWatchMissing(json.RawMessage(`[2,["file:///a"],"file:///b"]`)); err != nil || p.WatchID != 2 || p.Present == nil || p.Present.Native != "/b" {
		t.Fatalf("positional: %+v %v", p, err)
	}
}
