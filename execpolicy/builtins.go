package execpolicy

import (
	"path/filepath"
	"strings"

	"go.starlark.net/starlark"
)

var prefixRuleParams = []param{
	{"pattern", "list", true}, {"decision", "str", false}, {"match", "list", false},
	{"not_match", "list", false}, {"justification", "str", false},
	{"canonical_matching", "bool", false},
}

// prefixRule implements prefix_rule(): it adds one rule per alternative of
// the pattern's first element and records the examples for checking.
func (l *loader) prefixRule(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	v, err := bindArgs(b.Name(), prefixRuleParams, args, kwargs)
	if err != nil {
		return nil, err
	}
	decision := Allow
	if s, ok := str(v[1]); ok {
		if decision, err = parseDecision(s); err != nil {
			return nil, err
		}
	}
	justification, err := parseJustification(v[4])
	if err != nil {
		return nil, err
	}
	pattern, err := parsePattern(listItems(v[0]))
	if err != nil {
		return nil, err
	}
	match, err := parseExamples(listItems(v[2]))
	if err != nil {
		return nil, err
	}
	notMatch, err := parseExamples(listItems(v[3]))
	if err != nil {
		return nil, err
	}
	canonical := v[5] != nil && bool(v[5].(starlark.Bool))
	var rules []*PrefixRule
	for _, prog := range pattern[0].Alts {
		r := &PrefixRule{Program: prog, Rest: pattern[1:], Decision: decision,
			Justification: justification, Canonical: canonical}
		rules = append(rules, r)
		l.p.addRule(r)
	}
	l.pending = append(l.pending, exampleCheck{rules: rules, match: match, notMatch: notMatch})
	return starlark.None, nil
}

func parseDecision(s string) (Decision, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "prompt":
		return Prompt, nil
	case "forbidden":
		return Forbidden, nil
	}
	return Allow, errorf("invalid decision: %s", s)
}

func parseJustification(v starlark.Value) (string, error) {
	s, ok := str(v)
	if !ok {
		return "", nil
	}
	if strings.TrimSpace(s) == "" {
		return "", errorf("invalid rule: justification cannot be empty")
	}
	return s, nil
}

func parsePattern(items []starlark.Value) ([]Token, error) {
	toks := make([]Token, 0, len(items))
	for _, it := range items {
		switch x := it.(type) {
		case starlark.String:
			toks = append(toks, Token{Alts: []string{string(x)}})
		case *starlark.List:
			var alts []string
			for _, a := range listItems(x) {
				s, ok := a.(starlark.String)
				if !ok {
					return nil, errorf("invalid pattern element: pattern alternative must be a string (got %s)", a.Type())
				}
				alts = append(alts, string(s))
			}
			if len(alts) == 0 {
				return nil, errorf("invalid pattern element: pattern alternatives cannot be empty")
			}
			toks = append(toks, Token{Alts: alts})
		default:
			return nil, errorf("invalid pattern element: pattern element must be a string or list of strings (got %s)", it.Type())
		}
	}
	if len(toks) == 0 {
		return nil, errorf("invalid pattern element: pattern cannot be empty")
	}
	return toks, nil
}

func parseExamples(items []starlark.Value) ([][]string, error) {
	var out [][]string
	for _, it := range items {
		ex, err := parseExample(it)
		if err != nil {
			return nil, err
		}
		out = append(out, ex)
	}
	return out, nil
}

func parseExample(v starlark.Value) ([]string, error) {
	switch x := v.(type) {
	case starlark.String:
		words, err := SplitShell(string(x))
		if err != nil {
			return nil, errorf("invalid example: example string has invalid shell syntax")
		}
		if len(words) == 0 {
			return nil, errorf("invalid example: example cannot be an empty string")
		}
		return words, nil
	case *starlark.List:
		var words []string
		for _, t := range listItems(x) {
			s, ok := t.(starlark.String)
			if !ok {
				return nil, errorf("invalid example: example tokens must be strings (got %s)", t.Type())
			}
			words = append(words, string(s))
		}
		if len(words) == 0 {
			return nil, errorf("invalid example: example cannot be an empty list")
		}
		return words, nil
	}
	return nil, errorf("invalid example: example must be a string or list of strings (got %s)", v.Type())
}

var networkRuleParams = []param{
	{"host", "str", true}, {"protocol", "str", true}, {"decision", "str", true},
	{"justification", "str", false},
}

