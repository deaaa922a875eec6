package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Request is what Prepare confines: a command, or the helper of an fs
// call.
type Request struct {
	// Cwd is the request's working directory: the command's, or the
	// directory an fs call's helper runs in. It is the policy cwd when
	// the sandbox names none (NewContext).
	Cwd string
	// Env is the child's environment ("K=V"): its TMPDIR is the tmpdir
	// special path. It is never the server's own environment, unless that
	// is what the child gets.
	Env []string
	// Purpose is what the plan is for.
	Purpose Purpose
	// InheritPIDNamespace runs a command (PurposeProcess) in the server's
	// PID namespace (--linux-sandbox-pid-namespace inherit, Plan.InheritPIDNS);
	// false gives it its own, as always. The fs helper always gets its own.
	InheritPIDNamespace bool
}

// Prepare is the one preparation of a sandbox (docs/sandbox.md §3.1): it
// resolves sb (nil: none) for req and returns the plan the helper
// enforces, or nil when the command runs without one (no sandbox, or a
// plan that restricts nothing; for an fs call, a policy that does not need
// the helper: FSNeedsSandbox). A plan that must be enforced fails, wrapping
// ErrUnenforceable, where the kernel cannot (Available).
//
// A policy that cannot be enforced safely (a carve-out reached through a
// writable symlink, ErrSymlinkCrossing) gives a process a plan that only
// refuses, in the helper, as the reference reports it; an fs call gets the
// error. The caller holds the plan's host state with GuardPlan once the run
// is admitted.
func Prepare(sb *Sandbox, req Request) (*Plan, error) {
	if sb == nil {
		return nil, nil
	}
	if req.Purpose == PurposeFSHelper {
		if !FSNeedsSandbox(sb.Permissions) {
			return nil, nil
		}
		if err := Available(); err != nil {
			return nil, err
		}
	}
	tmp, _ := lookupEnv(req.Env, "TMPDIR")
	plan, err := Resolve(sb.Permissions, NewContext(sb, req.Cwd, tmp), req.Purpose)
	if errors.Is(err, ErrSymlinkCrossing) && req.Purpose == PurposeProcess {
		return &Plan{Refusal: err.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	if !plan.Enforces() {
		return nil, nil
	}
	if err := Available(); err != nil {
		return nil, err
	}
	if req.InheritPIDNamespace && req.Purpose == PurposeProcess && plan.Refusal == "" {
		plan.NewPIDNS, plan.InheritPIDNS = false, true
	}
	return &plan, nil
}

// lookupEnv returns the last value of key in env.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Context is what a profile is resolved against (docs/sandbox.md §3.1). All
// paths are absolute native paths; empty means unknown.
type Context struct {
	// Cwd is the policy cwd: it anchors relative deny globs, is the
	// default project root, and its writable root always protects .codex.
	Cwd string
	// WorkspaceRoots are what project_roots expands to; empty means
	// [Cwd].
	WorkspaceRoots []string
	// HomeDir anchors `~/` deny globs; without it they fail closed.
	HomeDir string
	// TmpDir is $TMPDIR as the command will see it (the tmpdir special
	// path); ignored unless absolute.
	TmpDir string
	// CommandCwd is the command's working directory (informational; the
	// caller fills Plan.Dir).
	CommandCwd string
	// Self is our own executable's path (SelfPath); its directory stays
	// readable under a restricted read policy (the helper and the fs helper
	// are our image). It is for policy rules only: re-execs use SelfExe.
	Self string
	// Euid is the server's effective uid; a user namespace is added to
	// the plan when it is not 0.
	Euid int
	// Secrets are the server's own files (MaskSecrets) that a restricted
	// file system always denies.
	Secrets []string
}

// NewContext builds the context of docs/sandbox.md §3.1 for a wire sandbox
// object (nil means none): the policy cwd is policyContext.cwd, else the
// sandbox cwd, else commandCwd; the workspace roots are
// policyContext.workspaceRoots, else workspaceRoots, else [policy cwd]; the
// home is userHomeDir, else the server's. tmpDir is the child's $TMPDIR.
// Self and Euid come from this process. Prepare is its caller outside
// tests.
func NewContext(s *Sandbox, commandCwd, tmpDir string) Context {
	ctx := Context{CommandCwd: commandCwd, TmpDir: tmpDir, Self: SelfPath(), Euid: os.Geteuid(), Secrets: maskedSecrets()}
	if s == nil {
		s = &Sandbox{}
	}
	ctx.Cwd = firstNonEmpty(policyCwd(s.PolicyContext), s.Cwd, commandCwd)
	switch {
	case s.PolicyContext != nil && len(s.PolicyContext.WorkspaceRoots) > 0:
		ctx.WorkspaceRoots = append([]string(nil), s.PolicyContext.WorkspaceRoots...)
	case len(s.WorkspaceRoots) > 0:
		ctx.WorkspaceRoots = append([]string(nil), s.WorkspaceRoots...)
	case ctx.Cwd != "":
		ctx.WorkspaceRoots = []string{ctx.Cwd}
	}
	ctx.HomeDir = s.UserHomeDir
	if ctx.HomeDir == "" {
		if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
			ctx.HomeDir = home
		}
	}
	return ctx
}

// policyCwd returns the policy context's cwd, if any.
func policyCwd(pc *PolicyContext) string {
	if pc == nil {
		return ""
	}
	return pc.Cwd
}

// firstNonEmpty returns the first non-empty string.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// projectRoots returns the workspace roots, defaulting to [Cwd].
func (c Context) projectRoots() []string {
	if len(c.WorkspaceRoots) > 0 {
		return c.WorkspaceRoots
	}
	if c.Cwd != "" {
		return []string{c.Cwd}
	}
	return nil
}

// Purpose says what a plan is for.
type Purpose int

// Plan purposes.
const (
	// PurposeProcess is a command started by process/start.
	PurposeProcess Purpose = iota
	// PurposeFSHelper is the sandboxed fs helper (docs/sandbox.md §4.7): the
	// network is always restricted, and our own binary and the minimal
	// platform set stay readable.
	PurposeFSHelper
)
