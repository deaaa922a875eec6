package wire

import (
	"encoding/json"
	"testing"
)

// benchExecParams are the params of the #14 benchmark request.
var benchExecParams = json.RawMessage(`{"command":["/bin/true"],"sandboxPolicy":{"type":"dangerFullAccess"}}`)

// BenchmarkDecodeCommandExecParams decodes the params of the #14 request.
func BenchmarkDecodeCommandExecParams(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCommandExecParams(benchExecParams); err != nil {
			b.Fatal(err)
		}
	}
}
