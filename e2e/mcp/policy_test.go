package mcp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// elicitParams is the params object of an elicitation/create request.
type elicitParams struct {
	Meta            map[string]json.RawMessage `json:"_meta"`
	Message         string                     `json:"message"`
	RequestedSchema map[string]any             `json:"requestedSchema"`
}

const wantElicitSchema = `{"type":"object","title":"Execution Permission Request",
  "properties":{"reason":{"type":"string","description":"Optional reason for allowing or denying execution"}}}`

// checkElicitation checks one elicitation request against docs/shell-tool.md §7.6 and
// returns its message.
func checkElicitation(t *testing.T, m msg) string {
	t.Helper()
	var p elicitParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatalf("elicitation params: %v: %s", err, m.Raw)
	}
	if string(p.Meta["progressToken"]) != string(m.ID) {
		t.Errorf("_meta.progressToken = %s, want the request id %s", p.Meta["progressToken"], m.ID)
	}
	want := decode(t, []byte(wantElicitSchema))
	if got, _ := json.Marshal(p.RequestedSchema); string(got) != mustJSON(t, want) {
		t.Errorf("requestedSchema = %s, want %s", got, mustJSON(t, want))
	}
	return p.Message
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docs/shell-tool.md §9.4: a prompt rule for git init under a read-only sandbox asks once;
// accepted, git runs escalated (it can write the read-only workspace).
func TestPromptAcceptedRunsEscalated(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	git, _ = filepath.EvalSymlinks(git)
	s := start(t, opts{})
	out := s.call(s.shellArgs("git init ."), answer("accept"))
	if len(out.elicits) != 1 {
		t.Fatalf("%d elicitations, want 1", len(out.elicits))
	}
	msgText := checkElicitation(t, out.elicits[0])
	if want := "Allow agent to run `" + git + " init .` in `" + s.ws + "`?"; msgText != want {
		t.Errorf("message = %q, want %q", msgText, want)
	}
	if want := "Initialized empty Git repository in " + s.ws + "/.git/"; !strings.Contains(out.res.Output, want) {
		t.Errorf("output %q does not contain %q", out.res.Output, want)
	}
	if out.res.ExitCode != 0 {
		t.Errorf("exit_code = %d, want 0", out.res.ExitCode)
	}
	if st, err := os.Stat(filepath.Join(s.ws, ".git")); err != nil || !st.IsDir() {
		t.Errorf(".git was not created: %v", err)
	}
}

// docs/shell-tool.md §9.5: a forbidden program is denied with exit 1; the script goes on.
func TestForbiddenDenied(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	writeFile(t, filepath.Join(s.ws, "x"), "keep", 0o644)
	out := s.run("rm -f x; echo rm=$?")
	if !strings.Contains(out.res.Output, "Execution denied: Execution forbidden by policy\n") {
		t.Errorf("output %q lacks the denial", out.res.Output)
	}
	if !strings.Contains(out.res.Output, "rm=1\n") || out.res.ExitCode != 0 {
		t.Errorf("result %+v, want rm=1 and exit_code 0", out.res)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "x")); err != nil {
		t.Errorf("x was removed: %v", err)
	}
	if len(out.elicits) != 0 {
		t.Errorf("a forbidden command asked the user")
	}
}

// docs/shell-tool.md §9.6: declined and cancelled prompts deny with their exact messages; an
// error answer to the elicitation denies too (exit 1, nothing done).
func TestPromptDeclineCancelError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ans  answerFunc
		want string // exact denial line ("" = any)
	}{
		{"decline", answer("decline"), "Execution denied: User declined execution\n"},
		{"cancel", answer("cancel"), "Execution denied: User cancelled execution\n"},
		{"error", func(m msg) string {
			return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"client failure"}}`
		}, ""},
	}
	s := start(t, opts{})
	for _, c := range cases {
		dir := filepath.Join(s.ws, "made-"+c.name)
		out := s.call(s.shellArgs("mkdir "+dir+"; echo mkdir=$?"), c.ans)
		if len(out.elicits) != 1 {
			t.Errorf("%s: %d elicitations, want 1", c.name, len(out.elicits))
		} else if m := checkElicitation(t, out.elicits[0]); !strings.HasPrefix(m, "Allow agent to run `") ||
			!strings.Contains(m, "mkdir "+dir+"` in `"+s.ws+"`?") {
			t.Errorf("%s: message %q", c.name, m)
		}
		if c.want != "" && !strings.Contains(out.res.Output, c.want) {
			t.Errorf("%s: output %q lacks %q", c.name, out.res.Output, c.want)
		}
		if !strings.Contains(out.res.Output, "mkdir=1\n") {
			t.Errorf("%s: output %q, want mkdir=1", c.name, out.res.Output)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: %s was created", c.name, dir)
		}
	}
}

// Unmatched programs run inside the sandbox (read-only here: a write
// outside fails), allowed ones escalated (the same write succeeds).
func TestUnmatchedSandboxedAllowedEscalated(t *testing.T) {
	t.Parallel()
	s := start(t, opts{})
	in := filepath.Join(s.outside, "sandboxed")
	out := s.run("cp /etc/hostname " + in + "; echo cp=$?")
	if strings.Contains(out.res.Output, "cp=0") {
		t.Errorf("unmatched cp wrote outside the read-only sandbox: %q", out.res.Output)
	}
	if _, err := os.Stat(in); err == nil {
		t.Errorf("%s exists", in)
	}
	esc := filepath.Join(s.outside, "escalated")
	out = s.run("touch " + esc + "; echo touch=$?")
	if !strings.Contains(out.res.Output, "touch=0\n") {
		t.Errorf("allowed touch: %q", out.res.Output)
	}
	if _, err := os.Stat(esc); err != nil {
		t.Errorf("allowed touch did not run outside the sandbox: %v", err)
	}
}
