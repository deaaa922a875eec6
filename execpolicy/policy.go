package execpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Policy is a loaded set of rules. The zero value and a nil *Policy are
// empty policies (a nil one cannot take amendments). All methods may be
// called concurrently; AppendAllowPrefix is the only one that changes it.
type Policy struct {
	mu sync.RWMutex
	// byKey indexes prefix rules by the case-folded program, in load order.
	byKey   map[string][]*PrefixRule
	network []NetworkRule
	// hostExecutables maps a program name to the only absolute paths that
	// resolve to it (host_executable); a later declaration replaces one.
	hostExecutables map[string][]string
}

// MatchOptions tunes Matches. The zero value matches cmd[0] exactly.
type MatchOptions struct {
	// ResolveHostExecutables lets an absolute (or ~/ or relative) program
	// path that no rule names match the rules of its basename, limited to
	// the paths of a host_executable() for that name when there is one.
	ResolveHostExecutables bool
}

// Evaluation is the verdict of Evaluate.
type Evaluation struct {
	// Matches are the rules that matched, in load order; when none did,
	// one Heuristic entry.
	Matches []Match
	// Decision is the strictest decision of Matches.
	Decision Decision
	// Matched reports whether a rule (not the heuristic) matched.
	Matched bool
	// PolicyDriven reports whether a rule matched with Decision itself.
	PolicyDriven bool
}

func (p *Policy) addRule(r *PrefixRule) {
	if p.byKey == nil {
		p.byKey = map[string][]*PrefixRule{}
	}
	k := foldCase(r.Program)
	p.byKey[k] = append(p.byKey[k], r)
}

// NetworkRules returns the network_rule() declarations, in load order.
func (p *Policy) NetworkRules() []NetworkRule {
	if p == nil {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]NetworkRule(nil), p.network...)
}

// Matches returns every rule matching cmd, in load order, or nil. Only
// rules whose program equals cmd[0] are candidates (case-folded for
// canonical_matching rules); with opts.ResolveHostExecutables and no such
// match, a program path is tried as its basename.
func (p *Policy) Matches(cmd []string, opts MatchOptions) []Match {
	if p == nil {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.matchesLocked(cmd, opts)
}

func (p *Policy) matchesLocked(cmd []string, opts MatchOptions) []Match {
	if len(cmd) == 0 {
		return nil
	}
	if m := p.matchExact(cmd, ""); len(m) > 0 || !opts.ResolveHostExecutables {
		return m
	}
	base, ok := pathBase(cmd[0])
	if !ok {
		return nil
	}
	prog, ok := absProgram(cmd[0])
	if !ok {
		return nil
	}
	if paths, declared := p.hostExecutables[base]; declared && !contains(paths, prog) {
		return nil
	}
	bcmd := append([]string{base}, cmd[1:]...)
	return p.matchExact(bcmd, prog)
}

func (p *Policy) matchExact(cmd []string, resolved string) []Match {
	var out []Match
	for _, r := range p.byKey[foldCase(cmd[0])] {
		if pre := r.match(cmd); pre != nil {
			out = append(out, Match{MatchedPrefix: pre, Decision: r.Decision,
				ResolvedProgram: resolved, Justification: r.Justification})
		}
	}
	return out
}

// Evaluate matches cmd exactly (the caller has normalised cmd[0]) and
// takes the strictest decision. When no rule matches, the heuristic
// fallback decides: Prompt if MightBeDangerous(cmd), else Allow, with
// Matched and PolicyDriven false.
func (p *Policy) Evaluate(cmd []string) Evaluation {
	ms := p.Matches(cmd, MatchOptions{})
	if len(ms) == 0 {
		d := Allow
		if MightBeDangerous(cmd) {
			d = Prompt
		}
		return Evaluation{Matches: []Match{{MatchedPrefix: append([]string(nil), cmd...),
			Decision: d, Heuristic: true}}, Decision: d}
	}
	ev := Evaluation{Matches: ms, Matched: true}
	for _, m := range ms {
		ev.Decision = ev.Decision.Stricter(m.Decision)
	}
	for _, m := range ms {
		if m.Decision == ev.Decision {
			ev.PolicyDriven = true
		}
	}
	return ev
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// pathBase returns the last normal component of a path ("git" for
// "/usr/bin/git/."), or false when there is none ("/", "a/..").
func pathBase(p string) (string, bool) {
	parts := strings.Split(p, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		switch parts[i] {
		case "", ".":
			if i == 0 && parts[i] == "." && len(parts) == 1 {
				return "", false
			}
			continue
		case "..":
			return "", false
		}
		return parts[i], true
	}
	return "", false
}

// absProgram makes a program path absolute the way the reference does: ~/
// is the home directory, a relative path is taken from the working
// directory, and the result is cleaned lexically.
func absProgram(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "~/") || p == "~":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	case !filepath.IsAbs(p):
		wd, err := os.Getwd()
		if err != nil {
			return "", false
		}
		p = filepath.Join(wd, p)
	}
	return filepath.Clean(p), true
}

// Programs returns the program of every prefix rule, once each, as the
// rules spell it (the first spelling for case-folded duplicates).
func (p *Policy) Programs() []string {
	if p == nil {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]string, 0, len(p.byKey))
	for _, rs := range p.byKey {
		out = append(out, rs[0].Program)
	}
	return out
}

// HostExecutables returns the absolute paths a host_executable()
// declaration pins the program name to, and whether there is one.
func (p *Policy) HostExecutables(name string) ([]string, bool) {
	if p == nil {
		return nil, false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	paths, ok := p.hostExecutables[name]
	return append([]string(nil), paths...), ok
}
