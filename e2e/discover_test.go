package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCapabilitiesDiscoverV2Replay builds the fixture recorded by
// testdata/discover_record.py (skills under $CODEX_HOME/skills and
// ~/.agents/skills: valid and invalid front matter, nested, hidden, linked
// and looping folders, too deep, agents/openai.yaml metadata, a repository
// skill that must not be listed), starts the server with HOME and
// CODEX_HOME in it and sends the recorded capabilities/discoverV2
// requests (handshake, decoding, sandboxes that deny the skills folder or
// a skill's metadata) over stdio and WebSocket, expecting the reference's
// answers.
func TestCapabilitiesDiscoverV2Replay(t *testing.T) {
	data, err := os.ReadFile("testdata/discover_replay.json")
	if err != nil {
		t.Fatal(err)
	}
	var rp struct {
		Files map[string]string `json:"files"`
		Dirs  []string          `json:"dirs"`
		Links map[string]string `json:"links"`
		Cases []struct {
			Name    string          `json:"name"`
			Phase   string          `json:"phase"`
			Request json.RawMessage `json:"request"`
			Expect  map[string]any  `json:"expect"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &rp); err != nil {
		t.Fatal(err)
	}
	if len(rp.Cases) < 15 {
		t.Fatalf("only %d recorded cases", len(rp.Cases))
	}
	root := t.TempDir()
	for rel, text := range rp.Files {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range rp.Dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range rp.Links {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + root + "/home", "CODEX_HOME=" + root + "/home/.codex"}
	for _, tr := range []struct {
		name string
		open func(*testing.T, []string) *cx
	}{{"stdio", cxStdioEnv}, {"ws", cxWSEnv}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			w := &walkConn{c: tr.open(t, env), phase: "pre-init"}
			for _, rc := range rp.Cases {
				w.to(t, rc.Phase)
				got := w.ask(t, rc.Request, root)
				var want map[string]any
				wb, _ := json.Marshal(rc.Expect)
				if err := json.Unmarshal([]byte(strings.ReplaceAll(string(wb), "$ROOT", root)), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					gb, _ := json.Marshal(got)
					wb, _ := json.Marshal(want)
					t.Errorf("%s:\n got %s\nwant %s", rc.Name, gb, wb)
				}
			}
		})
	}
}
