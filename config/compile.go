package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/codexec/codex/sandbox"
)

// compiled is a user profile compiled for one policy cwd.
type compiled struct {
	entries []sandbox.Entry
	roots   []string
	depth   *int
	network bool
}

// compile turns a flattened profile into entries for the policy cwd cwd.
// The workspace roots are cwd and every enabled workspace_roots path
// (relative ones joined onto cwd); `:workspace_roots` deny globs are
// anchored at each of them.
func (p *Permissions) compile(prof *profileTOML, cwd string) (compiled, error) {
	if prof.globDepth != nil && *prof.globDepth == 0 {
		return compiled{}, p.errf(prof.key+".filesystem.glob_scan_max_depth", "glob_scan_max_depth must be at least 1")
	}
	c := compiled{depth: prof.globDepth, network: prof.network != nil && *prof.network}
	c.roots = []string{filepath.Clean(cwd)}
	for _, r := range sortedKeys(prof.workspaceRoots) {
		if prof.workspaceRoots[r] {
			if abs := p.absolute(r, cwd); !contains(c.roots, abs) {
				c.roots = append(c.roots, abs)
			}
		}
	}
	for _, k := range sortedKeys(prof.fs) {
		v, key := prof.fs[k], prof.key+".filesystem."+quoteKey(k)
		var es []sandbox.Entry
		var err error
		if v.scoped == nil {
			es, err = p.compileAccess(k, v.access)
		} else {
			es, err = p.compileScoped(k, v.scoped, c.roots)
		}
		if err != nil {
			return compiled{}, p.keyErr(key, err)
		}
		c.entries = append(c.entries, es...)
	}
	return c, nil
}

// compileAccess compiles `path = access`.
func (p *Permissions) compileAccess(path string, a sandbox.Access) ([]sandbox.Entry, error) {
	if hasGlob(path) {
		if a == sandbox.AccessDeny && !literalSubtree(path) {
			if !filepath.IsAbs(path) && path != "~" && !strings.HasPrefix(path, "~/") {
				return nil, notAbsolute(path)
			}
			return p.denyGlob(path)
		}
		stripped, err := subtree(path, a)
		if err != nil {
			return nil, err
		}
		path = stripped
	}
	return p.compilePath(path, "", a)
}

// compileScoped compiles `base = { subpath = access, … }`. A deny glob
// under `:workspace_roots` is anchored at each root; under an absolute
// base, at the base.
func (p *Permissions) compileScoped(base string, scoped map[string]sandbox.Access, roots []string) ([]sandbox.Entry, error) {
	var out []sandbox.Entry
	for _, sub := range sortedKeys(scoped) {
		a := scoped[sub]
		if hasGlob(sub) && a == sandbox.AccessDeny && !literalSubtree(sub) && (base == ":workspace_roots" || !strings.HasPrefix(base, ":")) {
			if err := checkSubpath(sub); err != nil {
				return nil, err
			}
			if base == ":workspace_roots" {
				for _, r := range roots {
					if err := checkGlobRoot(escapeGlob(r) + "/" + sub); err != nil {
						return nil, fmt.Errorf("%w (the workspace root `%s`)", err, r)
					}
					out = append(out, globDeny(escapeGlob(r)+"/"+sub)...)
				}
				continue
			}
			abs, err := p.absolutePath(base)
			if err != nil {
				return nil, err
			}
			if err := checkGlobRoot(escapeGlob(abs) + "/" + sub); err != nil {
				return nil, err
			}
			out = append(out, globDeny(escapeGlob(abs)+"/"+sub)...)
			continue
		}
		s, err := subtree(sub, a)
		if err != nil {
			return nil, err
		}
		if s == "." {
			s = ""
		} else if err := checkSubpath(s); err != nil {
			return nil, err
		}
		es, err := p.compilePath(base, s, a)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// compilePath compiles a special or absolute path with an optional
// relative subpath. Unknown special paths grant nothing (a warning at
// load).
func (p *Permissions) compilePath(path, sub string, a sandbox.Access) ([]sandbox.Entry, error) {
	if strings.HasPrefix(path, ":") {
		kind, known := specialKinds[path]
		switch {
		case !known && a == sandbox.AccessDeny:
			return nil, unsupported{fmt.Sprintf("unknown special path `%s` cannot be denied: it names nothing here, so nothing would be denied", path)}
		case !known:
			return nil, nil
		case kind == sandbox.SpecialProjectRoots:
			return []sandbox.Entry{sandbox.ProjectRootsEntry(sub, a)}, nil
		case sub != "":
			return nil, fmt.Errorf("filesystem path `%s` does not support nested entries", path)
		}
		return []sandbox.Entry{sandbox.SpecialEntry(kind, a)}, nil
	}
	abs, err := p.absolutePath(path)
	if err != nil {
		return nil, err
	}
	return []sandbox.Entry{sandbox.PathEntry(filepath.Join(abs, sub), a)}, nil
}

// specialKinds are the special paths a profile may name.
var specialKinds = map[string]sandbox.SpecialKind{
	":root":            sandbox.SpecialRoot,
	":minimal":         sandbox.SpecialMinimal,
	":workspace_roots": sandbox.SpecialProjectRoots,
	":tmpdir":          sandbox.SpecialTmpdir,
	":slash_tmp":       sandbox.SpecialSlashTmp,
}

// absolutePath accepts an absolute path, `~` or `~/…` (the server's home).
func (p *Permissions) absolutePath(path string) (string, error) {
	if path == "~" || strings.HasPrefix(path, "~/") {
		if !filepath.IsAbs(p.home) {
			return "", fmt.Errorf("filesystem path `%s` needs a home directory, and none is known", path)
		}
		return filepath.Join(p.home, strings.TrimPrefix(path, "~")), nil
	}
	if !filepath.IsAbs(path) {
		return "", notAbsolute(path)
	}
	return filepath.Clean(path), nil
}

// absolute resolves a workspace root: `~/…`, absolute, or relative to cwd.
func (p *Permissions) absolute(path, cwd string) string {
	if abs, err := p.absolutePath(path); err == nil {
		return abs
	}
	return filepath.Join(cwd, path)
}

func notAbsolute(path string) error {
	return fmt.Errorf("filesystem path `%s` must be absolute, use `~/...`, or start with `:`", path)
}

// subtree accepts a read or write path with glob characters only as a
// trailing `/**`, which it strips.
func subtree(path string, a sandbox.Access) (string, error) {
	if !hasGlob(path) {
		return path, nil
	}
	if s := strings.TrimSuffix(path, "/**"); !hasGlob(s) {
		return s, nil
	}
	return "", fmt.Errorf("filesystem glob path `%s` only supports `deny` access; use an exact path or trailing `/**` for `%s` subtree access", path, a)
}

// checkSubpath accepts a non-empty relative path without `.` or `..`.
func checkSubpath(sub string) error {
	ok := sub != "" && !strings.HasPrefix(sub, "/")
	for _, c := range strings.Split(sub, "/") {
		if c == "" || c == "." || c == ".." {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("filesystem subpath `%s` must be a descendant path without `.` or `..` components", sub)
	}
	return nil
}

// hasGlob reports glob characters.
func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[]") }

// escapeGlob escapes the glob and brace characters of a literal path.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
