package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/sandbox"
)

// Built-in profile names.
const (
	ReadOnly         = ":read-only"
	Workspace        = ":workspace"
	DangerFullAccess = ":danger-full-access"
)

// Resolved is a profile resolved for one policy cwd.
type Resolved struct {
	// Disabled means no sandbox at all (":danger-full-access").
	Disabled bool
	// Profile is the sandbox profile otherwise.
	Profile sandbox.Profile
	// WorkspaceRoots are what `:workspace_roots` means; nil means the
	// policy cwd alone.
	WorkspaceRoots []string
}

// ResolveError is a request naming a profile that cannot be used; its
// text follows the Codex CLI's.
type ResolveError struct{ Msg string }

func (e *ResolveError) Error() string { return e.Msg }

func resolveErrorf(format string, args ...any) error {
	return &ResolveError{Msg: fmt.Sprintf(format, args...)}
}

// Resolve compiles the profile name for the policy cwd cwd: a built-in or
// a [permissions.<name>] table with its extends chain. A profile with a
// setting the executor cannot honour (a network narrowed without the
// network_proxy feature, a proxy setting it does not serve, a deny it
// cannot enforce) or a wrong network value fails with an *Error that
// names the key or its position.
//
// With `[features] network_proxy = true`, a profile whose network is
// enabled resolves to an enabled network with Proxy set, which the
// sandbox narrows to the command's own proxy (its only way out). The built-in :danger-full-access keeps
// the whole network and no sandbox (the Codex CLI gives it a proxy with
// nothing allowed: no network at all); :read-only and :workspace have no
// network.
func (p *Permissions) Resolve(name, cwd string) (Resolved, error) {
	return p.resolve(name, cwd, true)
}

// ResolveFilesystem is Resolve without the network's settings: what the
// profile grants and denies on the file system, which the protections a
// configured default keeps (Protections) and the re-opening check use
// even when a proxy setting makes the profile unusable to run a command.
func (p *Permissions) ResolveFilesystem(name, cwd string) (Resolved, error) {
	return p.resolve(name, cwd, false)
}

// lookup checks that name is a built-in or a defined profile, with the
// Codex CLI's texts.
func (p *Permissions) lookup(name string) error {
	switch {
	case name == ReadOnly || name == Workspace || name == DangerFullAccess:
		return nil
	case strings.HasPrefix(name, ":"):
		return resolveErrorf("default_permissions refers to unknown built-in profile `%s`", name)
	case p == nil || !p.hasTable:
		return resolveErrorf("default_permissions requires a `[permissions]` table")
	}
	if _, ok := p.profiles[name]; !ok {
		return resolveErrorf("default_permissions refers to undefined profile `%s`", name)
	}
	return nil
}

func (p *Permissions) resolve(name, cwd string, withNetwork bool) (Resolved, error) {
	switch name {
	case ReadOnly:
		return Resolved{Profile: sandbox.ReadOnly(false)}, nil
	case Workspace:
		return Resolved{Profile: sandbox.WorkspaceWrite(nil, false, false, false)}, nil
	case DangerFullAccess:
		return Resolved{Disabled: true}, nil
	}
	if err := p.lookup(name); err != nil {
		return Resolved{}, err
	}
	base, prof, err := p.flatten(name)
	if err != nil {
		return Resolved{}, err
	}
	var proxy *netproxy.Settings
	if withNetwork {
		if proxy, err = p.networkOf(prof); err != nil {
			return Resolved{}, err
		}
	}
	c, err := p.compile(prof, cwd)
	if err != nil {
		return Resolved{}, err
	}
	entries := c.entries
	network := sandbox.NetworkRestricted
	if base != "" {
		b, _ := p.Resolve(base, cwd)
		entries = overlay(b.Profile.Entries, c.entries)
		network = b.Profile.Network
	}
	if prof.network != nil {
		network = sandbox.NetworkRestricted
		if c.network {
			network = sandbox.NetworkEnabled
		}
	}
	if proxy != nil {
		// The network is on, narrowed to the command's own proxy
		// (sandbox.Profile.Proxy): a proxied command has no other way out.
		network = sandbox.NetworkEnabled
	}
	out := sandbox.Managed(network, entries...)
	out.GlobScanMaxDepth = c.depth
	out.Proxy = proxy
	return Resolved{Profile: out, WorkspaceRoots: c.roots}, nil
}

// overlay appends child entries to base ones, dropping the base entries
// a child entry names again: the child's access for that path wins.
func overlay(base, child []sandbox.Entry) []sandbox.Entry {
	out := make([]sandbox.Entry, 0, len(base)+len(child))
	for _, b := range base {
		if !namedIn(b.Path, child) {
			out = append(out, b)
		}
	}
	return append(out, child...)
}

func namedIn(path sandbox.EntryPath, entries []sandbox.Entry) bool {
	for _, e := range entries {
		if e.Path == path {
			return true
		}
	}
	return false
}

