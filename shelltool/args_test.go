package shelltool

import (
	"encoding/json"
	"testing"
)

// TestDecodeShellArgsErrors: the messages recorded from the reference
// server for the same arguments.
func TestDecodeShellArgsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"command":1}`, "invalid type: integer `1`, expected a string"},
		{`{}`, "missing field `command`"},
		{`null`, "missing field `command`"},
		{`{"workdir":"/"}`, "missing field `command`"},
		{`{"command":"x"}`, "missing field `workdir`"},
		{`{"command":"x","workdir":5}`, "invalid type: integer `5`, expected a string"},
		{`{"command":null,"workdir":"/"}`, "invalid type: null, expected a string"},
		{`{"command":"x","workdir":"/","timeout_ms":-1}`, "invalid value: integer `-1`, expected u64"},
		{`{"timeout_ms":"x","command":"x"}`, `invalid type: string "x", expected u64`},
		{`{"login":"x"}`, `invalid type: string "x", expected a boolean`},
		{`{"command":"x","workdir":"/","timeout_ms":1.5}`, "invalid type: floating point `1.5`, expected u64"},
		{`{"command":{"a":1},"workdir":[1]}`, "invalid type: map, expected a string"},
		{`{"command":"a\"b\nc","workdir":true,"x":1}`, "invalid type: boolean `true`, expected a string"},
	} {
		if _, got := decodeShellArgs(json.RawMessage(tc.in)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.in, got, tc.want)
		}
	}
	a, msg := decodeShellArgs(json.RawMessage(`{"command":"x","command":"y","workdir":"/w","timeout_ms":5,"login":false,"other":1}`))
	if msg != "" || a.Command != "y" || a.Workdir != "/w" || *a.TimeoutMs != 5 || *a.Login {
		t.Errorf("%+v %q", a, msg)
	}
}
