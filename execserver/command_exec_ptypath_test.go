package execserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// TestCommandExecPTYLookupMessages: the texts of a failed unsandboxed PTY
// program lookup, as the reference words them (probed on 0.169.0).
func TestCommandExecPTYLookupMessages(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for _, p := range []string{filepath.Join(bin, "adir"), filepath.Join(bin, "sub"), filepath.Join(dir, "d")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, mode := range map[string]os.FileMode{"bin/noexec": 0o644, "bin/sub/prog": 0o755, "d/noexec": 0o644, "bin/ok": 0o755} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		prog string
		env  []string
		want string
	}{
		{"nosuchprog", []string{"PATH=/x:/y"}, "Unable to spawn nosuchprog because:\nNo viable candidates found in PATH \"/x:/y\""},
		{"nosuchprog", nil, "Unable to spawn nosuchprog because:\nUnable to resolve the PATH"},
		{"nosuchprog", []string{"PATH="}, "Unable to spawn nosuchprog because:\nNo viable candidates found in PATH \"\""},
		{"noexec", []string{"PATH=" + bin}, "Unable to spawn noexec because:\n" + bin + "/noexec exists but is not executable.\nNo viable candidates found in PATH \"" + bin + "\""},
		{"adir", []string{"PATH=" + bin}, "Unable to spawn adir because:\n" + bin + "/adir exists but is a directory.\nNo viable candidates found in PATH \"" + bin + "\""},
		{"sub/nope", []string{"PATH=" + bin + ":rel:"}, "Unable to spawn sub/nope because:\nNo viable candidates found in PATH \"" + bin + ":rel:\""},
		{"nosuch", []string{"PATH=/a\"b\\c\u00e9\t"}, "Unable to spawn nosuch because:\nNo viable candidates found in PATH \"/a\\\"b\\\\c\u00e9\\t\""},
		{"./nosuch", nil, "Unable to spawn " + dir + "/./nosuch because it does not exist"},
		{"./d", nil, "Unable to spawn " + dir + "/./d because it is a directory"},
		{"./d/noexec", nil, "Unable to spawn " + dir + "/./d/noexec because it is not executable"},
		{"sub/prog", []string{"PATH=" + bin}, ""},
		{"ok", []string{"PATH=/x:" + bin}, ""},
		{"ok", []string{"PATH=bin"}, ""}, // a relative entry is joined onto the cwd
		{"/no/such/abs", nil, ""},        // the start answers the OS error
	} {
		got := ""
		if err := checkPTYProgram(c.prog, dir, c.env); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s with %q:\n got %q\nwant %q", c.prog, c.env, got, c.want)
		}
	}
}

// TestCommandExecPTYMissingProgram: over the protocol, an unsandboxed PTY
// start of a program not in PATH answers the lookup failure; an absolute
// missing program and a pipe start answer the OS error.
func TestCommandExecPTYMissingProgram(t *testing.T) {
	srv := newTestServer(t, SessionConfig{BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	tc := srv.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"command": []string{"nosuchprog"}, "tty": true, "processId": "p1"},
			"failed to spawn command: Unable to spawn nosuchprog because:\nNo viable candidates found in PATH \"/usr/bin:/bin\""},
		{map[string]any{"command": []string{"nosuchprog"}, "tty": true, "processId": "p2", "env": map[string]any{"PATH": "/x:/y"}},
			"failed to spawn command: Unable to spawn nosuchprog because:\nNo viable candidates found in PATH \"/x:/y\""},
		{map[string]any{"command": []string{"nosuchprog"}, "tty": true, "processId": "p3", "env": map[string]any{"PATH": nil}},
			"failed to spawn command: Unable to spawn nosuchprog because:\nUnable to resolve the PATH"},
		{map[string]any{"command": []string{"/nosuch/prog"}, "tty": true, "processId": "p4"},
			"failed to spawn command: No such file or directory (os error 2)"},
		{map[string]any{"command": []string{"nosuchprog"}, "processId": "p5"},
			"failed to spawn command: No such file or directory (os error 2)"},
	} {
		c.params["sandboxPolicy"] = unsandboxedPolicy
		err := tc.c.Call(ctx, wire.MethodCommandExec, c.params, nil)
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeInternalError || re.Message != c.want {
			t.Errorf("%v: got %v, want -32603 %q", c.params["command"], err, c.want)
		}
	}
	// The failed start released its id: the same id runs a real command.
	var res wire.CommandExecResult
	tc.call(wire.MethodCommandExec, map[string]any{"command": []string{"true"}, "tty": true, "processId": "p1", "sandboxPolicy": unsandboxedPolicy}, &res)
	if res.ExitCode != 0 {
		t.Fatalf("true in a PTY: %+v", res)
	}
}
