package sandbox

import (
	"path/filepath"
	"slices"

	"github.com/codexec/codex/netproxy"
)

// Resolve compiles a profile and a context into the plan the helper
// enforces (docs/sandbox.md §3). It is a pure function apart from the stats,
// symlink reads and directory walks needed to look at the filesystem; it
// never changes anything. The plan's command fields (Argv, Arg0, Dir, Env)
// are left for the caller.
//
// The result follows the mode matrix of docs/sandbox.md §3.7: external
// profiles, and unrestricted ones with the network on, enforce nothing (no
// sandbox was asked for); every other profile is a sandbox, with the
// kernel layer (kernelLayer) in new mount and PID namespaces, a network
// namespace when the network is restricted and a user namespace when not
// root. A profile whose network is on and Proxy set is proxied, whatever
// its type: a network namespace, the proxied filter and Plan.Proxy
// (docs/sandbox.md §4.9); per-path Unix-socket allow entries are refused
// (an *InvalidPolicyError). Unrestricted ones with the network off add the network filter;
// restricted ones add their mount layer (read-only root, writable roots
// with carve-outs, deny masks, watched missing metadata), Landlock rules
// and the seccomp mode of docs/sandbox.md §4.4. For PurposeFSHelper the
// network is always restricted and, under a restricted read policy, the
// minimal platform set stays readable (docs/sandbox.md §4.7).
//
// Paths listed in WritableRoots[].ReadOnly and DenyPaths exist; missing
// protected paths go to ProtectedCreate instead. Errors: a
// *SymlinkCrossingError when a carve-out or deny path crosses a writable
// symlink, a *PrepareError when deny globs cannot be expanded.
func Resolve(p Profile, ctx Context, purpose Purpose) (Plan, error) {
	plan := Plan{FSHelper: purpose == PurposeFSHelper}
	network := p.FullNetwork() && purpose != PurposeFSHelper
	proxied := network && p.Proxy != nil
	if proxied {
		if err := checkUnixSockets(p.Proxy); err != nil {
			return Plan{}, err
		}
	}
	switch p.mode() {
	case fsExternal, fsUnrestricted:
		if !proxied && (network || p.mode() == fsExternal) {
			return plan, nil // no sandbox was asked for (external, danger-full-access)
		}
		plan.ReadOnlyFiles = selfReadOnly(&plan, ctx.Self)
		plan.kernelLayer(network && !proxied, ctx.Euid)
		if proxied {
			plan.proxied(p.Proxy)
			return plan, nil
		}
		plan.Seccomp = SeccompRestricted
		plan.NetworkDisabled = true
		return plan, nil
	}
	fullWrite := p.FullDiskWrite()
	r := &resolver{p: p, ctx: ctx, entries: resolveEntries(p, ctx)}
	if !fullWrite {
		if err := r.collectRoots(); err != nil {
			return Plan{}, err
		}
		if err := r.carveOuts(); err != nil {
			return Plan{}, err
		}
	}
	deny, matches, err := r.denyList()
	if err != nil {
		return Plan{}, err
	}
	plan.DenyPaths, plan.DenyMatches = deny, matches
	plan.ProtectedCreate = r.protect
	sortByDepth(plan.ProtectedCreate)
	plan.Placeholders = r.placeholders
	sortByDepth(plan.Placeholders)

	var rootWritable bool
	plan.WritableRoots, rootWritable = r.writableRoots(plan.DenyPaths)
	plan.RecordIdentities()
	plan.ReadOnlyRoot = !fullWrite && !rootWritable

	readable, fullBase := r.readableRoots(purpose)
	if !fullBase {
		plan.RestrictedRead = true
		plan.ReadableRoots = readable
	}
	if plan.ReadOnlyRoot {
		plan.Landlock = landlockRules(plan.WritableRoots, readable, fullBase)
	}

	plan.ReadOnlyFiles = selfReadOnly(&plan, ctx.Self)
	plan.kernelLayer(network && !proxied, ctx.Euid)
	plan.Seccomp = seccompMode(network, fullWrite)
	plan.NetworkDisabled = !network
	if proxied {
		plan.proxied(p.Proxy)
	}
	return plan, nil
}

// proxied makes p a proxied plan for settings s (docs/sandbox.md §4.9): a
// network namespace of its own, the proxied filter and the routes.
func (p *Plan) proxied(s *netproxy.Settings) {
	p.NewNetNS = true
	p.NetworkDisabled = false
	p.Seccomp = SeccompProxied
	if s.DangerouslyAllowAllUnixSockets {
		p.Seccomp = SeccompProxiedUnix
	}
	p.Proxy = proxyPlanFor(s)
}

// kernelLayer gives a sandboxed plan the namespaces every sandboxed
// command gets, whatever its profile, full write included (docs/sandbox.md
// §4.3): mount and PID namespaces, so that the helper hides the cgroup
// filesystems, makes the kernel's knobs read-only, mounts a /proc and a
// small /dev of the command's own and stays PID 1 of everything the
// command starts; a network namespace when the network is off; a user
// namespace when the server is not root. The helper drops every
// capability in every plan. Wrap adds the IPC and cgroup namespaces.
func (p *Plan) kernelLayer(network bool, euid int) {
	p.NewMountNS = true
	p.NewPIDNS = true
	p.NewNetNS = !network
	p.NewUserNS = euid != 0
}