// networkRule implements network_rule(): validated and kept, not enforced.
func (l *loader) networkRule(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	v, err := bindArgs(b.Name(), networkRuleParams, args, kwargs)
	if err != nil {
		return nil, err
	}
	proto, _ := str(v[1])
	switch proto {
	case "http", "socks5_tcp", "socks5_udp":
	case "https", "https_connect", "http-connect":
		proto = "https"
	default:
		return nil, errorf("invalid rule: network_rule protocol must be one of http, https, socks5_tcp, socks5_udp (got %s)", proto)
	}
	ds, _ := str(v[2])
	if ds == "deny" {
		ds = "forbidden"
	}
	decision, err := parseDecision(ds)
	if err != nil {
		return nil, errorf("invalid decision: %s", ds)
	}
	justification, err := parseJustification(v[3])
	if err != nil {
		return nil, err
	}
	raw, _ := str(v[0])
	host, err := normalizeHost(raw)
	if err != nil {
		return nil, err
	}
	l.p.network = append(l.p.network, NetworkRule{Host: host, Protocol: proto,
		Decision: decision, Justification: justification})
	return starlark.None, nil
}

// normalizeHost checks a network_rule host and returns it lower-cased,
// without a port, brackets or trailing dots.
func normalizeHost(raw string) (string, error) {
	host := strings.TrimSpace(raw)
	if host == "" {
		return "", errorf("invalid rule: network_rule host cannot be empty")
	}
	if strings.ContainsAny(host, "/?#") {
		return "", errorf("invalid rule: network_rule host must be a hostname or IP literal (without scheme or path)")
	}
	if inner, ok := strings.CutPrefix(host, "["); ok {
		in, rest, found := strings.Cut(inner, "]")
		if !found {
			return "", errorf("invalid rule: network_rule host has an invalid bracketed IPv6 literal")
		}
		if rest != "" && !isPort(strings.TrimPrefix(rest, ":"), strings.HasPrefix(rest, ":")) {
			return "", errorf("invalid rule: network_rule host contains an unsupported suffix: %s", raw)
		}
		host = in
	} else if strings.Count(host, ":") == 1 {
		cand, port, _ := strings.Cut(host, ":")
		if cand != "" && isPort(port, true) {
			host = cand
		}
	}
	host = strings.ToLower(strings.TrimSpace(strings.TrimRight(host, ".")))
	switch {
	case host == "":
		return "", errorf("invalid rule: network_rule host cannot be empty")
	case strings.Contains(host, "*"):
		return "", errorf("invalid rule: network_rule host must be a specific host; wildcards are not allowed")
	case strings.IndexFunc(host, isSpace) >= 0:
		return "", errorf("invalid rule: network_rule host cannot contain whitespace")
	}
	return host, nil
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || r == 0xa0 || r > 0xff && strings.ContainsRune("\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000", r)
}

func isPort(s string, present bool) bool {
	if !present || s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var hostExecutableParams = []param{{"name", "str", true}, {"paths", "list", true}}

// hostExecutable implements host_executable(): the absolute paths that may
// stand for a program name; a later declaration for a name replaces one.
func (l *loader) hostExecutable(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	v, err := bindArgs(b.Name(), hostExecutableParams, args, kwargs)
	if err != nil {
		return nil, err
	}
	name, _ := str(v[0])
	if name == "" {
		return nil, errorf("invalid rule: host_executable name cannot be empty")
	}
	if strings.Contains(name, "/") || name == "." || name == ".." {
		return nil, errorf("invalid rule: host_executable name must be a bare executable name (got %s)", name)
	}
	paths := []string{}
	for _, it := range listItems(v[1]) {
		raw, ok := it.(starlark.String)
		if !ok {
			return nil, errorf("invalid rule: host_executable paths must be strings (got %s)", it.Type())
		}
		p := string(raw)
		if !filepath.IsAbs(p) {
			return nil, errorf("invalid rule: host_executable paths must be absolute (got %s)", p)
		}
		if base, ok := pathBase(p); !ok || base != name {
			return nil, errorf("invalid rule: host_executable path `%s` must have basename `%s`", p, name)
		}
		if p = filepath.Clean(p); !contains(paths, p) {
			paths = append(paths, p)
		}
	}
	if l.p.hostExecutables == nil {
		l.p.hostExecutables = map[string][]string{}
	}
	l.p.hostExecutables[name] = paths
	return starlark.None, nil
}
