package cli

import (
	"bytes"
	"testing"
)

// TestVersionFlag sets the version as `make build` does at link time
// (-X github.com/codexec/codex/cli.version=...) and checks that --version
// and -V print it on one line of stdout, nothing on stderr, and succeed.
// e2e's TestCLIVersionFromLdflags checks the link-time path on a built
// binary.
func TestVersionFlag(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v9.8.7-test"
	for _, flag := range []string{"--version", "-V"} {
		app := newApp()
		var stdout, stderr bytes.Buffer
		app.Writer, app.ErrWriter = &stdout, &stderr
		err := app.Run([]string{"codex", flag})
		if want := "codex v9.8.7-test (exec-server protocol " + protocolVersion + ")\n"; err != nil || stdout.String() != want || stderr.Len() != 0 {
			t.Errorf("codex %s: %v, stdout %q, stderr %q; want %q", flag, err, stdout.String(), stderr.String(), want)
		}
	}
}
