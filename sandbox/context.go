package sandbox

import (
	"os"
	"path/filepath"
)

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
// home is userHomeDir, else the server's. tmpDir is the command's $TMPDIR.
// Self and Euid come from this process.
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
