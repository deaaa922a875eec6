package execpolicy

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

func TestAppendAllowPrefix(t *testing.T) {
	home := t.TempDir()
	var p Policy
	if err := p.AppendAllowPrefix(home, []string{"echo", "Hello, \"world\"!", "<&>"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, "rules", "default.rules")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `prefix_rule(pattern=["echo", "Hello, \"world\"!", "<&>"], decision="allow")` + "\n"
	if string(got) != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	if ev := p.Evaluate([]string{"echo", "Hello, \"world\"!", "<&>", "more"}); !ev.PolicyDriven || ev.Decision != Allow {
		t.Errorf("in-memory policy not updated: %+v", ev)
	}
	// The file loads back to the same rule.
	q, err := LoadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if ev := q.Evaluate([]string{"echo", "Hello, \"world\"!", "<&>"}); !ev.Matched {
		t.Errorf("reloaded file does not match: %+v", ev)
	}
	// The same line twice is written once.
	if err := p.AppendAllowPrefix(home, []string{"echo", "Hello, \"world\"!", "<&>"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != want {
		t.Errorf("duplicate line appended:\n%s", again)
	}
}

func TestAppendAllowPrefixAddsMissingNewline(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "rules", "default.rules")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`prefix_rule(pattern=["ls"])`), 0o644); err != nil {
		t.Fatal(err)
	}
	var p Policy
	if err := p.AppendAllowPrefix(home, []string{"git", "status"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "prefix_rule(pattern=[\"ls\"])\nprefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n"
	if string(got) != want {
		t.Errorf("file:\n%q\nwant\n%q", got, want)
	}
}

func TestAppendAllowPrefixErrors(t *testing.T) {
	var p Policy
	if err := p.AppendAllowPrefix(t.TempDir(), nil); err == nil {
		t.Error("empty prefix accepted")
	}
	home := filepath.Join(t.TempDir(), "missing", "home")
	if err := p.AppendAllowPrefix(home, []string{"ls"}); err == nil {
		t.Error("append under a missing CODEX_HOME succeeded")
	}
	if ev := p.Evaluate([]string{"ls"}); ev.Matched {
		t.Errorf("failed append changed the policy: %+v", ev)
	}
}

// Concurrent appends under the lock give whole lines, one per prefix.
func TestAppendAllowPrefixConcurrent(t *testing.T) {
	home := t.TempDir()
	var p Policy
	var wg sync.WaitGroup
	const n = 20
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.AppendAllowPrefix(home, []string{"cmd", strings.Repeat("x", i+1)}); err != nil {
				t.Error(err)
			}
			p.Evaluate([]string{"cmd", "x"})
		}()
	}
	wg.Wait()
	data, _ := os.ReadFile(filepath.Join(home, "rules", "default.rules"))
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	sort.Strings(lines)
	if len(lines) != n {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), n, data)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `prefix_rule(pattern=["cmd", "x`) || !strings.HasSuffix(l, `"], decision="allow")`) {
			t.Errorf("torn line %q", l)
		}
	}
}

// Tokens with escapes survive the JSON rendering and the Starlark reading.
func TestAppendAllowPrefixRoundTrip(t *testing.T) {
	home := t.TempDir()
	var p Policy
	prefix := []string{"tool", "a\u2028b", "\x01\t\n", `back\slash`, "é", "'"}
	if err := p.AppendAllowPrefix(home, prefix); err != nil {
		t.Fatal(err)
	}
	q, err := LoadFiles(filepath.Join(home, "rules", "default.rules"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := q.Evaluate(prefix); !ev.Matched {
		t.Errorf("reloaded rule does not match %q", prefix)
	}
}
