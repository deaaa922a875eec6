package shelltool

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/codexec/codex/rpc"
)

// handler answers one MCP connection. Handle runs on the connection's
// handler goroutine, one message at a time in arrival order, so the
// sandbox state an update stores is the one every later tools/call sees;
// calls run on goroutines of the connection (Conn.Go) and answer with
// Respond.
type handler struct {
	c   *rpc.Conn
	cfg *Config
	log *zap.Logger

	// Owned by the handler goroutine.
	initialized bool
	elicitation bool // the client declared the elicitation capability
	state       sandboxState

	mu    sync.Mutex
	calls map[string]*runningCall // guarded by mu: running calls by request id

	// base is the context of every call: the connection's, cancelled
	// early by stopCalls at the end of input.
	base      context.Context
	stopCalls context.CancelFunc
}

// runningCall is a tools/call whose command runs.
type runningCall struct {
	cancel    context.CancelFunc
	cancelled atomic.Bool // by notifications/cancelled: never answered
}

func newHandler(c *rpc.Conn, cfg *Config) *handler {
	base, stop := context.WithCancel(c.Context())
	return &handler{c: c, cfg: cfg, log: cfg.Logger, state: defaultState(), calls: map[string]*runningCall{}, base: base, stopCalls: stop}
}

// Handle implements rpc.Handler.
func (h *handler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if req.IsNotification() {
		h.notification(req)
		return nil, nil
	}
	switch req.Method {
	case "initialize":
		return h.initialize(req.Params)
	case "ping":
		return json.RawMessage(`{}`), nil
	}
	if !h.initialized {
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "invalid request: %s before initialize", rpc.Clip(req.Method))
	}
	switch req.Method {
	case "tools/list":
		return toolsList, nil
	case "tools/call":
		return h.toolsCall(req)
	case "codex/sandbox-state/update":
		st, err := parseUpdate(req.Params)
		if err != nil {
			return nil, err
		}
		h.state = st
		return json.RawMessage(`{}`), nil
	}
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "%s", rpc.Clip(req.Method))
}

// initializeParams is what initialize reads of the client's params.
type initializeParams struct {
	ProtocolVersion string `json:"protocolVersion" rpc:"required"`
	Capabilities    struct {
		Elicitation json.RawMessage `json:"elicitation"`
	} `json:"capabilities"`
}

// initializeResult is the initialize result of docs/shell-tool.md §3.1, in its order.
type initializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	Instructions string `json:"instructions"`
}

// supportedVersions are the MCP protocol versions initialize accepts
// as asked; any other is answered with ProtocolVersion, the newest (MCP
// lifecycle: the server MUST answer a version it supports).
var supportedVersions = []string{"2024-11-05", "2025-03-26", ProtocolVersion}

// initialize answers the handshake: the client's protocol version when we
// support it, else ours.
func (h *handler) initialize(raw json.RawMessage) (any, error) {
	var p initializeParams
	if err := rpc.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	h.initialized = true
	h.elicitation = len(p.Capabilities.Elicitation) > 0 && string(p.Capabilities.Elicitation) != "null"
	res := initializeResult{
		ProtocolVersion: ProtocolVersion,
		Capabilities:    json.RawMessage(`{"experimental":{"codex/sandbox-state":{"version":"1.0.0"}},"tools":{}}`),
		Instructions:    instructions,
	}
	if slices.Contains(supportedVersions, p.ProtocolVersion) {
		res.ProtocolVersion = p.ProtocolVersion
	}
	res.ServerInfo.Name, res.ServerInfo.Version = h.cfg.Name, h.cfg.Version
	return encodeJSON(res), nil
}

// cancelledParams are the params of notifications/cancelled.
type cancelledParams struct {
	RequestID json.RawMessage `json:"requestId"`
}

// notification handles the client's notifications: notifications/cancelled
// cancels the call it names (its command and escalated children are
// killed) and drops its request unanswered, as the MCP cancellation rules
// ask (docs/shell-tool.md §3.1); the rest are ignored.
func (h *handler) notification(req *rpc.Request) {
	if req.Method != "notifications/cancelled" {
		return
	}
	var p cancelledParams
	var id rpc.ID
	if json.Unmarshal(req.Params, &p) != nil || id.UnmarshalJSON(p.RequestID) != nil {
		h.log.Debug("unusable notifications/cancelled", zap.ByteString("params", req.Params))
		return
	}
	h.mu.Lock()
	rc := h.calls[idKey(id)]
	h.mu.Unlock()
	if rc == nil {
		return // finished (answered) already, or not a call of ours
	}
	rc.cancelled.Store(true)
	h.c.Abandon(id)
	rc.cancel()
}

func idKey(id rpc.ID) string { return string(id.AppendJSON(nil)) }
