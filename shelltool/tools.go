package shelltool

import (
	"bytes"
	"encoding/json"
	"time"
)

// ToolName is the one tool this server offers.
const ToolName = "shell"

// toolsList is the tools/list result, byte for byte the reference's
// (docs/shell-tool.md §3.2; testdata/tools_list.golden.json).
var toolsList = json.RawMessage(`{"tools":[{"name":"shell","description":"Runs a shell command and returns its output. You MUST provide the workdir as an absolute path.","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"ExecParams","type":"object","properties":{"command":{"description":"The bash string to execute.","type":"string"},"workdir":{"description":"The working directory to execute the command in. Must be an absolute path.","type":"string"},"timeout_ms":{"description":"The timeout for the command in milliseconds.","type":"integer","format":"uint64","minimum":0,"nullable":true},"login":{"description":"Launch Bash with -lc instead of -c: defaults to true.","type":"boolean","nullable":true}},"required":["command","workdir"]}}]}`)

// DefaultTimeout is the timeout of a call without timeout_ms (docs/shell-tool.md §3.4).
const DefaultTimeout = 10 * time.Second

// shellArgs are the arguments of the shell tool (decodeShellArgs).
type shellArgs struct {
	Command   string  `json:"command"`
	Workdir   string  `json:"workdir"`
	TimeoutMs *uint64 `json:"timeout_ms"`
	Login     *bool   `json:"login"`
}

// timeout is the call's limit: timeout_ms, or DefaultTimeout.
func (a *shellArgs) timeout() time.Duration {
	if a.TimeoutMs == nil {
		return DefaultTimeout
	}
	ms := *a.TimeoutMs
	if ms > uint64(1<<63-1)/uint64(time.Millisecond) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(ms) * time.Millisecond
}

// login reports whether Bash runs as a login shell (-lc): the default,
// also for null.
func (a *shellArgs) login() bool { return a.Login == nil || *a.Login }

// Result is what one shell call produced: Bash's exit code (124 on
// timeout, 128+N for a death by signal N), its combined output, its
// running time, and whether the timeout ended it.
type Result struct {
	ExitCode int
	Output   string
	Duration time.Duration
	TimedOut bool
}

// toolResult encodes r as the tools/call result of docs/shell-tool.md §3.3: one text
// item holding the JSON object, isError false. Nothing is HTML-escaped, as
// with the reference's encoder.
func toolResult(r Result) json.RawMessage {
	type duration struct {
		Secs  uint64 `json:"secs"`
		Nanos uint32 `json:"nanos"`
	}
	inner := struct {
		ExitCode int      `json:"exit_code"`
		Output   string   `json:"output"`
		Duration duration `json:"duration"`
		TimedOut bool     `json:"timed_out"`
	}{r.ExitCode, r.Output, duration{uint64(r.Duration / time.Second), uint32(r.Duration % time.Second)}, r.TimedOut}
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	outer := struct {
		Content []content `json:"content"`
		IsError bool      `json:"isError"`
	}{Content: []content{{Type: "text", Text: string(encodeJSON(inner))}}}
	return encodeJSON(outer)
}

// encodeJSON marshals v without HTML escaping and without the trailing
// newline of json.Encoder.
func encodeJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // only plain structs, strings and numbers: cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
