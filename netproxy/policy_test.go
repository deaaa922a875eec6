package netproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// TestCompileErrors: the refusals of spec §2.2, with the texts recorded
// from the reference (process/start answered them as -32602 "invalid
// network proxy config: <Text>", 2026-11-29; the command/exec classes are
// the spec's table).
func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       Settings
		invalid bool
		text    string
	}{
		{"star deny", Settings{Domains: map[string]Action{"*": Deny}}, true,
			"invalid value for network.denied_domains: * (allowed exact hosts or scoped wildcards like *.example.com or **.example.com)"},
		{"star deny beats a bad pattern", Settings{Domains: map[string]Action{"*": Deny, "**": Allow}}, true,
			"invalid value for network.denied_domains: * (allowed exact hosts or scoped wildcards like *.example.com or **.example.com)"},
		{"double star", Settings{Domains: map[string]Action{"**": Allow}}, false, "unsupported repeated wildcard: **"},
		{"double star inside", Settings{Domains: map[string]Action{"a.**.b": Allow}}, false, "unsupported repeated wildcard: a.**.b"},
		{"empty", Settings{Domains: map[string]Action{"": Allow}}, false, "domain pattern is empty"},
		{"star dot", Settings{Domains: map[string]Action{"*.": Allow}}, false, "domain pattern is empty"},
		{"double star dot", Settings{Domains: map[string]Action{"**.": Allow}}, false, "domain pattern is empty"},
		{"url", Settings{Domains: map[string]Action{"http://example.com": Allow}}, false, "unsupported domain pattern syntax: http://example.com"},
		{"path", Settings{Domains: map[string]Action{"foo/bar": Allow}}, false, "unsupported domain pattern syntax: foo/bar"},
		{"space", Settings{Domains: map[string]Action{"a b": Allow}}, false, "unsupported domain pattern syntax: a b"},
		{"relative unix socket", Settings{UnixSockets: map[string]Action{"relative.sock": Allow}}, false,
			`invalid network.allow_unix_sockets[0]: expected a NUL-free absolute path for Linux, got "relative.sock"`},
		{"relative unix socket second", Settings{UnixSockets: map[string]Action{"/ok.sock": Allow, "relative.sock": Allow}}, false,
			`invalid network.allow_unix_sockets[1]: expected a NUL-free absolute path for Linux, got "relative.sock"`},
		{"NUL in unix socket", Settings{UnixSockets: map[string]Action{"/a\x00b": Allow}}, false,
			`invalid network.allow_unix_sockets[0]: expected a NUL-free absolute path for Linux, got "/a\x00b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.s)
			var se *SettingsError
			if !errors.As(err, &se) {
				t.Fatalf("Compile: %v, want a *SettingsError", err)
			}
			if se.Invalid != tc.invalid || se.Text != tc.text {
				t.Errorf("got {%v %q}, want {%v %q}", se.Invalid, se.Text, tc.invalid, tc.text)
			}
		})
	}
}

// TestCompileAccepts: what the reference accepted without error
// (recorded 2026-11-29), and the switches that are compiled, not refused.
func TestCompileAccepts(t *testing.T) {
	for _, d := range []string{"*.*", "[::1]", "a..b", ".a", "a:b:c", "exa*mple.com", "*.*.other.org", "api.other.org:8080", "*", "10.231.0.1"} {
		if _, err := Compile(Settings{Domains: map[string]Action{d: Allow}}); err != nil {
			t.Errorf("%q: %v", d, err)
		}
	}
	if _, err := Compile(Settings{UnixSockets: map[string]Action{"relative.sock": Deny}}); err != nil {
		t.Errorf("a relative deny entry: %v", err)
	}
	p, err := Compile(Settings{AllowUpstreamProxy: true, EnableSOCKS5UDP: true, EnableSOCKS5: true, Mode: ModeLimited,
		UnixSockets: map[string]Action{"/b": Allow, "/a": Allow, "/c": Deny}})
	if err != nil {
		t.Fatal(err)
	}
	if socks, all := p.AllowedUnixSockets(); fmt.Sprint(socks) != "[/a /b]" || all || !p.Limited() || !p.SOCKS5() {
		t.Errorf("compiled: %v %v limited=%v socks=%v", socks, all, p.Limited(), p.SOCKS5())
	}
}

// TestMatching is spec §4.1 on the policy alone (the same rows go
// through the listeners in TestHTTPMatching).
func TestMatching(t *testing.T) {
	for _, tc := range []struct {
		domains map[string]Action
		host    string
		want    verdict
	}{
		{map[string]Action{"api.example.com": Allow}, "api.example.com", vAllowName},
		{map[string]Action{"API.Example.COM": Allow}, "api.example.com", vAllowName},
		{map[string]Action{"api.example.com.": Allow}, "api.example.com", vAllowName},
		{map[string]Action{"api.example.com": Allow}, "other.org", vNotAllowed},
		{map[string]Action{"*.example.com": Allow, "evil.example.com": Deny}, "evil.example.com", vDenied},
		{map[string]Action{"api.example.com": Allow, "API.example.com": Deny}, "api.example.com", vDenied},
		{map[string]Action{"*.example.com": Allow}, "api.example.com", vAllowName},
		{map[string]Action{"*.example.com": Allow}, "a.b.example.com", vAllowName},
		{map[string]Action{"*.example.com": Allow}, "example.com", vNotAllowed},
		{map[string]Action{"*.example.com": Allow}, "badexample.com", vNotAllowed},
		{map[string]Action{"**.example.com": Allow}, "example.com", vAllowName},
		{map[string]Action{"**.example.com": Allow}, "a.b.example.com", vAllowName},
		{map[string]Action{"*": Allow}, "anything.test", vAllowName},
		{map[string]Action{"*": Allow}, "93.184.216.34", vAllowLiteral},
		{map[string]Action{"*": Allow}, "10.231.0.1", vLocal},
		{map[string]Action{"exa*mple.com": Allow}, "example.com", vAllowName},
		{map[string]Action{"exa*mple.com": Allow}, "exaxmple.com", vAllowName},
		{map[string]Action{"exa*mple.com": Allow}, "exa.mple.com", vNotAllowed},
		{map[string]Action{"*.*.other.org": Allow}, "sub.other.org", vNotAllowed},
		{map[string]Action{"*.*.other.org": Allow}, "a.sub.other.org", vAllowName},
		{map[string]Action{"api.other.org:8080": Allow}, "api.other.org", vAllowName},
		{map[string]Action{"93.184.216.34": Allow}, "93.184.216.34", vAllowLiteral},
		{map[string]Action{"93.184.216.34": Allow}, "93.184.216.35", vNotAllowed},
		{map[string]Action{"10.231.0.1": Allow}, "10.231.0.1", vAllowLiteral},
		{map[string]Action{"*.example.com": Allow}, "10.231.0.1", vLocal},
		{map[string]Action{"::1": Allow}, "::1", vAllowLiteral},
		{map[string]Action{"*": Allow, "93.184.216.34": Deny}, "93.184.216.34", vDenied},
		{nil, "api.example.com", vNotAllowed},
	} {
		p, err := Compile(Settings{Domains: tc.domains})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := p.judge(normalizeHost(tc.host)); got != tc.want {
			t.Errorf("%v / %s: %d, want %d", tc.domains, tc.host, got, tc.want)
		}
	}
}

func TestGlobLabel(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"a*b", "ab", true}, {"a*b", "axxb", true}, {"a*b", "axxc", false}, {"*", "", true},
		{"a*b*c", "abc", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "acb", false}, {"*ab", "ab", true},
		{"ab*", "a", false}, {"a*a", "a", false},
	} {
		if got := globLabel(tc.p, tc.s); got != tc.want {
			t.Errorf("globLabel(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
	if strings.Contains("x", "y") {
		t.Fatal()
	}
}

// FuzzCompilePattern: the compiler never panics, refuses with a
// SettingsError only, and a compiled pattern matches hosts without
// panicking; an exact pattern matches its own normalised text.
func FuzzCompilePattern(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com", "**.example.com", "*", "**", "", "exa*mple.com", "*.*.other.org",
		"api.other.org:8080", "[::1]:443", "10.231.0.1", "http://example.com", "a.**.b", "*.", "a*b*c.d", "API.Example.COM."} {
		f.Add(s, "api.example.com")
	}
	f.Fuzz(func(t *testing.T, pat, host string) {
		pt, err := compilePattern(pat)
		if err != nil {
			var se *SettingsError
			if !errors.As(err, &se) || se.Text == "" {
				t.Fatalf("%q: %v", pat, err)
			}
			return
		}
		h := normalizeHost(host)
		a, _ := netip.ParseAddr(h)
		pt.match(h, a.Unmap())
		if pt.kind == exactHost && !pt.addr.IsValid() && !strings.Contains(pat, "*") {
			self := strings.Join(pt.labels, ".")
			if !pt.match(self, netip.Addr{}) {
				if _, err := netip.ParseAddr(self); err != nil {
					t.Fatalf("%q does not match its own host %q", pat, self)
				}
			}
		}
	})
}
