package proc

import (
	"github.com/codexec/codex/wire"
	"path"
	"sort"
	"strings"
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

// BuildEnv computes a child's environment from the server's own environment
// (base, "K=V" entries), the request's policy (nil: start empty) and the
// request's env overlay, which wins. The result is sorted for determinism.
func BuildEnv(base []string, policy *wire.EnvPolicy, overlay map[string]string) []string {
	m := map[string]string{}
	if policy != nil {
		for _, kv := range base {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				continue
			}
			switch policy.Inherit {
			case "all":
				m[k] = v
			case "core":
				if matchAny(coreNames, k, false) {
					m[k] = v
				}
			}
		}
		dropMatching(m, serverSecrets)
		if !policy.IgnoreDefaultExcludes {
			dropMatching(m, defaultExcludes)
		}
		dropMatching(m, policy.Exclude)
		for k, v := range policy.Set {
			m[k] = v
		}
		if len(policy.IncludeOnly) > 0 {
			for k := range m {
				if !matchAny(policy.IncludeOnly, k, true) {
					delete(m, k)
				}
			}
		}
		dropMatching(m, nonInheritable)
	}
	for k, v := range overlay {
		m[k] = v
	}
	dropMatching(m, nonInheritable)
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func dropMatching(m map[string]string, patterns []string) {
	if len(patterns) == 0 {
		return
	}
	for k := range m {
		if matchAny(patterns, k, true) {
			delete(m, k)
		}
	}
}

// matchAny reports whether name matches one of the case-insensitive
// patterns; glob enables `*` and `?`.
func matchAny(patterns []string, name string, glob bool) bool {
	up := strings.ToUpper(name)
	for _, p := range patterns {
		p = strings.ToUpper(p)
		if !glob {
			if p == up {
				return true
			}
			continue
		}
		// path.Match treats '/' specially and supports classes; escape
		// everything except * and ? so only those are wildcards.
		if ok, _ := path.Match(escapeGlob(p), up); ok {
			return true
		}
	}
	return false
}

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
