package escalate

import (
	"encoding/json"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

func TestResponseEncoding(t *testing.T) {
	cases := []struct {
		dec  Decision
		wire string
	}{
		{Decision{Action: Run}, `{"action":"Run"}`},
		{Decision{Action: Escalate}, `{"action":"Escalate"}`},
		{Decision{Action: Deny, Reason: ptr("Execution forbidden by policy")}, `{"action":{"Deny":{"reason":"Execution forbidden by policy"}}}`},
		{Decision{Action: Deny}, `{"action":{"Deny":{"reason":null}}}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(wireResponse{c.dec})
		if err != nil || string(b) != c.wire {
			t.Errorf("marshal %+v = %s, %v; want %s", c.dec, b, err, c.wire)
		}
		var back wireResponse
		if err := json.Unmarshal([]byte(c.wire), &back); err != nil {
			t.Fatalf("unmarshal %s: %v", c.wire, err)
		}
		if back.Decision.Action != c.dec.Action || (back.Decision.Reason == nil) != (c.dec.Reason == nil) ||
			(c.dec.Reason != nil && *back.Decision.Reason != *c.dec.Reason) {
			t.Errorf("unmarshal %s = %+v, want %+v", c.wire, back.Decision, c.dec)
		}
	}
}

func TestResponseDecodingEdgeCases(t *testing.T) {
	var r wireResponse
	if err := json.Unmarshal([]byte(`{"action":{"Deny":{}}}`), &r); err != nil || r.Decision.Action != Deny || r.Decision.Reason != nil {
		t.Errorf("Deny without reason: %+v, %v; want Deny, nil reason", r.Decision, err)
	}
	for _, bad := range []string{`{"action":"RunInSandbox"}`, `{"action":{"Allow":{}}}`, `{"action":3}`, `{}`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s decoded as %+v, want an error", bad, r.Decision)
		}
	}
}

func TestOtherMessagesEncoding(t *testing.T) {
	for v, want := range map[any]string{
		superExecResult{ExitCode: 42}:          `{"exit_code":42}`,
		&superExecMessage{FDs: []int{0, 1, 2}}: `{"fds":[0,1,2]}`,
		&wireRequest{File: "/bin/sh", Argv: []string{"sh", "-c", "exit 5"}, Workdir: "/tmp",
			Env: map[string]string{"PATH": "/usr/bin:/bin", "FOO": "bar"}}: `{"file":"/bin/sh","argv":["sh","-c","exit 5"],"workdir":"/tmp","env":{"FOO":"bar","PATH":"/usr/bin:/bin"}}`,
	} {
		if b, err := json.Marshal(v); err != nil || string(b) != want {
			t.Errorf("marshal %+v = %s, %v; want %s", v, b, err, want)
		}
	}
}

func TestRequestPaths(t *testing.T) {
	cases := []struct{ file, workdir, wantFile, wantDir string }{
		{"./prog.sh", "/work/proj", "/work/proj/prog.sh", "/work/proj"},
		{"prog.sh", "/work/proj/", "/work/proj/prog.sh", "/work/proj"},
		{"../bin/x", "/work/proj", "/work/bin/x", "/work/proj"},
		{"/usr/bin/ls", "/tmp", "/usr/bin/ls", "/tmp"},
		{"/usr//bin/./ls", "/tmp/../var", "/usr/bin/ls", "/var"},
	}
	for _, c := range cases {
		r, err := wireRequest{File: c.file, Workdir: c.workdir}.request()
		if err != nil || r.File != c.wantFile || r.Workdir != c.wantDir {
			t.Errorf("(%q in %q) = %q in %q, %v; want %q in %q", c.file, c.workdir, r.File, r.Workdir, err, c.wantFile, c.wantDir)
		}
		if r.Env == nil {
			t.Errorf("nil env map, want empty")
		}
	}
	if _, err := (wireRequest{Workdir: "/tmp"}).request(); err == nil {
		t.Error("empty file accepted")
	}
}

func TestTargets(t *testing.T) {
	got, err := targets(superExecMessage{FDs: []int{2, 0}}, []int{7, 8})
	if err != nil || len(got) != 3 || got[0] != 8 || got[1] != -1 || got[2] != 7 {
		t.Errorf("targets = %v, %v; want [8 -1 7]", got, err)
	}
	if _, err := targets(superExecMessage{FDs: []int{0, 1, 2}}, nil); err == nil ||
		!strings.HasPrefix(err.Error(), "mismatched number of fds in SuperExecMessage: ") {
		t.Errorf("mismatch: %v", err)
	}
	for _, fds := range [][]int{{1, 1}, {-1, 0}, {0, 5000}} {
		if _, err := targets(superExecMessage{FDs: fds}, []int{-1, -1}); err == nil {
			t.Errorf("targets %v accepted", fds)
		}
	}
}

func TestWrapperEnv(t *testing.T) {
	got := strings.Join(WrapperEnv("/opt/codex-execve-wrapper", 10), " ")
	want := "CODEX_ESCALATE_SOCKET=10 BASH_EXEC_WRAPPER=/opt/codex-execve-wrapper EXEC_WRAPPER=/opt/codex-execve-wrapper"
	if got != want {
		t.Errorf("WrapperEnv = %q, want %q", got, want)
	}
}
