package execpolicy

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// load writes src to a rules file and loads it.
func load(t testing.TB, src string) (*Policy, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.rules")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadFiles(path)
}

func mustLoad(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := load(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const specExample = `
prefix_rule(pattern=["git", "reset", "--hard"], decision="forbidden",
            justification="destructive operation",
            match=[["git", "reset", "--hard"]],
            not_match=[["git", "reset", "--keep"], "git reset --merge"])
prefix_rule(pattern=["ls"], match=[["ls"], ["ls", "-l"], ["ls", "-a", "."]])
prefix_rule(pattern=["cp"], decision="prompt", match=[["cp", "foo", "bar"], "cp -r src dest"])
prefix_rule(pattern=[["bash", "sh"], ["-c", "-l"]])
prefix_rule(pattern=["npm", ["i", "install"], ["--legacy-peer-deps", "--no-save"]])
prefix_rule(pattern=["git"], decision="prompt")
prefix_rule(pattern=["git", "commit"], decision="forbidden", justification="no commits")
`

func TestEvaluateTable(t *testing.T) {
	p := mustLoad(t, specExample)
	for _, tc := range []struct {
		cmd      string
		decision Decision
		prefixes [][]string
		matched  bool
		driven   bool
	}{
		{"bash -c echo", Allow, [][]string{{"bash", "-c"}}, true, true},
		{"sh -l echo", Allow, [][]string{{"sh", "-l"}}, true, true},
		{"sh -x", Allow, nil, false, false},
		{"npm install --no-save leftpad", Allow, [][]string{{"npm", "install", "--no-save"}}, true, true},
		{"npm i --legacy-peer-deps", Allow, [][]string{{"npm", "i", "--legacy-peer-deps"}}, true, true},
		{"npm ci --no-save", Allow, nil, false, false},
		{"git status", Prompt, [][]string{{"git"}}, true, true},
		{"git commit -m hi", Forbidden, [][]string{{"git"}, {"git", "commit"}}, true, true},
		{"git reset --hard", Forbidden, [][]string{{"git", "reset", "--hard"}, {"git"}}, true, true},
		{"git --config x status", Prompt, [][]string{{"git"}}, true, true},
		{"ls -l", Allow, [][]string{{"ls"}}, true, true},
		{"/bin/ls", Allow, nil, false, false},
		{"LS", Allow, nil, false, false},
		{"cp a b", Prompt, [][]string{{"cp"}}, true, true},
		{"rm -rf /tmp/x", Prompt, nil, false, false},
		{"rm -f x", Prompt, nil, false, false},
		{"rm x", Allow, nil, false, false},
		{"make", Allow, nil, false, false},
	} {
		cmd := strings.Fields(tc.cmd)
		ev := p.Evaluate(cmd)
		var prefixes [][]string
		for _, m := range ev.Matches {
			if !m.Heuristic {
				prefixes = append(prefixes, m.MatchedPrefix)
			}
		}
		if ev.Decision != tc.decision || !reflect.DeepEqual(prefixes, tc.prefixes) ||
			ev.Matched != tc.matched || ev.PolicyDriven != tc.driven {
			t.Errorf("%q: %+v; want %v %q matched=%v driven=%v", tc.cmd, ev, tc.decision, tc.prefixes, tc.matched, tc.driven)
		}
		if !tc.matched && (len(ev.Matches) != 1 || !ev.Matches[0].Heuristic) {
			t.Errorf("%q: want one heuristic entry, got %+v", tc.cmd, ev.Matches)
		}
	}
}

func TestPolicyDrivenNeedsRuleWithOverallDecision(t *testing.T) {
	p := mustLoad(t, `prefix_rule(pattern=["x"], decision="allow")`)
	if ev := p.Evaluate([]string{"x"}); !ev.PolicyDriven || ev.Decision != Allow {
		t.Errorf("explicit allow: %+v", ev)
	}
	var empty Policy
	ev := empty.Evaluate([]string{"/bin/rm", "-rf", "/"})
	if ev.Decision != Prompt || ev.PolicyDriven || ev.Matched {
		t.Errorf("heuristic prompt: %+v", ev)
	}
	if ev := empty.Evaluate(nil); ev.Decision != Allow || ev.Matched {
		t.Errorf("empty command: %+v", ev)
	}
	var none *Policy
	if ev := none.Evaluate([]string{"git", "reset", "--hard"}); ev.Decision != Prompt || ev.Matched {
		t.Errorf("nil policy: %+v", ev)
	}
	if none.NetworkRules() != nil || none.AppendAllowPrefix(t.TempDir(), []string{"ls"}) == nil {
		t.Error("nil policy: network rules or an amendment")
	}
}

func TestMightBeDangerous(t *testing.T) {
	for cmd, want := range map[string]bool{
		"rm -rf /":                     true,
		"rm -f x":                      true,
		"rm -fr x":                     true,
		"rm -r -f x":                   true,
		"rm --force x":                 true,
		"/bin/rm -rf /":                true,
		"rm x":                         false,
		"rm -r x":                      false,
		"rm -- -f":                     false,
		"git reset --hard":             true,
		"git reset":                    true,
		"/usr/bin/git reset --hard":    true,
		"git -C . reset --hard":        true,
		"git rm x":                     true,
		"git status":                   false,
		"git checkout reset":           false,
		"git branch -d x":              true,
		"git branch -vD x":             true,
		"git branch x":                 false,
		"git push --force origin main": true,
		"git push origin +main":        true,
		"git push origin :old":         true,
		"git push origin main":         false,
		"git clean -fdx":               true,
		"git clean -n":                 false,
		"sudo rm -rf /":                true,
		"sudo ls":                      false,
		"ls":                           false,
		"":                             false,
	} {
		if got := MightBeDangerous(strings.Fields(cmd)); got != want {
			t.Errorf("MightBeDangerous(%q) = %v, want %v", cmd, got, want)
		}
	}
	for script, want := range map[string]bool{
		"git reset --hard":         true,
		"echo hi && rm -rf build":  true,
		"ls | grep x ; git status": false,
	} {
		for _, sh := range []string{"bash", "/bin/sh", "zsh"} {
			if got := MightBeDangerous([]string{sh, "-lc", script}); got != want {
				t.Errorf("MightBeDangerous(%s -lc %q) = %v, want %v", sh, script, got, want)
			}
		}
	}
}

func TestMatchesResolveHostExecutables(t *testing.T) {
	p := mustLoad(t, `
host_executable(name="git", paths=["/usr/bin/git"])
prefix_rule(pattern=["git", "status"])
prefix_rule(pattern=["rm"], decision="forbidden")
`)
	opts := MatchOptions{ResolveHostExecutables: true}
	if ms := p.Matches([]string{"/usr/bin/git", "status"}, MatchOptions{}); ms != nil {
		t.Errorf("without resolution: %+v", ms)
	}
	ms := p.Matches([]string{"/usr/bin/../bin/git", "status"}, opts)
	if len(ms) != 1 || ms[0].ResolvedProgram != "/usr/bin/git" || !reflect.DeepEqual(ms[0].MatchedPrefix, []string{"git", "status"}) {
		t.Errorf("listed path: %+v", ms)
	}
	if ms := p.Matches([]string{"/opt/git", "status"}, opts); ms != nil {
		t.Errorf("unlisted path: %+v", ms)
	}
	if ms := p.Matches([]string{"/bin/rm", "x"}, opts); len(ms) != 1 || ms[0].Decision != Forbidden {
		t.Errorf("undeclared name: %+v", ms)
	}
}

func TestNetworkRulesKept(t *testing.T) {
	p := mustLoad(t, `network_rule(host="Example.COM:8080", protocol="http-connect", decision="deny", justification="j")`)
	want := []NetworkRule{{Host: "example.com", Protocol: "https", Decision: Forbidden, Justification: "j"}}
	if got := p.NetworkRules(); !reflect.DeepEqual(got, want) {
		t.Errorf("NetworkRules() = %+v, want %+v", got, want)
	}
}

func TestCanonicalMatching(t *testing.T) {
	p := mustLoad(t, `prefix_rule(pattern=["Straße", ["Status"]], canonical_matching=True)`)
	for _, cmd := range [][]string{{"STRASSE", "status"}, {"straße", "STATUS"}} {
		if ms := p.Matches(cmd, MatchOptions{}); len(ms) != 1 || !reflect.DeepEqual(ms[0].MatchedPrefix, cmd) {
			t.Errorf("%q: %+v", cmd, ms)
		}
	}
}

// FuzzEvaluate checks Evaluate's invariants on arbitrary commands.
func FuzzEvaluate(f *testing.F) {
	p := mustLoad(f, specExample)
	f.Add("git commit -m x")
	f.Add("rm -rf /")
	f.Add("bash -lc 'git reset --hard'")
	f.Fuzz(func(t *testing.T, s string) {
		cmd, err := SplitShell(s)
		if err != nil {
			return
		}
		ev := p.Evaluate(cmd)
		if len(ev.Matches) == 0 {
			t.Fatal("no matches and no heuristic entry")
		}
		strictest := Allow
		for _, m := range ev.Matches {
			strictest = strictest.Stricter(m.Decision)
			if m.Heuristic == ev.Matched {
				t.Fatalf("%q: Matched=%v with entry %+v", cmd, ev.Matched, m)
			}
			if !m.Heuristic && (len(m.MatchedPrefix) > len(cmd) || !reflect.DeepEqual(m.MatchedPrefix, cmd[:len(m.MatchedPrefix)])) {
				t.Fatalf("%q: prefix %q is not a prefix", cmd, m.MatchedPrefix)
			}
		}
		if strictest != ev.Decision || ev.PolicyDriven != ev.Matched {
			t.Fatalf("%q: %+v", cmd, ev)
		}
	})
}

// BenchmarkEvaluate measures one decision, as the shell tool makes per
// intercepted exec.
func BenchmarkEvaluate(b *testing.B) {
	p := mustLoad(b, specExample)
	cmds := [][]string{{"git", "commit", "-m", "x"}, {"npm", "install", "--no-save", "x"}, {"true"}, {"rm", "-rf", "/tmp/x"}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Evaluate(cmds[i%len(cmds)])
	}
}

func TestProgramsAndHostExecutables(t *testing.T) {
	p, err := load(t, `prefix_rule(pattern=["git", "status"])
prefix_rule(pattern=["Git", "log"])
prefix_rule(pattern=[["ls", "dir"]])
host_executable(name="git", paths=["/usr/bin/git", "/opt/git/bin/git"])
`)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Programs()
	slices.Sort(got)
	if !slices.Equal(got, []string{"dir", "git", "ls"}) && !slices.Equal(got, []string{"Git", "dir", "ls"}) {
		t.Errorf("Programs() = %v", got)
	}
	if paths, ok := p.HostExecutables("git"); !ok || !slices.Equal(paths, []string{"/usr/bin/git", "/opt/git/bin/git"}) {
		t.Errorf("HostExecutables(git) = %v, %v", paths, ok)
	}
	if _, ok := p.HostExecutables("ls"); ok {
		t.Error("HostExecutables(ls) declared")
	}
}
