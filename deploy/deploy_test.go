package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	if strings.Join(kinds, ",") != "Secret,Deployment,Service" {
		t.Fatalf("kinds %v, want Secret, Deployment, Service", kinds)
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
