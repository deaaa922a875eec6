package proc_test

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/wire"
)

// envBase is a server environment of the usual size and mix: lower- and
// upper-case names, secrets, a name with a slash and glob characters.
func envBase() []string {
	base := []string{
		"PATH=/usr/bin:/bin", "HOME=/root", "SHELL=/bin/bash", "LANG=C.UTF-8", "TERM=xterm",
		"http_proxy=http://p:3128", "AWS_SECRET_ACCESS_KEY=x", "GITHUB_TOKEN=t", "ssh_auth_sock=/s",
		"CODEX_EXEC_SERVER_TOKEN=s", "NODE_REPL_AUTH_TOKEN=n", "OPENAI_IDENTITY_TOKEN_FILE=f",
		"A/B=slash", "X[1]=bracket", "Y\\Z=backslash", "ÄPFEL=umlaut", "lc_all=C", "=bad", "noequals",
		"PATH=/dup",
	}
	for i := range 24 {
		base = append(base, fmt.Sprintf("VAR_%02d=value-%d", i, i))
	}
	return base
}

// oldBuildEnv is BuildEnv as it was before its patterns were compiled once
// (every pattern upper-cased and escaped per name): the oracle.
func oldBuildEnv(base []string, policy *wire.EnvPolicy, overlay map[string]string) []string {
	matchAny := func(patterns []string, name string, glob bool) bool {
		up := strings.ToUpper(name)
		for _, p := range patterns {
			p = strings.ToUpper(p)
			if !glob {
				if p == up {
					return true
				}
				continue
			}
			var b strings.Builder
			for _, r := range p {
				switch r {
				case '[', ']', '\\':
					b.WriteByte('\\')
				}
				b.WriteRune(r)
			}
			if ok, _ := path.Match(b.String(), up); ok {
				return true
			}
		}
		return false
	}
	drop := func(m map[string]string, patterns []string) {
		for k := range m {
			if matchAny(patterns, k, true) {
				delete(m, k)
			}
		}
	}
	nonInheritable := []string{"CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN", "NODE_REPL_AUTH_TOKEN", "OPENAI_FEDERATION_RULE_ID",
		"OPENAI_IDENTITY_TOKEN_FILE", "OPENAI_WORKLOAD_IDENTITY_CONTEXT", "CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE"}
	core := []string{"PATH", "SHELL", "TMPDIR", "TEMP", "TMP", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "USER"}
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
				if matchAny(core, k, false) {
					m[k] = v
				}
			}
		}
		drop(m, []string{"CODEX_*TOKEN*"})
		if !policy.IgnoreDefaultExcludes {
			drop(m, []string{"*KEY*", "*SECRET*", "*TOKEN*"})
		}
		drop(m, policy.Exclude)
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
		drop(m, nonInheritable)
	}
	for k, v := range overlay {
		m[k] = v
	}
	drop(m, nonInheritable)
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// BuildEnv gives the same environment as the per-name matching it
// replaced, for every policy shape: inherit all/core/none, the default
// excludes on and off, excludes and include-only patterns with wildcards,
// classes and escapes that must stay literal, sets and an overlay.
func TestBuildEnvSameAsPerNameMatching(t *testing.T) {
	base := envBase()
	overlay := map[string]string{"VAR_01": "over", "node_repl_auth_token": "no", "NEW": "n"}
	var policies []*wire.EnvPolicy
	policies = append(policies, nil)
	for _, inherit := range []string{"all", "core", "none"} {
		for _, ign := range []bool{false, true} {
			for _, excl := range [][]string{nil, {"var_0?"}, {"*_1*", "a/*"}, {"X[1]", "Y\\Z", "ä*"}, {"[a-z]*"}, {"path", "*KEY", "*", "**", "*_0*5", "a/b", "*/B"}} {
				for _, only := range [][]string{nil, {"VAR_*", "path", "*/*"}, {"?ANG", "x[1]"}} {
					policies = append(policies, &wire.EnvPolicy{Inherit: inherit, IgnoreDefaultExcludes: ign,
						Exclude: excl, IncludeOnly: only, Set: map[string]string{"SET_ME": "1", "var_03": "set"}})
				}
			}
		}
	}
	for i, pol := range policies {
		for _, ov := range []map[string]string{nil, overlay} {
			got, want := proc.BuildEnv(base, pol, ov), oldBuildEnv(base, pol, ov)
			if !slices.Equal(got, want) {
				t.Errorf("policy %d %+v overlay %v:\n got  %q\n want %q", i, pol, ov, got, want)
			}
		}
	}
}

// A start's environment leaves little behind for the collector: with the
// default policy and a server environment of 44 entries, the result, its
// map and a few words, not a string per pattern and name (the old
// matching made more than 900 allocations here).
func TestBuildEnvAllocations(t *testing.T) {
	base := envBase()
	pol := &wire.EnvPolicy{Inherit: "all"}
	allocs := testing.AllocsPerRun(50, func() { proc.BuildEnv(base, pol, nil) })
	oldAllocs := testing.AllocsPerRun(50, func() { oldBuildEnv(base, pol, nil) })
	t.Logf("allocations per BuildEnv: %.0f (per-name matching: %.0f)", allocs, oldAllocs)
	if allocs > 30 {
		t.Errorf("BuildEnv made %.0f allocations, want ≤ 30", allocs)
	}
}

func BenchmarkBuildEnv(b *testing.B) {
	base := envBase()
	pol := &wire.EnvPolicy{Inherit: "all"}
	b.ReportAllocs()
	for b.Loop() {
		proc.BuildEnv(base, pol, nil)
	}
}

func BenchmarkBuildEnvPerName(b *testing.B) {
	base := envBase()
	pol := &wire.EnvPolicy{Inherit: "all"}
	b.ReportAllocs()
	for b.Loop() {
		oldBuildEnv(base, pol, nil)
	}
}
