package unifiedexec

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// ourVersionLine is the --version line of this project's binary
// (versionLine in the repository's version.go): "codex VERSION
// (exec-server protocol X.Y.Z)". The Codex CLI prints "codex-cli X.Y.Z".
var ourVersionLine = regexp.MustCompile(`^codex \S+ \(exec-server protocol [0-9][^()\s]*\)$`)

// versionCheckTimeout bounds the --version run of a candidate binary.
const versionCheckTimeout = 5 * time.Second

// findOurCodex looks opts.Path (default "codex") up in $PATH and returns it
// if its --version line is ours; otherwise an error that names what was
// found and how to choose a binary (docs/client.md §3.1).
func findOurCodex(ctx context.Context, opts SuperviseOptions) (string, error) {
	name := opts.Path
	if name == "" {
		name = "codex"
	}
	exe, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("locating the codex binary: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, versionCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "--version")
	cmd.Env = opts.Env
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	line, _, more := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err == nil && !more && ourVersionLine.MatchString(line) {
		return exe, nil
	}
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	why := fmt.Sprintf("its --version printed %q", line)
	switch {
	case err != nil:
		why += fmt.Sprintf(" (%v)", err)
	case more:
		why += " and more lines"
	}
	return "", fmt.Errorf("the %s found in $PATH (%s) is not this project's codex exec-server: %s, not \"codex VERSION (exec-server protocol X.Y.Z)\"; set SuperviseOptions.Path to the path of our binary", name, exe, why)
}
