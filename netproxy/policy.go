package netproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// SettingsError is why Compile refused a Settings. Text is the
// reference's text without the prefix its surfaces add; Invalid tells
// which prefix a surface puts before it: true for the class the reference
// answers "invalid permission profile: network proxy constraints are
// invalid: " (the policy contradicts itself, e.g. "*" = "deny"), false for
// its "failed to build network proxy state: " class (a pattern or path it
// cannot read). The exec-server's process/start answers both classes as
// "invalid network proxy config: " + Text.
type SettingsError struct {
	Invalid bool
	Text    string
}

func (e *SettingsError) Error() string { return e.Text }

// Policy is a compiled Settings: the domain patterns ready to match and
// the switches the proxy acts on. It is immutable and safe for concurrent
// use.
type Policy struct {
	allow, deny []pattern
	limited     bool
	allowLocal  bool
	unixSockets []string // allowed absolute paths, sorted
	allUnix     bool
	socks5      bool
}

// Limited reports whether the method policy is "limited".
func (p *Policy) Limited() bool { return p.limited }

// AllowLocalBinding reports whether names may resolve to local addresses.
func (p *Policy) AllowLocalBinding() bool { return p.allowLocal }

// SOCKS5 reports whether a SOCKS5 listener is asked for.
func (p *Policy) SOCKS5() bool { return p.socks5 }

// AllowedUnixSockets returns the allowed Unix socket paths, sorted, and
// whether every Unix socket is allowed.
func (p *Policy) AllowedUnixSockets() ([]string, bool) {
	return slices.Clone(p.unixSockets), p.allUnix
}

// patternKind is how a pattern's labels relate to a host's.
type patternKind uint8

const (
	exactHost   patternKind = iota // the labels exactly
	below                          // "*.d": a name strictly below d
	apexOrBelow                    // "**.d": d or a name below it
	anyHost                        // "*"
)

// pattern is one compiled domain pattern. An IP literal is an exact host
// whose addr is valid: it matches only the same address.
type pattern struct {
	kind   patternKind
	labels []string // of d (or of the exact host), lower-case; may hold '*' globs
	addr   netip.Addr
}

// Compile checks s and compiles its patterns. It fails closed: any entry
// it cannot read is an error, never skipped. The texts are the
// reference's (docs/sandbox.md, "Network").
func Compile(s Settings) (*Policy, error) {
	p := &Policy{
		limited:    s.Mode == ModeLimited,
		allowLocal: s.AllowLocalBinding,
		allUnix:    s.DangerouslyAllowAllUnixSockets,
		socks5:     s.EnableSOCKS5,
	}
	switch s.Mode {
	case "", ModeFull, ModeLimited:
	default:
		return nil, &SettingsError{Text: fmt.Sprintf("unknown mode %q, expected limited or full", string(s.Mode))}
	}
	var allows, denies []string
	for k, a := range s.Domains {
		switch a {
		case Allow:
			allows = append(allows, k)
		case Deny:
			denies = append(denies, k)
		default:
			return nil, &SettingsError{Text: fmt.Sprintf("unknown action %q for domain pattern %s, expected allow or deny", string(a), k)}
		}
	}
	slices.Sort(allows)
	slices.Sort(denies)
	// The contradiction is judged before any syntax: the reference refuses
	// "*" = "deny" even next to an unreadable pattern.
	for _, k := range denies {
		if strings.TrimSpace(k) == "*" {
			return nil, &SettingsError{Invalid: true, Text: "invalid value for network.denied_domains: * (allowed exact hosts or scoped wildcards like *.example.com or **.example.com)"}
		}
	}
	for _, k := range allows {
		pt, err := compilePattern(k)
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, pt)
	}
	for _, k := range denies {
		pt, err := compilePattern(k)
		if err != nil {
			return nil, err
		}
		p.deny = append(p.deny, pt)
	}
	var unixAllowed []string
	for path, a := range s.UnixSockets {
		switch a {
		case Allow:
			unixAllowed = append(unixAllowed, path)
		case Deny:
			// The reference accepts a deny entry of any form; it only
			// narrows, so nothing to check.
		default:
			return nil, &SettingsError{Text: fmt.Sprintf("unknown action %q for Unix socket %s, expected allow or deny", string(a), path)}
		}
	}
	slices.Sort(unixAllowed)
	for i, path := range unixAllowed {
		if !strings.HasPrefix(path, "/") || strings.ContainsRune(path, 0) {
			return nil, &SettingsError{Text: fmt.Sprintf("invalid network.allow_unix_sockets[%d]: expected a NUL-free absolute path for Linux, got %s", i, strconv.Quote(path))}
		}
	}
	p.unixSockets = unixAllowed
	return p, nil
}

