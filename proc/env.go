package proc

import (
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/codexec/codex/wire"
)

// nonInheritable names never reach a child, whatever the request says.
var nonInheritable = []string{
	"CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN",
	"NODE_REPL_AUTH_TOKEN",
	"OPENAI_FEDERATION_RULE_ID",
	"OPENAI_IDENTITY_TOKEN_FILE",
	"OPENAI_WORKLOAD_IDENTITY_CONTEXT",
	"CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE",
}

// serverSecrets are variables of the server's own environment that never
// reach a child through inheritance, even with ignoreDefaultExcludes: the
// tokens our binary reads (the exec client's CODEX_*TOKEN* variables), so a
// server started from a shell that holds one does not hand it to commands
// (docs/protocol.md §7.3). A client may still set them explicitly.
var serverSecrets = []string{"CODEX_*TOKEN*"}

var coreNames = []string{"PATH", "SHELL", "TMPDIR", "TEMP", "TMP", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "USER"}

var defaultExcludes = []string{"*KEY*", "*SECRET*", "*TOKEN*"}

// The fixed lists above, compiled once (envPatterns).
var (
	nonInheritableGlobs  = compileEnvGlobs(nonInheritable)
	serverSecretsGlobs   = compileEnvGlobs(serverSecrets)
	defaultExcludesGlobs = compileEnvGlobs(defaultExcludes)
	coreNamesUpper       = upperAll(coreNames)
)

// BuildEnv computes a child's environment from the server's own environment
// (base, "K=V" entries), the request's policy (nil: start empty) and the
// request's env overlay, which wins. The result is sorted for determinism.
//
// It runs on every process start: the patterns are compiled once per call
// (the fixed lists once per server), each name is upper-cased once, and an
// inherited entry is the base's own "K=V" string, so what a start leaves
// behind for the collector is the result and one map.
func BuildEnv(base []string, policy *wire.EnvPolicy, overlay map[string]string) []string {
	m := make(map[string]string, len(overlay)) // name → its "K=V" entry
	if policy != nil {
		m = make(map[string]string, len(base)+len(policy.Set)+len(overlay))
		for _, kv := range base {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				continue
			}
			switch policy.Inherit {
			case "all":
				m[k] = kv
			case "core":
				if slices.Contains(coreNamesUpper, strings.ToUpper(k)) {
					m[k] = kv
				}
			}
		}
		dropMatching(m, serverSecretsGlobs)
		if !policy.IgnoreDefaultExcludes {
			dropMatching(m, defaultExcludesGlobs)
		}
		dropMatching(m, compileEnvGlobs(policy.Exclude))
		for k, v := range policy.Set {
			m[k] = k + "=" + v
		}
		if len(policy.IncludeOnly) > 0 {
			only := compileEnvGlobs(policy.IncludeOnly)
			for k := range m {
				if !only.match(strings.ToUpper(k)) {
					delete(m, k)
				}
			}
		}
		dropMatching(m, nonInheritableGlobs)
	}
	for k, v := range overlay {
		m[k] = k + "=" + v
	}
	dropMatching(m, nonInheritableGlobs)
	out := make([]string, 0, len(m))
	for _, kv := range m {
		out = append(out, kv)
	}
	sort.Strings(out)
	return out
}

// envGlob is a case-insensitive name pattern in which only `*` and `?`
// are wildcards, with path.Match's meaning (neither matches '/'). The
// common shapes (a literal name, LIT*, *LIT, *LIT*) are matched with
// string comparisons; any other is matched by path.Match.
type envGlob struct {
	kind byte   // '=' literal, '<' LIT*, '>' *LIT, '~' *LIT*, 'm' path.Match
	lit  string // the upper-cased literal; for 'm' the escaped pattern
}

type envGlobs []envGlob

// compileEnvGlobs compiles patterns (nil for none).
func compileEnvGlobs(patterns []string) envGlobs {
	if len(patterns) == 0 {
		return nil
	}
	g := make(envGlobs, len(patterns))
	for i, p := range patterns {
		up := strings.ToUpper(p)
		g[i] = envGlob{kind: 'm', lit: escapeGlob(up)}
		inner := up
		kind := byte('=')
		switch {
		case len(up) >= 2 && up[0] == '*' && up[len(up)-1] == '*':
			inner, kind = up[1:len(up)-1], '~'
		case strings.HasSuffix(up, "*"):
			inner, kind = up[:len(up)-1], '<'
		case strings.HasPrefix(up, "*"):
			inner, kind = up[1:], '>'
		}
		if !strings.ContainsAny(inner, "*?/") {
			g[i] = envGlob{kind: kind, lit: inner}
		}
	}
	return g
}

// match reports whether the upper-cased name matches one of g. A
// wildcard never matches '/' and the fast shapes' literals hold none, so
// a name with a slash matches those only when they are literal.
func (g envGlobs) match(upName string) bool {
	for _, p := range g {
		var ok bool
		switch p.kind {
		case '=':
			ok = upName == p.lit
		case '<':
			ok = strings.HasPrefix(upName, p.lit) && !strings.Contains(upName, "/")
		case '>':
			ok = strings.HasSuffix(upName, p.lit) && !strings.Contains(upName, "/")
		case '~':
			ok = strings.Contains(upName, p.lit) && !strings.Contains(upName, "/")
		default:
			ok, _ = path.Match(p.lit, upName)
		}
		if ok {
			return true
		}
	}
	return false
}

func dropMatching(m map[string]string, g envGlobs) {
	if len(g) == 0 {
		return
	}
	for k := range m {
		if g.match(strings.ToUpper(k)) {
			delete(m, k)
		}
	}
}

func upperAll(names []string) []string {
	up := make([]string, len(names))
	for i, n := range names {
		up[i] = strings.ToUpper(n)
	}
	return up
}

// escapeGlob escapes path.Match's class and escape characters, so that
// only * and ? are wildcards.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		switch r {
		case '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
