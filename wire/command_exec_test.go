package wire

import (
	"fmt"
	"testing"

	"github.com/codexec/codex/rpc"
)

// TestCommandExecValidationOrder checks the decoding messages and the
// order of the checks of docs/protocol.md §12.2, with the texts the
// reference answers.
func TestCommandExecValidationOrder(t *testing.T) {
	for _, tc := range []struct {
		params string
		exp    bool
		want   string
	}{
		{`null`, true, "-32600 Invalid request: missing field `params`"},
		{`{}`, true, "-32600 Invalid request: missing field `command`"},
		{`{"command":"ls"}`, true, `-32600 Invalid request: invalid type: string "ls", expected a sequence`},
		{`{"command":[1]}`, true, "-32600 Invalid request: invalid type: integer `1`, expected a string"},
		{`{"tty":"x","command":"ls"}`, true, `-32600 Invalid request: invalid type: string "x", expected a boolean`},
		{`{"command":["true"],"outputBytesCap":-1}`, true, "-32600 Invalid request: invalid value: integer `-1`, expected usize"},
		{`{"command":["true"],"outputBytesCap":1.5}`, true, "-32600 Invalid request: invalid type: floating point `1.5`, expected usize"},
		{`{"command":["true"],"timeoutMs":1.5}`, true, "-32600 Invalid request: invalid type: floating point `1.5`, expected i64"},
		{`{"command":["true"],"tty":null}`, true, "-32600 Invalid request: invalid type: null, expected a boolean"},
		{`{"command":["true"],"size":{"rows":1}}`, true, "-32600 Invalid request: missing field `cols`"},
		{`{"command":["true"],"size":{"rows":70000,"cols":1}}`, true, "-32600 Invalid request: invalid value: integer `70000`, expected u16"},
		{`{"command":["true"],"env":{"A":1}}`, true, "-32600 Invalid request: invalid type: integer `1`, expected a string"},
		{`{"command":["true"],"cwd":1}`, true, "-32600 Invalid request: invalid type: integer `1`, expected path string"},
		{`{"command":[],"permissionProfile":":read-only"}`, false, "-32600 command/exec.permissionProfile requires experimentalApi capability"},
		{`{"command":[],"size":{"rows":0,"cols":0},"disableTimeout":true,"timeoutMs":-1}`, true, "-32600 command must not be empty"},
		{`{"command":["true"],"permissionProfile":":read-only","sandboxPolicy":{"type":"readOnly"},"size":{"rows":1,"cols":1}}`, true, "-32600 `permissionProfile` cannot be combined with `sandboxPolicy`"},
		{`{"command":["true"],"size":{"rows":0,"cols":0},"disableTimeout":true,"timeoutMs":-1,"disableOutputCap":true,"outputBytesCap":1}`, true, "-32602 command/exec size requires tty: true"},
		{`{"command":["true"],"tty":true,"disableTimeout":true,"timeoutMs":-1,"disableOutputCap":true,"outputBytesCap":1}`, true, "-32602 command/exec cannot set both outputBytesCap and disableOutputCap"},
		{`{"command":["true"],"disableTimeout":true,"timeoutMs":5,"disableOutputCap":false,"outputBytesCap":1}`, true, "-32602 command/exec cannot set both timeoutMs and disableTimeout"},
		{`{"command":["true"],"size":{"rows":0,"cols":0},"tty":true,"timeoutMs":-1}`, true, "-32602 command/exec timeoutMs must be non-negative, got -1"},
		{`{"command":["true"],"size":{"rows":0,"cols":0},"tty":true}`, true, "-32602 command/exec size rows and cols must be greater than 0"},
		{`{"command":["true"],"disableTimeout":false,"timeoutMs":5,"extra":1}`, true, "ok"},
	} {
		got := "ok"
		p, err := DecodeCommandExecParams([]byte(tc.params))
		if err == nil {
			err = ValidateCommandExec(p, tc.exp)
		}
		if err == nil {
			err = ValidateCommandExecSize(p)
		}
		if err != nil {
			got = fmt.Sprintf("%d %s", err.Code, err.Message)
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.params, got, tc.want)
		}
	}
}

func TestCommandExecFollowUpDecoding(t *testing.T) {
	for _, tc := range []struct {
		decode func([]byte) *rpc.Error
		params string
		want   string
	}{
		{func(b []byte) *rpc.Error { _, e := DecodeCommandExecWrite(b); return e }, `{"closeStdin":true}`, "Invalid request: missing field `processId`"},
		{func(b []byte) *rpc.Error { _, e := DecodeCommandExecResize(b); return e }, `{"processId":"p","size":{"rows":70000,"cols":1}}`, "Invalid request: invalid value: integer `70000`, expected u16"},
		{func(b []byte) *rpc.Error { _, e := DecodeCommandExecTerminate(b); return e }, `{}`, "Invalid request: missing field `processId`"},
		{func(b []byte) *rpc.Error { _, e := DecodeCommandExecTerminate(b); return e }, `{"processId":"p"}`, ""},
	} {
		got := ""
		if err := tc.decode([]byte(tc.params)); err != nil {
			got = err.Message
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.params, got, tc.want)
		}
	}
}
