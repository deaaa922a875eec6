package archtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// goTool returns the path of the go command, or skips the test.
func goTool(t *testing.T) string {
	t.Helper()
	g, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go is not on PATH (%v): the architecture tests run the go command", err)
	}
	return g
}

// runGo runs the go command with extra environment and returns stdout;
// it fails the test with stderr on error.
func runGo(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s (env %q): %v\n%s", strings.Join(args, " "), env, err, stderr.String())
	}
	return out
}

// moduleDeps returns, for every package of our module, its transitive
// dependencies as `go list -deps` computes them for GOOS goos.
func moduleDeps(t *testing.T, goos string) map[string][]string {
	out := runGo(t, []string{"GOOS=" + goos}, "list", "-e", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...")
	deps := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return deps
}

// TestImportDirection enforces the import direction of docs/development.md
// §2 (rules): on Linux, where the server's dependencies
// are all built in, and on darwin.
func TestImportDirection(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		deps := moduleDeps(t, goos)
		for _, v := range violations(deps, rules) {
			t.Errorf("GOOS=%s: %s", goos, v)
		}
	}
}

// TestClientBuildsEverywhere builds the client for systems the server
// does not support: a program that embeds unifiedexec must build there.
func TestClientBuildsEverywhere(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			runGo(t, []string{"GOOS=" + goos, "GOARCH=amd64", "CGO_ENABLED=0"}, "build", module+"/unifiedexec", module+"/wire", module+"/rpc")
		})
	}
}

// directRules forbids direct imports that the transitive rules cannot
// express: sandbox reaches rpc through wire (whose Path its policies
// parse) but does not use JSON-RPC itself.
var directRules = map[string][]string{
	"sandbox": ours("rpc"),
}

// TestDirectImports enforces directRules on the packages' own imports.
func TestDirectImports(t *testing.T) {
	out := runGo(t, nil, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...")
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		rel := strings.TrimPrefix(f[0], module+"/")
		forbid, ok := directRules[rel]
		if !ok {
			continue
		}
		seen[rel] = true
		for _, imp := range f[1:] {
			if slices.Contains(forbid, imp) {
				t.Errorf("%s must not import %s", rel, imp)
			}
		}
	}
	for rel := range directRules {
		if !seen[rel] {
			t.Errorf("%s: no such package (update directRules)", rel)
		}
	}
}
