package unifiedexec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

	"github.com/codexec/codex/wire"
)

// routedDelta is the decoded value of a command/exec/outputDelta that
// predecode has already handed to its handle; the handler ignores it.
type routedDelta struct{}

var deltaMethod = []byte(`"` + wire.MethodCommandExecOutput + `"`)

// predecode is the Client's rpc.Options.Predecode: the process
// notifications' fast decoding, and the routing of command/exec/outputDelta.
// The deltas are routed here, on the reading goroutine, so that each one
// is queued to its handle before the command's answer, which the same
// goroutine reads later, can reach Wait.
func (c *Client) predecode(data []byte) (string, any) {
	if method, v := predecode(data); v != nil {
		return method, v
	}
	if !bytes.Contains(data, deltaMethod) {
		return "", nil
	}
	var msg struct {
		ID     json.RawMessage              `json:"id"`
		Method string                       `json:"method"`
		Params *wire.CommandExecOutputDelta `json:"params"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.Method != wire.MethodCommandExecOutput || msg.ID != nil || msg.Params == nil {
		return "", nil
	}
	b, err := base64.StdEncoding.DecodeString(msg.Params.DeltaBase64)
	if err != nil {
		c.log.Debug("bad command/exec/outputDelta", "processId", msg.Params.ProcessID, "error", err)
		return wire.MethodCommandExecOutput, routedDelta{}
	}
	c.routeCommandExec(msg.Params.ProcessID, CommandExecOutput{Stream: msg.Params.Stream, Data: b, CapReached: msg.Params.CapReached})
	return wire.MethodCommandExecOutput, routedDelta{}
}
