package config

import (
	"maps"

	"github.com/codexec/codex/sandbox"
)

// fsValue is the value of one filesystem key: an access, or a table of
// subpaths (scoped) each with its access.
type fsValue struct {
	access sandbox.Access
	scoped map[string]sandbox.Access
}

// profileTOML is one [permissions.<name>] table as written.
type profileTOML struct {
	key            string // "permissions.<name>", for messages
	extends        string
	workspaceRoots map[string]bool
	fs             map[string]fsValue
	globDepth      *int
	network        *bool // network.enabled
	net            networkTOML
}

// readProfile reads one profile table. Unknown keys are warnings.
func (p *Permissions) readProfile(key string, body map[string]any) (*profileTOML, error) {
	prof := &profileTOML{key: key}
	for _, k := range sortedKeys(body) {
		v, sub := body[k], key+"."+quoteKey(k)
		switch k {
		case "description":
			if _, ok := v.(string); !ok {
				return nil, p.errf(sub, "must be a string, not %s", typeName(v))
			}
		case "extends":
			s, ok := v.(string)
			if !ok {
				return nil, p.errf(sub, "must be a string, not %s", typeName(v))
			}
			prof.extends = s
		case "workspace_roots":
			if err := p.readRoots(prof, sub, v); err != nil {
				return nil, err
			}
		case "filesystem":
			if err := p.readFilesystem(prof, sub, v); err != nil {
				return nil, err
			}
		case "network":
			if err := p.readNetwork(prof, sub, v); err != nil {
				return nil, err
			}
		default:
			p.warnf(sub, "unknown key, ignored")
		}
	}
	return prof, nil
}

// readRoots reads workspace_roots: a table of path = enabled.
func (p *Permissions) readRoots(prof *profileTOML, key string, v any) error {
	t, ok := v.(map[string]any)
	if !ok {
		return p.errf(key, "must be a table of paths to booleans, not %s", typeName(v))
	}
	prof.workspaceRoots = map[string]bool{}
	for path, on := range t {
		b, ok := on.(bool)
		if !ok {
			return p.errf(key+"."+quoteKey(path), "must be a boolean, not %s", typeName(on))
		}
		prof.workspaceRoots[path] = b
	}
	return nil
}

// readFilesystem reads the filesystem table: glob_scan_max_depth and
// path = access or path = { subpath = access }.
func (p *Permissions) readFilesystem(prof *profileTOML, key string, v any) error {
	t, ok := v.(map[string]any)
	if !ok {
		return p.errf(key, "must be a table, not %s", typeName(v))
	}
	prof.fs = map[string]fsValue{}
	for _, k := range sortedKeys(t) {
		sub := key + "." + quoteKey(k)
		if k == "glob_scan_max_depth" {
			n, ok := t[k].(int64)
			if !ok || n < 0 {
				return p.errf(sub, "must be a positive integer")
			}
			d := int(min(n, 1<<20)) // 0 is refused when the profile is compiled
			prof.globDepth = &d
			continue
		}
		if a, ok := accessOf(t[k]); ok {
			prof.fs[k] = fsValue{access: a}
			continue
		}
		scoped, ok := t[k].(map[string]any)
		if !ok {
			return p.errf(sub, `must be "read", "write" or "none", or a table of subpaths to those`)
		}
		val := fsValue{scoped: map[string]sandbox.Access{}}
		for s, av := range scoped {
			a, ok := accessOf(av)
			if !ok {
				return p.errf(sub+"."+quoteKey(s), `must be "read", "write" or "none"`)
			}
			val.scoped[s] = a
		}
		prof.fs[k] = val
	}
	return nil
}

// merge returns parent overlaid with child: child keys win; two scoped
// tables under the same key merge, child subpaths winning.
func merge(parent, child *profileTOML) *profileTOML {
	out := &profileTOML{key: child.key, globDepth: parent.globDepth, network: parent.network, net: mergeNetwork(parent.net, child.net)}
	out.workspaceRoots = maps.Clone(parent.workspaceRoots)
	if out.workspaceRoots == nil && child.workspaceRoots != nil {
		out.workspaceRoots = map[string]bool{}
	}
	maps.Copy(out.workspaceRoots, child.workspaceRoots)
	out.fs = maps.Clone(parent.fs)
	if out.fs == nil && child.fs != nil {
		out.fs = map[string]fsValue{}
	}
	for k, cv := range child.fs {
		if pv, ok := out.fs[k]; ok && pv.scoped != nil && cv.scoped != nil {
			m := maps.Clone(pv.scoped)
			maps.Copy(m, cv.scoped)
			cv = fsValue{scoped: m}
		}
		out.fs[k] = cv
	}
	if child.globDepth != nil {
		out.globDepth = child.globDepth
	}
	if child.network != nil {
		out.network = child.network
	}
	return out
}
