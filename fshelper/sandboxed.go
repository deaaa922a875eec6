package fshelper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/codexec/codex/internal/reap"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// sandboxedCall runs one fs method in a sandboxed `--fs-helper` child when
// the request's sandbox must be enforced (docs/protocol.md §8.2-§8.3): its
// filesystem policy is restricted and does not grant full-disk write. It
// returns handled = false when the operation should run directly. The
// params are decoded once here, for their sandbox; the helper gets them
// as they came (helperRequestLine). env is
// the fs helper's environment (helperEnv), whose TMPDIR the sandbox's
// tmpdir is, as a command's is its own (sandbox.Prepare).
func sandboxedCall(ctx context.Context, method string, params json.RawMessage, env []string) (result any, handled bool, err error) {
	var p struct {
		Sandbox json.RawMessage `json:"sandbox"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil, false, nil // the method's own decoding reports it
	}
	plan, cwd, err := fsPlan(p.Sandbox, env)
	if err != nil || plan == nil {
		return nil, err != nil, err
	}
	// The missing protected names stay missing and watched, but the
	// placeholders other runs hold are shared for the operation and
	// spared by the watcher (sandbox.GuardPlan): removing one would
	// detach that run's mount.
	guard := sandbox.GuardPlan(plan, nil)
	defer guard.Release()
	res, err := runHelper(ctx, method, params, *plan, cwd, env)
	return res, true, err
}

// fsPlan resolves the sandbox member of an fs request: a nil plan when the
// operation should run directly (no sandbox, or one that is not restricted
// or grants full-disk write), the plan and the helper's cwd otherwise. The
// error is the method's wire error.
func fsPlan(raw json.RawMessage, env []string) (*sandbox.Plan, string, error) {
	sb, err := sandbox.ParseSandbox(raw)
	if err != nil {
		return nil, "", fsSandboxError(err)
	}
	// An fs call has no cwd of its own: its helper runs in the server's.
	cwd, _ := os.Getwd()
	plan, err := sandbox.Prepare(sb, sandbox.Request{Cwd: cwd, Env: env, Purpose: sandbox.PurposeFSHelper})
	if err != nil {
		return nil, "", fsSandboxError(err)
	}
	return plan, cwd, nil
}

// fsSandboxError maps a sandbox parse or resolution failure of an fs
// method to -32600 (docs/protocol.md §3).
func fsSandboxError(err error) error {
	switch {
	case errors.Is(err, sandbox.ErrUnenforceable):
		return wire.ErrFSSandboxUnenforceable()
	case errors.Is(err, sandbox.ErrInvalidPolicy):
		return rpc.Errorf(rpc.CodeInvalidRequest, "%s", err.Error())
	}
	return wire.ErrFSSandboxPrepare(err)
}

// helperEnv is the environment of the fs helper: only the path and temp
// variables of base, the environment the server gives its children
// (docs/protocol.md §8.3).
func helperEnv(base []string) []string {
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "TMPDIR", "TMP", "TEMP":
			env = append(env, kv)
		}
	}
	return env
}

// runHelper starts our binary as the sandbox helper in fs-helper mode,
// sends the request line and decodes the response line.
func runHelper(ctx context.Context, method string, params json.RawMessage, plan sandbox.Plan, cwd string, env []string) (any, error) {
	// The helper runs the fs operation in-process (plan.FSHelper); Argv
	// only describes it. It is our running image, never our path.
	plan.Argv = []string{sandbox.SelfExe, "--fs-helper"}
	plan.Dir, plan.Env = cwd, env
	w, err := sandbox.Wrap(plan)
	if err != nil {
		return nil, wire.ErrFSSandboxPrepare(err)
	}
	defer w.Close()
	req, err := helperRequestLine(method, params)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: %v", err)
	}
	cmd := w.Command(ctx)
	cmd.Dir = cwd
	var stdout helperOutput // pieces: a large result is not copied to grow
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), &stdout, &stderr
	// An owned child: an orphan reaper (reap) must leave its status to us.
	if err := reap.RunCmd(cmd); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, rpc.Errorf(rpc.CodeInternalError, "fs sandbox helper failed with status %s: %s", ee.ProcessState, strings.TrimSpace(stderr.String()))
		}
		return nil, rpc.Errorf(rpc.CodeInternalError, "fs sandbox helper failed: %v", err)
	}
	return decodeHelperStream(method, &stdout)
}

// helperRequestLine is the one line the helper reads: the operation and
// the params as they came, compacted (a frame may hold newlines), not
// decoded again. The helper runs the operation directly (runHelperRequest),
// so the params' sandbox member is ignored there: it is inside it.
func helperRequestLine(method string, params json.RawMessage) ([]byte, error) {
	op, err := json.Marshal(method)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(params) + len(op) + 25)
	b.WriteString(`{"operation":`)
	b.Write(op)
	b.WriteString(`,"params":`)
	if err := json.Compact(&b, params); err != nil {
		return nil, err
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}
