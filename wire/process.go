package wire

import (
	"encoding/json"
)

// This file is the single source of truth for the JSON shapes of the
// handshake, environment and process/* methods (docs/protocol.md §6). The `rpc`
// tags are read by rpc.DecodeParams on the server: a member tagged required
// must be present (and not null).

// InitializeParams is the params of initialize.
type InitializeParams struct {
	ClientName      string  `json:"clientName" rpc:"required"`
	ResumeSessionID *string `json:"resumeSessionId"`
	// Capabilities are the client's; experimentalApi unlocks
	// command/exec.permissionProfile (docs/protocol.md §12.1).
	Capabilities *Capabilities `json:"capabilities,omitempty"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	SessionID       string          `json:"sessionId"`
	EnvironmentInfo EnvironmentInfo `json:"environmentInfo"`
}

// Shell names the user's shell; Path is a native path, not a URI.
type Shell struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// EnvironmentInfo is the result of environment/info (docs/protocol.md §6.3).
type EnvironmentInfo struct {
	Shell                Shell           `json:"shell"`
	ExecutorVersion      string          `json:"executorVersion"`
	ProviderID           string          `json:"providerId"`
	Cwd                  string          `json:"cwd"`
	UserHomeDir          string          `json:"userHomeDir"`
	PlatformOS           string          `json:"platformOs"`
	PrependPathDirs      []string        `json:"prependPathDirs,omitempty"`
	TemporaryDirectories []string        `json:"temporaryDirectories"`
	TempDir              string          `json:"tempDir"`
	Capabilities         map[string]bool `json:"capabilities"`
}

// StatusResult is the result of environment/status.
type StatusResult struct {
	Status string `json:"status"`
}

// Size is a PTY size.
type Size struct {
	Rows uint16 `json:"rows" rpc:"required"`
	Cols uint16 `json:"cols" rpc:"required"`
}

// EnvPolicy is the `envPolicy` of process/start (docs/protocol.md §7.3).
type EnvPolicy struct {
	Inherit               string            `json:"inherit" rpc:"required"`
	IgnoreDefaultExcludes bool              `json:"ignoreDefaultExcludes" rpc:"required"`
	Exclude               []string          `json:"exclude" rpc:"required"`
	Set                   map[string]string `json:"set" rpc:"required"`
	IncludeOnly           []string          `json:"includeOnly" rpc:"required"`
}

// StartParams is the params of process/start (docs/protocol.md §6.5). Members
// that the server accepts and ignores are decoded as raw JSON.
type StartParams struct {
	ProcessID string            `json:"processId" rpc:"required"`
	Argv      []string          `json:"argv" rpc:"required"`
	Cwd       Path              `json:"cwd" rpc:"required"`
	Env       map[string]string `json:"env" rpc:"required"`
	TTY       bool              `json:"tty" rpc:"required"`
	PipeStdin bool              `json:"pipeStdin"`
	Arg0      *string           `json:"arg0"`
	EnvPolicy *EnvPolicy        `json:"envPolicy"`
	Sandbox   json.RawMessage   `json:"sandbox"`
	// EnforceManagedNetwork is accepted: a command given a NetworkProxy
	// is isolated whatever it says (docs/protocol.md §6.5.1).
	EnforceManagedNetwork Flag            `json:"enforceManagedNetwork"`
	ManagedNetwork        json.RawMessage `json:"managedNetwork"`
	// NetworkProxy, when present, runs the command behind its own proxy.
	NetworkProxy  *NetworkProxyParams `json:"networkProxy"`
	ShellSnapshot json.RawMessage     `json:"shellSnapshot"`
	Metadata      json.RawMessage     `json:"metadata"`
	Size          *Size               `json:"size"`
}

// StartResult is the result of process/start.
type StartResult struct {
	ProcessID   string `json:"processId"`
	SandboxType string `json:"sandboxType"`
}

// ReadParams is the params of process/read (docs/protocol.md §6.6).
type ReadParams struct {
	ProcessID         string  `json:"processId" rpc:"required"`
	AfterSeq          *uint64 `json:"afterSeq"`
	MaxBytes          *uint64 `json:"maxBytes"`
	WaitMs            *uint64 `json:"waitMs"`
	IncludeTruncation bool    `json:"includeTruncation"`
}

// ReadChunk is one output chunk in a read result.
type ReadChunk struct {
	Seq    uint64 `json:"seq"`
	Stream string `json:"stream"`
	Chunk  Bytes  `json:"chunk"`
}

// ReadResult is the result of process/read. The last three members are the
// truncation extension (docs/protocol.md §10.4) and appear only when asked for.
type ReadResult struct {
	Chunks           []ReadChunk `json:"chunks"`
	NextSeq          uint64      `json:"nextSeq"`
	Exited           bool        `json:"exited"`
	ExitCode         *int        `json:"exitCode"`
	Closed           bool        `json:"closed"`
	Failure          *string     `json:"failure"`
	SandboxDenied    bool        `json:"sandboxDenied"`
	Truncated        *bool       `json:"truncated,omitempty"`
	FirstRetainedSeq *uint64     `json:"-"`
	EvictedBytes     *uint64     `json:"evictedBytes,omitempty"`
	// WithTruncation makes MarshalJSON write firstRetainedSeq (null when
	// FirstRetainedSeq is nil). It is set by the server when the request
	// asked for the extension and is never on the wire itself.
	WithTruncation bool `json:"-"`
}

// MarshalJSON writes firstRetainedSeq (which may be null) only when the
// truncation extension was requested.
func (r ReadResult) MarshalJSON() ([]byte, error) {
	type plain ReadResult
	b, err := json.Marshal(plain(r))
	if err != nil || !r.WithTruncation {
		return b, err
	}
	first, _ := json.Marshal(r.FirstRetainedSeq)
	b = b[:len(b)-1]
	b = append(b, `,"firstRetainedSeq":`...)
	b = append(b, first...)
	return append(b, '}'), nil
}

// UnmarshalJSON is the inverse of MarshalJSON: a firstRetainedSeq member
// (even null) sets WithTruncation.
func (r *ReadResult) UnmarshalJSON(b []byte) error {
	type plain ReadResult
	var aux struct {
		plain
		FirstRetainedSeq json.RawMessage `json:"firstRetainedSeq"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*r = ReadResult(aux.plain)
	if aux.FirstRetainedSeq == nil {
		return nil
	}
	r.WithTruncation = true
	return json.Unmarshal(aux.FirstRetainedSeq, &r.FirstRetainedSeq)
}

