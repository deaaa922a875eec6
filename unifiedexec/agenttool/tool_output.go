package agenttool

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// ExecCommandOutput is the result of exec_command and write_stdin
// (docs/client.md §5.2 step 10). Text renders what the model sees.
type ExecCommandOutput struct {
	// EventCallID is the call id of the exec_command that started the
	// process; events of a write_stdin are attributed to it.
	EventCallID string
	// ChunkID is 6 random lowercase hex digits.
	ChunkID string
	// WallTime is the time from the start of the call to the response.
	WallTime time.Duration
	// RawOutput is the bytes collected during the yield window.
	RawOutput []byte
	// MaxOutputTokens is the token budget of the rendered output.
	MaxOutputTokens int
	// SessionID is set only while the process is running.
	SessionID *int
	// ExitCode is set when the exit code is known.
	ExitCode *int
	// OriginalTokenCount is ceil(len(text) / 4) of the untruncated text.
	OriginalTokenCount int
	// SessionCommand is the argv of the process.
	SessionCommand []string
	// Denied is set when the sandbox denied the run. The output is still a
	// normal tool output; the caller may offer an unsandboxed retry.
	Denied *SandboxDeniedError
}

// StructuredOutput is the "code mode" form of a tool output (docs/client.md §7.2).
type StructuredOutput struct {
	ChunkID            string  `json:"chunk_id,omitempty"`
	WallTimeSeconds    float64 `json:"wall_time_seconds"`
	ExitCode           *int    `json:"exit_code,omitempty"`
	SessionID          *int    `json:"session_id,omitempty"`
	OriginalTokenCount *int    `json:"original_token_count,omitempty"`
	Output             string  `json:"output"`
}

// TruncatedOutput returns the output as the model sees it:
// FormattedTruncate(lossyUTF8(raw), Tokens(max_output_tokens)).
func (o *ExecCommandOutput) TruncatedOutput() string {
	return FormattedTruncate(LossyUTF8(o.RawOutput), TokensPolicy(o.MaxOutputTokens))
}

// Text renders the tool output of docs/client.md §7.2: the sections joined with "\n".
func (o *ExecCommandOutput) Text() string {
	var s []string
	if o.ChunkID != "" {
		s = append(s, "Chunk ID: "+o.ChunkID)
	}
	s = append(s, fmt.Sprintf("Wall time: %.4f seconds", o.WallTime.Seconds()))
	if o.ExitCode != nil {
		s = append(s, "Process exited with code "+strconv.Itoa(*o.ExitCode))
	}
	if o.SessionID != nil {
		s = append(s, "Process running with session ID "+strconv.Itoa(*o.SessionID))
	}
	s = append(s, "Original token count: "+strconv.Itoa(o.OriginalTokenCount), "Output:", o.TruncatedOutput())
	return strings.Join(s, "\n")
}

// Structured returns the code-mode form.
func (o *ExecCommandOutput) Structured() StructuredOutput {
	n := o.OriginalTokenCount
	return StructuredOutput{
		ChunkID:            o.ChunkID,
		WallTimeSeconds:    o.WallTime.Seconds(),
		ExitCode:           o.ExitCode,
		SessionID:          o.SessionID,
		OriginalTokenCount: &n,
		Output:             o.TruncatedOutput(),
	}
}

// newChunkID returns 6 random lowercase hex digits.
func newChunkID() string { return fmt.Sprintf("%06x", rand.IntN(1<<24)) }
