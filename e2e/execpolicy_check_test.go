package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestExecpolicyCheckCorpus runs the built binary's `codex execpolicy
// check` on cases recorded from Codex 0.169.0 in execpolicy/testdata/check
// and compares stdout, stderr and exit code (on the stable parts only where
// the case lists them). The execpolicy package replays every case through
// the command's function; here a sample (every eighth case and the ones
// that exercise the wiring: help, usage errors, exit codes, stdout
// hygiene) checks the binary around it, since each run of a -race binary
// costs about half a second.
func TestExecpolicyCheckCorpus(t *testing.T) {
	t.Parallel()
	const dir = "../execpolicy/testdata/check"
	data, err := os.ReadFile(dir + "/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name, Stdout, Stderr string
		Args, StdoutParts    []string
		StderrParts          []string
		Code                 int
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	wiring := map[string]bool{"help": true, "help-short": true, "no-args": true, "rules-no-value": true,
		"missing-file": true, "bad-decision": true, "misc-print": true, "pretty": true, "host-listed": true,
		"unknown-option-first": true, "double-dash": true}
	for i, c := range cases {
		if i%8 != 0 && !wiring[c.Name] {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"execpolicy", "check"}, c.Args...)...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if code := cmd.ProcessState.ExitCode(); code != c.Code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, c.Code, stderr.String())
			}
			checkOutput(t, "stdout", stdout.String(), c.Stdout, c.StdoutParts)
			checkOutput(t, "stderr", stderr.String(), c.Stderr, c.StderrParts)
		})
	}
}

func checkOutput(t *testing.T, what, got, want string, parts []string) {
	t.Helper()
	if parts == nil && got != want {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("%s lacks %q:\n%s", what, p, got)
		}
	}
}