// compilePattern reads one domain pattern: an exact host, "*.d", "**.d",
// "*", a glob inside a label or an IP literal. A ":port" suffix is
// dropped (ports are not policy).
func compilePattern(raw string) (pattern, error) {
	s := strings.ToLower(strings.TrimSpace(raw))
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ \t\\\"'") {
		return pattern{}, &SettingsError{Text: "unsupported domain pattern syntax: " + raw}
	}
	s = dropPort(s)
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(s, "."), "["), "]")); err == nil {
		return pattern{kind: exactHost, addr: a.WithZone("").Unmap()}, nil
	}
	if s == "*" {
		return pattern{kind: anyHost}, nil
	}
	if s == "**" {
		return pattern{}, &SettingsError{Text: "unsupported repeated wildcard: " + raw}
	}
	kind := exactHost
	switch {
	case strings.HasPrefix(s, "**."):
		kind, s = apexOrBelow, s[3:]
	case strings.HasPrefix(s, "*."):
		kind, s = below, s[2:]
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return pattern{}, &SettingsError{Text: "domain pattern is empty"}
	}
	if strings.Contains(s, "**") {
		return pattern{}, &SettingsError{Text: "unsupported repeated wildcard: " + raw}
	}
	if s == "*" && kind == exactHost {
		return pattern{kind: anyHost}, nil
	}
	return pattern{kind: kind, labels: strings.Split(s, ".")}, nil
}

// dropPort removes a trailing ":digits" from a host or "[v6]" pattern,
// leaving a bare IPv6 literal (several colons) alone.
func dropPort(s string) string {
	if strings.HasPrefix(s, "[") {
		if i := strings.LastIndex(s, "]:"); i > 0 && allDigits(s[i+2:]) {
			return s[:i+1]
		}
		return s
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.Count(s, ":") == 1 && allDigits(s[i+1:]) {
		return s[:i]
	}
	return s
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// normalizeHost lower-cases a request's host and drops a trailing dot
// and IPv6 brackets.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimRight(h, "."))
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}

// match reports whether the normalised host (with addr set when it is an
// IP literal) matches pt.
func (pt *pattern) match(host string, addr netip.Addr) bool {
	if pt.kind == anyHost {
		return true
	}
	if pt.addr.IsValid() || addr.IsValid() {
		return pt.addr.IsValid() && addr.IsValid() && pt.addr == addr
	}
	hl := strings.Split(host, ".")
	n := len(pt.labels)
	switch pt.kind {
	case exactHost:
		if len(hl) != n {
			return false
		}
	case below:
		if len(hl) <= n {
			return false
		}
	case apexOrBelow:
		if len(hl) < n {
			return false
		}
	}
	tail := hl[len(hl)-n:]
	for i, l := range pt.labels {
		if !globLabel(l, tail[i]) {
			return false
		}
	}
	return true
}

// exactLiteral reports whether pt lists exactly the address a.
func (pt *pattern) exactLiteral(a netip.Addr) bool {
	return pt.kind == exactHost && pt.addr.IsValid() && pt.addr == a
}

// globLabel matches one host label against a pattern label in which '*'
// stands for any run of characters (within the label).
func globLabel(p, s string) bool {
	star := strings.IndexByte(p, '*')
	if star < 0 {
		return p == s
	}
	if !strings.HasPrefix(s, p[:star]) {
		return false
	}
	s = s[star:]
	p = p[star+1:]
	for {
		next := strings.IndexByte(p, '*')
		if next < 0 {
			return len(s) >= len(p) && strings.HasSuffix(s, p)
		}
		seg := p[:next]
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
		p = p[next+1:]
	}
}

// verdict is the baseline policy's answer for a host before any lookup.
type verdict uint8

const (
	vAllowName    verdict = iota // a name matched an allow pattern: resolve and check
	vAllowLiteral                // an IP literal listed or allowed: dial it
	vNotAllowed
	vDenied
	vLocal // a local IP literal that is not listed exactly
)

// judge is the baseline decision for a normalised host (spec §4.1, §4.2).
func (p *Policy) judge(host string) (verdict, netip.Addr) {
	addr, err := netip.ParseAddr(host)
	if err == nil {
		addr = addr.WithZone("").Unmap()
	}
	lit := err == nil
	for i := range p.deny {
		if p.deny[i].match(host, addr) {
			return vDenied, addr
		}
	}
	if lit {
		for i := range p.allow {
			if p.allow[i].exactLiteral(addr) {
				return vAllowLiteral, addr
			}
		}
		if isLocal(addr) {
			if p.allowLocal {
				return vNotAllowed, addr
			}
			return vLocal, addr
		}
	}
	for i := range p.allow {
		if p.allow[i].match(host, addr) {
			if lit {
				return vAllowLiteral, addr
			}
			return vAllowName, addr
		}
	}
	return vNotAllowed, addr
}
