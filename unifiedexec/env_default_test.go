package unifiedexec_test

import (
	"context"
	"strings"
	"testing"

	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/wire"
)

// leakName looks like a credential of the calling program. It is set in
// this process after the server started, so the server's own environment
// does not hold it: only the client can carry it to the child.
const leakName, leakValue = "UNIFIEDEXEC_LEAKCHECK_VAR", "s3cr3t-of-the-caller"

// childEnv runs `env` with o (Argv filled in) and returns its output.
func childEnv(ctx context.Context, t *testing.T, c *unifiedexec.Client, o unifiedexec.StartOptions) string {
	t.Helper()
	if o.Argv == nil {
		o.Argv = []string{"env"}
	}
	p, err := c.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	out, _, st, err := p.Communicate(ctx, nil)
	if err != nil || !st.Success() {
		t.Fatalf("env: %v %+v", err, st)
	}
	return string(out)
}

// A start with zero options never sends the caller's environment: the
// child gets the server's, as CommandExec and Run give it, and the
// caller's only with InheritEnv (docs/client.md §3.6).
func TestStartDefaultEnvIsNotTheCallers(t *testing.T) {
	ctx, c := supervised(t)
	t.Setenv(leakName, leakValue)

	env := childEnv(ctx, t, c, unifiedexec.StartOptions{})
	if strings.Contains(env, leakValue) {
		t.Errorf("StartOptions{} sent the caller's %s to the child:\n%s", leakName, env)
	}
	if !strings.Contains(env, "PATH=") {
		t.Errorf("StartOptions{} did not give the child the server's environment:\n%s", env)
	}
	env = childEnv(ctx, t, c, unifiedexec.StartOptions{Env: map[string]string{"ONLY": "this"}})
	if strings.Contains(env, leakValue) || !strings.Contains(env, "ONLY=this") || !strings.Contains(env, "PATH=") {
		t.Errorf("Env is not laid over the server's environment:\n%s", env)
	}
	env = childEnv(ctx, t, c, unifiedexec.StartOptions{InheritEnv: true, Env: map[string]string{"ONLY": "this"}})
	if !strings.Contains(env, leakName+"="+leakValue) || !strings.Contains(env, "ONLY=this") {
		t.Errorf("InheritEnv did not give the child the caller's environment with Env over it:\n%s", env)
	}
	env = childEnv(ctx, t, c, unifiedexec.StartOptions{
		Argv: []string{"/usr/bin/env"}, Env: map[string]string{"ONLY": "this"}, EnvPolicy: &wire.EnvPolicy{Inherit: "none"},
	})
	if strings.TrimSpace(env) != "ONLY=this" {
		t.Errorf("Inherit none did not give exactly Env:\n%s", env)
	}
	if _, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"env"}, InheritEnv: true, EnvPolicy: unifiedexec.ServerEnv()}); err == nil {
		t.Error("InheritEnv with an EnvPolicy was accepted")
	}

	res, err := c.CommandExec(ctx, unifiedexec.CommandExecRequest{Argv: []string{"env"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Stdout), leakValue) {
		t.Errorf("CommandExec sent the caller's %s", leakName)
	}
}