// flatten follows name's extends chain and merges it, ancestors first. It
// returns the built-in profile at the chain's root ("" if none).
func (p *Permissions) flatten(name string) (string, *profileTOML, error) {
	chain := []string{name}
	base := ""
	for cur := name; p.profiles[cur].extends != ""; {
		next := p.profiles[cur].extends
		if next == ReadOnly || next == Workspace {
			base = next
			break
		}
		if strings.HasPrefix(next, ":") {
			return "", nil, p.errf("permissions."+quoteKey(cur)+".extends", "permissions profile `%s` cannot extend unsupported built-in profile `%s`", cur, next)
		}
		if _, ok := p.profiles[next]; !ok {
			return "", nil, p.errf("permissions."+quoteKey(cur)+".extends", "permissions profile `%s` extends undefined profile `%s`", cur, next)
		}
		for _, seen := range chain {
			if seen == next {
				return "", nil, p.errf("permissions."+quoteKey(cur)+".extends", "permissions profile inheritance cycle detected: %s -> %s", strings.Join(chain, " -> "), next)
			}
		}
		chain = append(chain, next)
		cur = next
	}
	prof := p.profiles[chain[len(chain)-1]]
	for i := len(chain) - 2; i >= 0; i-- {
		prof = merge(prof, p.profiles[chain[i]])
	}
	return base, prof, nil
}

// Protections are the configured default profile's deny-read entries and
// its glob_scan_max_depth, compiled for the policy cwd cwd. A request
// that brings its own profile or sandbox policy keeps them: a one-off
// override must not drop read protections the operator configured. The
// entries are pinned (pinProtection), so they deny the same paths
// whatever workspace roots or $TMPDIR the request's sandbox has. An error
// (a deny glob that cannot be anchored at cwd) must refuse the request.
func (p *Permissions) Protections(cwd string) ([]sandbox.Entry, *int, error) {
	name := p.DefaultName()
	if p == nil || !p.hasTable || strings.HasPrefix(name, ":") {
		return nil, nil, nil
	}
	r, err := p.ResolveFilesystem(name, cwd)
	if err != nil {
		return nil, nil, err
	}
	var deny []sandbox.Entry
	for _, e := range r.Profile.Entries {
		if e.Access == sandbox.AccessDeny {
			deny = append(deny, p.pinProtection(e, r.WorkspaceRoots)...)
		}
	}
	if len(deny) == 0 {
		return nil, nil, nil
	}
	return deny, r.Profile.GlobScanMaxDepth, nil
}

// validateCwd is the policy cwd profiles are compiled for at load: any
// folder but "/", under which a workspace deny glob cannot be anchored.
const validateCwd = "/codex-validate/cwd"

// validate compiles every profile once. What the Codex CLI also refuses
// in the default profile stops the load, as it stops the CLI (which
// compiles only that one). What it accepts never does: a profile that
// cannot be compiled, or holds a setting this executor cannot honour, is
// reported once as a warning naming the key, and the requests that use it
// are refused with the same error (Resolve).
func (p *Permissions) validate() error {
	p.unusable = map[string]bool{}
	def := p.DefaultName()
	var errs []string              // distinct errors, in order
	names := map[string][]string{} // error → the profiles it makes unusable
	for _, name := range sortedKeys(p.profiles) {
		base, prof, err := p.flatten(name)
		if err == nil {
			if _, err = p.networkOf(prof); err == nil {
				_, err = p.compile(prof, validateCwd)
			}
		}
		if err == nil {
			p.warnProfile(name, base, prof)
			continue
		}
		if ce, ok := err.(*Error); name == def && (!ok || !ce.Unsupported) {
			return err
		}
		p.unusable[name] = true
		if names[err.Error()] == nil {
			errs = append(errs, err.Error())
		}
		names[err.Error()] = append(names[err.Error()], name)
	}
	for _, e := range errs {
		w := fmt.Sprintf("%s; a command/exec that uses profile `%s` is refused", e, strings.Join(names[e], "` or `"))
		switch _, err := p.ResolveFilesystem(def, validateCwd); {
		case slices.Contains(names[e], def) && err != nil:
			w += fmt.Sprintf("; `%s` is the default_permissions, whose denies every command/exec keeps: every command/exec is refused", def)
		case slices.Contains(names[e], def):
			w += fmt.Sprintf("; `%s` is the default_permissions: every command/exec without permissionProfile or sandboxPolicy uses it", def)
		}
		p.Warnings = append(p.Warnings, w)
	}
	if err := p.lookup(def); err != nil {
		return p.errf("default_permissions", "%s", err.(*ResolveError).Msg)
	}
	return nil
}

// Unusable reports a profile that validate found unusable (and warned
// about).
func (p *Permissions) Unusable(name string) bool { return p != nil && p.unusable[name] }

// warnProfile records what in a usable profile has no effect or may
// surprise: denies that extends drops, no filesystem entries, unknown
// special paths, proxy settings under a network that is off.
func (p *Permissions) warnProfile(name, base string, prof *profileTOML) {
	p.warnDroppedDenies(name)
	if base == "" && len(prof.fs) == 0 {
		p.warnf("permissions."+quoteKey(name), "defines no filesystem entries: a command under it can read nothing")
	}
	for k := range prof.fs {
		if _, known := specialKinds[k]; strings.HasPrefix(k, ":") && !known {
			p.warnf("permissions."+quoteKey(name)+".filesystem."+quoteKey(k), "unknown special path, ignored")
		}
	}
	p.warnNetwork(name, prof)
}