// denyList returns the plan's DenyPaths (the deny paths and the existing
// secrets) and DenyMatches (the expanded deny globs, less what DenyPaths
// holds), each deduplicated and sorted by depth.
func (r *resolver) denyList() (paths, matches []string, err error) {
	deny, err := r.denyPaths()
	if err != nil {
		return nil, nil, err
	}
	globbed, err := expandDenyGlobs(r.p, r.ctx, r.globContext())
	if err != nil {
		return nil, nil, err
	}
	paths = dedup(append(deny, existing(r.ctx.Secrets)...))
	matches = slices.DeleteFunc(dedup(globbed), func(m string) bool { return slices.Contains(paths, m) })
	sortByDepth(paths)
	sortByDepth(matches)
	return paths, matches, nil
}

// globContext returns what deny-glob expansion must respect: the anchors
// (writable roots, the readable paths, the policy cwd, the command's cwd
// and our own folder) and the plantable folders (the writable roots but
// "/", the policy cwd, the command's cwd and the workspace roots), each
// as given and resolved.
func (r *resolver) globContext() globContext {
	var gc globContext
	for _, w := range r.writable {
		if w != "/" {
			gc.plantable = append(gc.plantable, w)
		}
	}
	for _, p := range append([]string{r.ctx.Cwd, r.ctx.CommandCwd}, r.ctx.WorkspaceRoots...) {
		if filepath.IsAbs(p) {
			gc.plantable = append(gc.plantable, filepath.Clean(p), canonical(p))
		}
	}
	gc.anchors = append(gc.anchors, r.writable...)
	for _, rt := range r.roots {
		gc.anchors = append(gc.anchors, rt.path)
	}
	for _, e := range r.entries {
		if e.access.CanRead() {
			gc.anchors = append(gc.anchors, normalizeKeepLink(r.remap(e.path)))
		}
	}
	for _, p := range []string{r.ctx.Cwd, r.ctx.CommandCwd, filepath.Dir(r.ctx.Self)} {
		if filepath.IsAbs(p) {
			gc.anchors = append(gc.anchors, filepath.Clean(p), canonical(p))
		}
	}
	return gc
}

// writableRoots returns the plan's WritableRoots, sorted by depth, each with
// its read-only carve-outs except those in deny (masked instead). "/" is
// left out when it has no carve-out; rootWritable reports that "/" is a
// writable root.
func (r *resolver) writableRoots(deny []string) (roots []WritableRoot, rootWritable bool) {
	for _, rt := range r.roots {
		// A carve-out that is also denied is masked, not bound read-only.
		ro := slices.DeleteFunc(dedup(rt.readOnly), func(p string) bool { return slices.Contains(deny, p) })
		sortByDepth(ro)
		if rt.path == "/" {
			rootWritable = true
			if len(ro) == 0 {
				continue // "/" is already writable: nothing to re-bind
			}
		}
		roots = append(roots, WritableRoot{Path: rt.path, ReadOnly: ro})
	}
	slices.SortStableFunc(roots, func(a, b WritableRoot) int { return depth(a.Path) - depth(b.Path) })
	return roots, rootWritable
}

// landlockRules are the Landlock rules of a read-only root: writes to the
// writable roots and the device files, reads everywhere with fullBase or
// else under readable.
func landlockRules(writable []WritableRoot, readable []string, fullBase bool) *LandlockRules {
	rules := &LandlockRules{WriteFiles: devFiles()}
	if fullBase {
		rules.ReadDirs = []string{"/"}
	} else {
		rules.ReadDirs = readable
	}
	for _, w := range writable {
		rules.WriteDirs = append(rules.WriteDirs, w.Path)
	}
	return rules
}

// seccompMode selects the filter of docs/sandbox.md §4.4 for an enforced
// profile: Restricted with the network off, VmSocketRestricted with the
// network on and a restricted file system, none with full network and
// full-disk write.
func seccompMode(network, fullWrite bool) SeccompMode {
	switch {
	case !network:
		return SeccompRestricted
	case !fullWrite:
		return SeccompVMSocketRestricted
	}
	return SeccompNone
}

// readableRoots returns the read set of a restricted read policy: the
// readable entries, the platform defaults when `minimal` is readable (or
// for the fs helper), and our own binary's directory. fullBase is true when
// the whole root is readable, so no restricted read view is needed.
func (r *resolver) readableRoots(purpose Purpose) (roots []string, fullBase bool) {
	if r.p.FullDiskRead() {
		return nil, true
	}
	for _, e := range r.entries {
		if !e.access.CanRead() || !accessOf(r.entries, e.path).CanRead() {
			continue
		}
		p := normalizeKeepLink(r.remap(e.path))
		if p == "/" {
			return nil, true
		}
		if lexists(p) {
			roots = append(roots, p)
		}
	}
	if r.p.IncludePlatformDefaults() || purpose == PurposeFSHelper {
		roots = append(roots, platformDefaults()...)
	}
	if filepath.IsAbs(r.ctx.Self) {
		roots = append(roots, filepath.Dir(filepath.Clean(r.ctx.Self)))
	}
	roots = dedup(roots)
	sortByDepth(roots)
	return roots, false
}
