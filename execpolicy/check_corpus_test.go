package execpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checkCase is one recorded run of the reference's `codex execpolicy
// check` (Codex 0.169.0) in testdata/check. Stdout, Stderr and Code are
// what it printed; where its text embeds Rust- or Starlark-specific
// diagnostics, StdoutParts/StderrParts list the stable lines that ours
// must also contain, instead of an exact comparison, and Note says why.
type checkCase struct {
	Name        string   `json:"name"`
	Args        []string `json:"args"`
	Code        int      `json:"code"`
	Stdout      string   `json:"stdout"`
	Stderr      string   `json:"stderr"`
	StdoutParts []string `json:"stdoutParts,omitempty"`
	StderrParts []string `json:"stderrParts,omitempty"`
	Note        string   `json:"note,omitempty"`
}

const corpusDir = "testdata/check"

func readCorpus(t *testing.T) []checkCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []checkCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestCheckCorpus runs RunCheck on every recorded case and compares.
func TestCheckCorpus(t *testing.T) {
	cases := readCorpus(t)
	t.Chdir(corpusDir)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := RunCheck(c.Args, &stdout, &stderr)
			if code != c.Code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, c.Code, stderr.String())
			}
			compareOutput(t, "stdout", stdout.String(), c.Stdout, c.StdoutParts)
			compareOutput(t, "stderr", stderr.String(), c.Stderr, c.StderrParts)
		})
	}
	if len(cases) < 100 {
		t.Errorf("corpus has %d cases, expected at least 100", len(cases))
	}
}

func compareOutput(t *testing.T, what, got, want string, parts []string) {
	t.Helper()
	if parts == nil {
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", what, got, want)
		}
		return
	}
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, got)
		}
	}
}

// TestRecordCheckCorpus re-records the expected outputs by running the
// reference binary named by CODEX_REF_BIN (skipped without it), e.g.
// CODEX_REF_BIN=/tmp/codex-ref-0.169.0/node_modules/.bin/codex.
func TestRecordCheckCorpus(t *testing.T) {
	ref := os.Getenv("CODEX_REF_BIN")
	if ref == "" {
		t.Skip("CODEX_REF_BIN not set; the recorded corpus is used as is")
	}
	cases := readCorpus(t)
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "CODEX_HOME=" + home}
	for i := range cases {
		c := &cases[i]
		cmd := exec.Command(ref, append([]string{"execpolicy", "check"}, c.Args...)...)
		cmd.Dir, cmd.Env = corpusDir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		c.Code = cmd.ProcessState.ExitCode()
		c.Stdout, c.Stderr = stdout.String(), dropWarnings(stderr.String())
		c.StdoutParts, c.StderrParts, c.Note = stableParts(c)
		if c.StdoutParts != nil {
			c.Stdout = "" // the reference's help prose is not ours to keep
		}
	}
	data, err := json.MarshalIndent(cases, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corpusDir, "cases.json"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dropWarnings removes the reference's start-up warnings, which are about
// its own helper binaries, not about execpolicy.
func dropWarnings(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "WARNING: ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

var builtinErrorLine = regexp.MustCompile(`^\s*(?:starlark error: )?(error: (invalid |Missing parameter|Found |Type of parameter|Argument |No imports are available, you tried ` + "`[^`]*`" + `|Variable ` + "`[^`]*` not found" + `).*)$`)

var variableNotFound = regexp.MustCompile("^error: Variable `[^`]*` not found")

var noImports = regexp.MustCompile("^error: No imports are available, you tried `[^`]*`")

// stableParts picks what to compare where the reference's text is its own
// interpreter's: the help text (prose), and Starlark diagnostics (a Rust
// source snippet and caret lines), where only the header, the message of
// our builtins and its file:line:col location carry over.
func stableParts(c *checkCase) (stdoutParts, stderrParts []string, note string) {
	if strings.Contains(c.Stdout, "Usage: ") && c.Code == 0 {
		return []string{"Usage: " + CheckUsage + "\n", "-r, --rules <PATH>", "--pretty",
				"--resolve-host-executables", "-h, --help", "<COMMAND>..."}, nil,
			"help: the prose is the reference's own; the synopsis and the option names carry over"
	}
	if !strings.Contains(c.Stderr, "starlark error: ") {
		return nil, nil, ""
	}
	lines := strings.Split(c.Stderr, "\n")
	stderrParts = []string{lines[0] + "\n\nCaused by:\n    starlark error: "}
	note = "Starlark diagnostic: compared on the header only"
	for i, l := range lines {
		m := builtinErrorLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		msg := m[1]
		if imp := noImports.FindString(msg); imp != "" {
			msg = imp
		}
		if v := variableNotFound.FindString(msg); v != "" {
			msg = v // without the reference's spelling hint
			stderrParts = append(stderrParts, msg)
			note = "Starlark diagnostic: compared on the header and the message"
			break
		}
		stderrParts = append(stderrParts, msg)
		if i+1 < len(lines) && strings.Contains(lines[i+1], "--> ") {
			stderrParts = append(stderrParts, strings.TrimSpace(lines[i+1]))
		}
		note = "Starlark diagnostic: compared on the header, the builtin's message and its location"
		break
	}
	return nil, stderrParts, note
}
