package escalate

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
)

// The messages of the escalate stream socket (docs/shell-tool.md §6.2), with their wire
// encodings.

// wireRequest is EscalateRequest, wrapper → server.
type wireRequest struct {
	File    string            `json:"file"`
	Argv    []string          `json:"argv"`
	Workdir string            `json:"workdir"`
	Env     map[string]string `json:"env"`
}

// errEmptyFile refuses a request without a program (seen from a patched
// Bash whose wrapper patch loses the path).
var errEmptyFile = errors.New("empty program path")

// request converts the wire form into a Request: Workdir absolute and
// clean (a relative one against the server's cwd, the only one known),
// File absolute and clean, a relative File resolved against Workdir (the
// exec's own directory, not the server's). Symlinks are not followed.
func (w wireRequest) request() (Request, error) {
	if w.File == "" {
		return Request{}, errEmptyFile
	}
	dir, err := filepath.Abs(w.Workdir)
	if err != nil {
		return Request{}, fmt.Errorf("workdir %q: %w", w.Workdir, err)
	}
	file := w.File
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	env := w.Env
	if env == nil {
		env = map[string]string{}
	}
	return Request{File: filepath.Clean(file), Argv: w.Argv, Workdir: dir, Env: env}, nil
}

// wireResponse is EscalateResponse, server → wrapper:
// {"action":"Run"}, {"action":"Escalate"} or
// {"action":{"Deny":{"reason":string|null}}}.
type wireResponse struct{ Decision Decision }

type denyBody struct {
	Reason *string `json:"reason"`
}

type wireAction struct {
	Deny *denyBody `json:"Deny"`
}

func (r wireResponse) MarshalJSON() ([]byte, error) {
	var action any
	switch r.Decision.Action {
	case Run:
		action = "Run"
	case Escalate:
		action = "Escalate"
	case Deny:
		action = wireAction{Deny: &denyBody{Reason: r.Decision.Reason}}
	default:
		return nil, fmt.Errorf("unknown action %d", r.Decision.Action)
	}
	return json.Marshal(struct {
		Action any `json:"action"`
	}{action})
}

func (r *wireResponse) UnmarshalJSON(b []byte) error {
	var outer struct {
		Action json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(b, &outer); err != nil {
		return err
	}
	var name string
	if json.Unmarshal(outer.Action, &name) == nil {
		switch name {
		case "Run":
			r.Decision = Decision{Action: Run}
			return nil
		case "Escalate":
			r.Decision = Decision{Action: Escalate}
			return nil
		}
		return fmt.Errorf("unknown action %q", name)
	}
	var a wireAction
	if err := json.Unmarshal(outer.Action, &a); err != nil || a.Deny == nil {
		return fmt.Errorf("unknown action %s", outer.Action)
	}
	r.Decision = Decision{Action: Deny, Reason: a.Deny.Reason}
	return nil
}

// superExecMessage is SuperExecMessage, wrapper → server after Escalate:
// the target descriptor number of each descriptor attached, in order.
type superExecMessage struct {
	FDs []int `json:"fds"`
}

// superExecResult is SuperExecResult, server → wrapper: the escalated
// program's exit code (128+N for a death by signal N).
type superExecResult struct {
	ExitCode int64 `json:"exit_code"`
}

// maxTarget bounds the target descriptor numbers we place in a child.
const maxTarget = 1023

// targets pairs the received descriptors with their target numbers: the
// result's index i is the descriptor for i in the child (-1 where none).
// On error it closes fds.
func targets(m superExecMessage, fds []int) ([]int, error) {
	if len(fds) != len(m.FDs) {
		closeFDs(fds)
		return nil, fmt.Errorf("mismatched number of fds in SuperExecMessage: %d received for %d targets", len(fds), len(m.FDs))
	}
	size := 0
	for _, t := range m.FDs {
		if t < 0 || t > maxTarget {
			closeFDs(fds)
			return nil, fmt.Errorf("invalid target fd %d in SuperExecMessage", t)
		}
		size = max(size, t+1)
	}
	out := make([]int, size)
	for i := range out {
		out[i] = -1
	}
	seen := make([]bool, size)
	for i, t := range m.FDs {
		if seen[t] {
			closeFDs(fds)
			return nil, fmt.Errorf("duplicate target fd %d in SuperExecMessage", t)
		}
		seen[t] = true
		out[t] = fds[i]
	}
	return out, nil
}
