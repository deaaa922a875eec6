package proc_test

import (
	"slices"
	"testing"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/wire"
)

// The server's own CODEX_*TOKEN* variables never reach a child through
// inheritance, even when the request turns the default excludes off.
func TestBuildEnvKeepsServerTokens(t *testing.T) {
	base := []string{"PATH=/bin", "CODEX_EXEC_SERVER_TOKEN=s3cret", "codex_other_token=x", "CODEX_HOME=/h"}
	pol := &wire.EnvPolicy{Inherit: "all", IgnoreDefaultExcludes: true}
	got := proc.BuildEnv(base, pol, nil)
	if want := []string{"CODEX_HOME=/h", "PATH=/bin"}; !slices.Equal(got, want) {
		t.Errorf("inherit all: %q, want %q", got, want)
	}
	pol.Set = map[string]string{"CODEX_EXEC_SERVER_TOKEN": "given"}
	got = proc.BuildEnv(base, pol, nil)
	if !slices.Contains(got, "CODEX_EXEC_SERVER_TOKEN=given") {
		t.Errorf("an explicit set was dropped: %q", got)
	}
}
