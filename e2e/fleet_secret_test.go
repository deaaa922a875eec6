package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shippedPlaceholder is the signing secret deploy/kubernetes/exec-server.yaml
// used to ship: public, so a server using it accepts tokens anyone can sign.
const shippedPlaceholder = "replace-me-with-at-least-32-random-bytes-of-key"

// startWithSecret starts exec-server in signed-bearer-token mode with a
// secret file holding secret and returns its exit status and stderr, or
// started=true (and stops it) if it printed its URL within 20 s.
func startWithSecret(t *testing.T, path, secret string) (started bool, code int, stderr string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "exec-server", "--listen", "ws://127.0.0.1:0",
		"--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", path)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	var errBuf lockedBuffer
	cmd.Stderr = &errBuf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.HasPrefix(line, "ws://") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return true, 0, errBuf.String()
	}
	_ = cmd.Wait()
	return false, cmd.ProcessState.ExitCode(), errBuf.String()
}

// TestPlaceholderSecretRefused: a signing secret the server can tell is a
// placeholder — the text the Kubernetes example used to ship, one with a
// placeholder word, too few distinct bytes, a short unit repeated — stops
// start-up with a usage error naming the file and the rule, never showing
// the secret (docs/operations.md §2). The deploy example's generator
// (`head -c 32 /dev/urandom | base64`) makes one it accepts. The server used
// to start with the shipped text.
func TestPlaceholderSecretRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, secret := range map[string]string{
		"shipped":     shippedPlaceholder + "\n",
		"change-me":   "Change_Me-7f3a9c2e41b8d6f05a1e9c3b7d2f8a46",
		"placeholder": "prod-PLACEHOLDER-key-4f9a1c7e2b8d3f6a0c5e",
		"example":     "an.Example.signing.key.for.the.docs.only!",
		"one char":    strings.Repeat("x", 48),
		"few bytes":   strings.Repeat("ab12", 3) + strings.Repeat("21ba", 6),
		"repeated":    strings.Repeat("k3Y9-qZ7", 5),
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		started, code, stderr := startWithSecret(t, path, secret)
		if started {
			t.Errorf("%s: the server started with a placeholder secret", name)
			continue
		}
		if code != 2 || !strings.Contains(stderr, "--ws-shared-secret-file: shared secret file "+path+" ") ||
			!strings.Contains(stderr, "placeholder") || strings.Contains(stderr, strings.TrimSpace(secret)) {
			t.Errorf("%s: exit %d, stderr %q; want status 2 naming the file and the rule, not the secret", name, code, stderr)
		}
	}
	gen, err := exec.Command("/bin/sh", "-c", "head -c 32 /dev/urandom | base64").Output()
	if err != nil {
		t.Fatal(err)
	}
	if started, code, stderr := startWithSecret(t, filepath.Join(dir, "generated"), string(gen)); !started {
		t.Errorf("a generated secret was refused: exit %d, %s", code, stderr)
	}
}