// WriteParams is the params of process/write (docs/protocol.md §6.7, §10.2).
type WriteParams struct {
	ProcessID  string  `json:"processId" rpc:"required"`
	Chunk      Bytes   `json:"chunk" rpc:"required"`
	WriteID    *string `json:"writeId"`
	CloseStdin bool    `json:"closeStdin"`
}

// WriteResult is the result of process/write and process/closeStdin.
type WriteResult struct {
	Status string `json:"status"`
}

// Write statuses.
const (
	WriteAccepted       = "accepted"
	WriteUnknownProcess = "unknownProcess"
	WriteStarting       = "starting"
	WriteStdinClosed    = "stdinClosed"
)

// SignalParams is the params of process/signal.
type SignalParams struct {
	ProcessID string `json:"processId" rpc:"required"`
	Signal    string `json:"signal" rpc:"required"`
}

// TerminateMode is the [ext] mode of process/terminate (docs/protocol.md §10.3).
type TerminateMode struct {
	Type      string  `json:"type" rpc:"required"`
	TimeoutMs *uint64 `json:"timeoutMs"`
}

// TerminateParams is the params of process/terminate.
type TerminateParams struct {
	ProcessID string         `json:"processId" rpc:"required"`
	Mode      *TerminateMode `json:"mode"`
}

// TerminateResult is the result of process/terminate.
type TerminateResult struct {
	Running bool `json:"running"`
}

// ResizeParams is the params of process/resize (docs/protocol.md §10.1).
type ResizeParams struct {
	ProcessID string `json:"processId" rpc:"required"`
	Size      Size   `json:"size" rpc:"required"`
}

// ProcessIDParams is the params of process/closeStdin.
type ProcessIDParams struct {
	ProcessID string `json:"processId" rpc:"required"`
}
