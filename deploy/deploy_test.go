package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/codexec/codex/internal/testbin"
)

// binary is the codex binary the unit's ExecStart is pointed at.
var binary string

func TestMain(m *testing.M) { testbin.Main(m, &binary, "..") }

// TestSystemdUnitVerifies runs `systemd-analyze verify` on the unit, with
// ExecStart pointed at a freshly built binary (verify checks that it is
// executable). Any output, warnings included, fails the test.
func TestSystemdUnitVerifies(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile("systemd/codex-exec-server.service")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("ExecStart=/usr/local/bin/codex exec-server ")) {
		t.Fatal("ExecStart does not run /usr/local/bin/codex exec-server")
	}
	path := filepath.Join(t.TempDir(), "codex-exec-server.service")
	unit = bytes.ReplaceAll(unit, []byte("/usr/local/bin/codex"), []byte(binary))
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestSystemdUnitKeepsSandbox fails if the unit turns on an option that
// breaks the sandbox (deploy/README.md says why for each).
func TestSystemdUnitKeepsSandbox(t *testing.T) {
	unit, err := os.ReadFile("systemd/codex-exec-server.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(unit), "\n") {
		for _, bad := range []string{"RestrictNamespaces=", "SystemCallFilter=", "ProtectControlGroups=", "PrivateUsers=", "CapabilityBoundingSet="} {
			if strings.HasPrefix(strings.TrimSpace(line), bad) {
				t.Errorf("the unit sets %q, which breaks the sandbox", line)
			}
		}
	}
}

// TestKubernetesManifest parses every YAML document of the example and
// checks the kinds and what the README promises of the workspace pod.
func TestKubernetesManifest(t *testing.T) {
	docs := yamlDocs(t, "kubernetes/exec-server.yaml")
	var kinds []string
	var deployment map[string]any
	for _, d := range docs {
		kind, _ := d["kind"].(string)
		if d["apiVersion"] == nil {
			t.Errorf("a %q document has no apiVersion", kind)
		}
		kinds = append(kinds, kind)
		if kind == "Deployment" {
			deployment = d
		}
	}
	if strings.Join(kinds, ",") != "Deployment,Service" {
		t.Fatalf("kinds %v, want Deployment, Service (no Secret: TestKubernetesKeyNotShipped)", kinds)
	}
	pod := dig(t, deployment, "spec", "template", "spec")
	inits, _ := pod["initContainers"].([]any)
	if len(inits) != 1 || !strings.Contains(str(inits[0].(map[string]any)["args"]), "install --to") {
		t.Errorf("the init container does not run codex install --to: %v", inits)
	}
	ctrs, _ := pod["containers"].([]any)
	if len(ctrs) != 1 {
		t.Fatalf("containers: %v", ctrs)
	}
	c := ctrs[0].(map[string]any)
	args := str(c["command"]) + " " + str(c["args"])
	for _, want := range []string{"exec-server", "--listen=ws://$(POD_IP):", "--ws-auth=signed-bearer-token", "--ws-shared-secret-file="} {
		if !strings.Contains(args, want) {
			t.Errorf("the server's command line %q lacks %q", args, want)
		}
	}
	if p := dig(t, c, "readinessProbe", "httpGet"); p["path"] != "/readyz" {
		t.Errorf("readiness probe %v, want /readyz", p)
	}
	sc := dig(t, c, "securityContext")
	if !strings.Contains(str(dig(t, sc, "capabilities")["add"]), "SYS_ADMIN") || dig(t, sc, "seccompProfile")["type"] != "Unconfined" {
		t.Errorf("security context %v lacks what the sandbox needs", sc)
	}
}

// yamlDocs decodes every document of a multi-document YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(docs)+1, err)
		}
		docs = append(docs, d)
	}
}

// dig follows keys through nested maps, failing if one is missing.
func dig(t *testing.T, m map[string]any, keys ...string) map[string]any {
	t.Helper()
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("no map at %q (in %v)", k, keys)
		}
		m = next
	}
	return m
}

// str renders a string list (or a value) as one space-separated string.
func str(v any) string {
	if l, ok := v.([]any); ok {
		var parts []string
		for _, e := range l {
			parts = append(parts, str(e))
		}
		return strings.Join(parts, " ")
	}
	s, _ := v.(string)
	return s
}

// TestContainerfileScratch checks the recipe's shape: a static build, and
// a final stage FROM scratch that holds the binary alone and installs it.
func TestContainerfileScratch(t *testing.T) {
	data, err := os.ReadFile("container/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	var final []string // instructions of the last stage
	static := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "FROM ") {
			final = nil
		}
		static = static || strings.Contains(line, "CGO_ENABLED=0 go build")
		final = append(final, line)
	}
	want := []string{"FROM scratch", "COPY --from=build /out/codex /codex", `ENTRYPOINT ["/codex"]`, `CMD ["install", "--to", "/shared/bin"]`}
	if strings.Join(final, "\n") != strings.Join(want, "\n") {
		t.Errorf("final stage:\n%s\nwant:\n%s", strings.Join(final, "\n"), strings.Join(want, "\n"))
	}
	if !static {
		t.Error("the build stage does not build with CGO_ENABLED=0")
	}
}

// TestKubernetesKeyNotShipped: the example creates no signing key (a key
// in a published file is public): no document carries data, the pod mounts
// a Secret the operator creates with the command in the file's comment,
// and that command makes a key the server accepts, while the text the
// example used to ship is refused at start-up.
func TestKubernetesKeyNotShipped(t *testing.T) {
	const path = "kubernetes/exec-server.yaml"
	for _, d := range yamlDocs(t, path) {
		if d["data"] != nil || d["stringData"] != nil {
			t.Errorf("a %v document carries data", d["kind"])
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`kubectl create secret generic (\S+) --from-literal=ws-secret="\$\((.+)\)"`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("no `kubectl create secret generic NAME --from-literal=ws-secret=\"$(GENERATOR)\"` in the comments")
	}
	if !bytes.Contains(raw, []byte("secretName: "+string(m[1])+"\n")) {
		t.Errorf("the pod does not mount the Secret %s the comment creates", m[1])
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, m[0]) {
		t.Errorf("README.md does not show the command of the manifest: %s", m[0])
	}
	key, err := exec.Command("/bin/sh", "-c", string(m[2])).Output()
	if err != nil {
		t.Fatalf("the generator %s: %v", m[2], err)
	}
	dir := t.TempDir()
	if out, ok := startsWithKey(t, filepath.Join(dir, "generated"), key); !ok {
		t.Errorf("the server refused a key made by %s: %s", m[2], out)
	}
	out, ok := startsWithKey(t, filepath.Join(dir, "shipped"), []byte("replace-me-with-at-least-32-random-bytes-of-key\n"))
	if ok || !strings.Contains(out, "placeholder") {
		t.Errorf("the server did not refuse the text the example used to ship: %s", out)
	}
}

// startsWithKey writes key to path and reports whether exec-server starts
// with it as its signing key (it prints its URL), with its stderr.
func startsWithKey(t *testing.T, path string, key []byte) (string, bool) {
	t.Helper()
	if err := os.WriteFile(path, key, 0o400); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "exec-server", "--listen=ws://127.0.0.1:0",
		"--ws-auth=signed-bearer-token", "--ws-shared-secret-file="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	started := strings.HasPrefix(line, "ws://")
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	return stderr.String(), started
}
