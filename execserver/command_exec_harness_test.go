package execserver

import (
	"encoding/base64"
	"encoding/json"

	"github.com/codexec/codex/wire"
)

// execDelta is one command/exec/outputDelta as received.
type execDelta struct {
	stream     string
	data       []byte
	capReached bool
}

// recordDelta keeps a delta; called with tc.mu held.
func (tc *testClient) recordDelta(params json.RawMessage) {
	var d wire.CommandExecOutputDelta
	_ = json.Unmarshal(params, &d)
	b, _ := base64.StdEncoding.DecodeString(d.DeltaBase64)
	if tc.cmd == nil {
		tc.cmd = map[string][]execDelta{}
	}
	tc.cmd[d.ProcessID] = append(tc.cmd[d.ProcessID], execDelta{stream: d.Stream, data: b, capReached: d.CapReached})
}

// deltas waits until the deltas of id end with capReached, and returns them.
func (tc *testClient) deltas(id string) []execDelta {
	tc.t.Helper()
	tc.waitFor("the capped delta of "+id, func() bool {
		ds := tc.cmd[id]
		return len(ds) > 0 && ds[len(ds)-1].capReached
	})
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return append([]execDelta(nil), tc.cmd[id]...)
}
