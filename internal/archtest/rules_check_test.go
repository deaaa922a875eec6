package archtest

import (
	"slices"
	"testing"
)

// TestViolations checks the rule checker itself on a synthetic module, so
// TestImportDirection cannot pass by checking nothing.
func TestViolations(t *testing.T) {
	deps := map[string][]string{
		module + "/rpc":         {"fmt", module + "/internal/x"},
		module + "/wire":        {"fmt", module + "/rpc"},
		module + "/unifiedexec": {module + "/wire", module + "/proc", landlock + "/landlock", psx},
	}
	rs := []rule{
		{Pkg: "rpc", Only: []string{}},
		{Pkg: "wire", Only: []string{"rpc"}},
		{Pkg: "unifiedexec", Forbid: append(ours("proc"), landlock+"/...", psx+"/...")},
		{Pkg: "gone", Forbid: ours("proc")},
	}
	got := violations(deps, rs)
	want := []string{
		`rpc may depend only on [] of ours, not on ` + module + `/internal/x`,
		"unifiedexec must not depend on " + module + "/proc",
		"unifiedexec must not depend on " + landlock + "/landlock",
		"unifiedexec must not depend on " + psx,
		"gone: no such package (update the rule)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%q\nwant\n%q", got, want)
	}
	if matches(module+"/proc/...", module+"/process") || !matches(module+"/proc/...", module+"/proc/x") {
		t.Error("tree patterns match by path element")
	}
}
