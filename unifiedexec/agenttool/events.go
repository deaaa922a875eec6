package agenttool

import (
	"encoding/json"
	"time"
)

// Event sources of ExecCommandBegin and ExecCommandEnd (docs/client.md §8.1).
const (
	SourceAgent                  = "agent"
	SourceUserShell              = "user_shell"
	SourceUnifiedExecStartup     = "unified_exec_startup"
	SourceUnifiedExecInteraction = "unified_exec_interaction"
)

// Event is one event of the tool layer: *ExecCommandBeginEvent,
// *ExecCommandOutputDeltaEvent, *ExecCommandEndEvent,
// *TerminalInteractionEvent or *ModelWarningEvent. Every unified-exec event
// carries the call id of the original exec_command.
type Event interface {
	// EventType returns the wire name, e.g. "exec_command_begin".
	EventType() string
}

// EventSink receives the tool layer's events. It is called from the
// tools' goroutines, possibly concurrently for different processes, and must
// not block for long. Events of one process arrive in order: Begin, deltas,
// End. A nil sink drops events.
type EventSink func(Event)

// ChannelSink returns a sink that sends every event on ch (blocking).
func ChannelSink(ch chan<- Event) EventSink {
	return func(e Event) { ch <- e }
}

// ExecCommandBeginEvent is exec_command_begin (docs/client.md §8.1), emitted once per
// exec_command after a successful spawn.
type ExecCommandBeginEvent struct {
	CallID           string          `json:"call_id"`
	ProcessID        *string         `json:"process_id,omitempty"`
	TurnID           string          `json:"turn_id"`
	Command          []string        `json:"command"`
	Cwd              string          `json:"cwd"`
	ParsedCmd        json.RawMessage `json:"parsed_cmd"`
	Source           string          `json:"source"`
	InteractionInput *string         `json:"interaction_input,omitempty"`
}

// EventType returns "exec_command_begin".
func (*ExecCommandBeginEvent) EventType() string { return "exec_command_begin" }

// ExecCommandOutputDeltaEvent is exec_command_output_delta (docs/client.md §8.2): at most
// 8192 bytes of valid UTF-8 (unless no valid prefix exists), base64 on the
// wire. Stream is always "stdout" because the streams are merged.
type ExecCommandOutputDeltaEvent struct {
	CallID string `json:"call_id"`
	Stream string `json:"stream"`
	Chunk  []byte `json:"chunk"`
}

// EventType returns "exec_command_output_delta".
func (*ExecCommandOutputDeltaEvent) EventType() string { return "exec_command_output_delta" }

// ExecCommandEndEvent is exec_command_end (docs/client.md §8.3), emitted exactly once per
// process. On failure ExitCode is -1, Stderr holds the message and
// AggregatedOutput is the message or transcript + "\n" + message.
type ExecCommandEndEvent struct {
	CallID           string          `json:"call_id"`
	ProcessID        *string         `json:"process_id,omitempty"`
	TurnID           string          `json:"turn_id"`
	Command          []string        `json:"command"`
	Cwd              string          `json:"cwd"`
	ParsedCmd        json.RawMessage `json:"parsed_cmd"`
	Source           string          `json:"source"`
	InteractionInput *string         `json:"interaction_input,omitempty"`
	Stdout           string          `json:"stdout"`
	Stderr           string          `json:"stderr"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         int             `json:"exit_code"`
	Duration         time.Duration   `json:"duration"`
	FormattedOutput  string          `json:"formatted_output"`
}

// EventType returns "exec_command_end".
func (*ExecCommandEndEvent) EventType() string { return "exec_command_end" }

// TerminalInteractionEvent is terminal_interaction (docs/client.md §8.4), one per
// write_stdin call, empty polls included.
type TerminalInteractionEvent struct {
	CallID    string `json:"call_id"`
	ProcessID string `json:"process_id"`
	Stdin     string `json:"stdin"`
}

// EventType returns "terminal_interaction".
func (*TerminalInteractionEvent) EventType() string { return "terminal_interaction" }

// ModelWarningEvent is a model-visible warning, such as the process-count
// warning of docs/client.md §9. The caller records it for the model.
type ModelWarningEvent struct {
	Message string `json:"message"`
}

// EventType returns "warning".
func (*ModelWarningEvent) EventType() string { return "warning" }

// callInfo is what Begin and End share for one exec_command.
type callInfo struct {
	callID, processID, turnID, cwd string
	command                        []string
	parsedCmd                      json.RawMessage
}

func (c *callInfo) begin() *ExecCommandBeginEvent {
	pid := c.processID
	return &ExecCommandBeginEvent{
		CallID: c.callID, ProcessID: &pid, TurnID: c.turnID, Command: c.command,
		Cwd: c.cwd, ParsedCmd: c.parsedCmd, Source: SourceUnifiedExecStartup,
	}
}

// end builds the End event from the transcript (docs/client.md §8.3). A non-empty failure
// selects the failure variant.
func (c *callInfo) end(transcript string, exitCode *int, failure string, d time.Duration, policy TruncationPolicy) *ExecCommandEndEvent {
	pid := c.processID
	e := &ExecCommandEndEvent{
		CallID: c.callID, ProcessID: &pid, TurnID: c.turnID, Command: c.command,
		Cwd: c.cwd, ParsedCmd: c.parsedCmd, Source: SourceUnifiedExecStartup,
		Stdout: transcript, Duration: d, ExitCode: -1,
	}
	if failure != "" {
		e.Stderr = failure
		e.AggregatedOutput = failure
		if transcript != "" {
			e.AggregatedOutput = transcript + "\n" + failure
		}
		e.FormattedOutput = FormattedTruncate(e.AggregatedOutput, policy)
		return e
	}
	if exitCode != nil {
		e.ExitCode = *exitCode
	}
	e.AggregatedOutput = transcript
	e.FormattedOutput = FormattedTruncate(transcript, policy)
	return e
}

// defaultParsedCmd is the parsed_cmd used when the caller has no parser: one
// "unknown" command holding the shell-joined argv.
func defaultParsedCmd(argv []string) json.RawMessage {
	b, _ := json.Marshal([]map[string]string{{"type": "unknown", "cmd": ShellJoin(argv)}})
	return b
}
