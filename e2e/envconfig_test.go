package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envconfigReplay is testdata/envconfig_replay.json, recorded from the
// reference exec-server 0.169.0 by testdata/envconfig_record.py: the files
// of a fixture tree and, per request, the reference's response. $ROOT
// stands for the fixture's folder, $HOSTNAME for the host name.
type envconfigReplay struct {
	Files map[string]string `json:"files"`
	Dirs  []string          `json:"dirs"`
	Links map[string]string `json:"links"`
	Cases []struct {
		Name          string          `json:"name"`
		Phase         string          `json:"phase"` // pre-init, pre-initialized, ready
		Request       json.RawMessage `json:"request"`
		Expect        map[string]any  `json:"expect"`
		MessagePrefix bool            `json:"messagePrefix"` // the error text is the TOML parser's past this prefix
	} `json:"cases"`
}

// TestEnvironmentConfigReadReplay builds the recorded fixture (a user
// config.toml with MCP servers and project trust, trusted and untrusted
// projects, a symlinked project, a project file that is not TOML), starts
// the server with HOME and CODEX_HOME in it, and sends the recorded
// environmentConfig/read requests — before initialize, before initialized
// and after the handshake — over stdio and WebSocket, expecting the
// reference's answers.
func TestEnvironmentConfigReadReplay(t *testing.T) {
	data, err := os.ReadFile("testdata/envconfig_replay.json")
	if err != nil {
		t.Fatal(err)
	}
	var rp envconfigReplay
	if err := json.Unmarshal(data, &rp); err != nil {
		t.Fatal(err)
	}
	if len(rp.Cases) < 25 {
		t.Fatalf("only %d recorded cases", len(rp.Cases))
	}
	root := t.TempDir()
	sub := func(s string) string { return strings.ReplaceAll(s, "$ROOT", root) }
	for rel, text := range rp.Files {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(sub(text)), 0o644); err != nil {
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
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + root + "/home", "CODEX_HOME=" + root + "/home/.codex"}
	for _, tr := range []struct {
		name string
		open func(*testing.T, []string) *cx
	}{{"stdio", cxStdioEnv}, {"ws", cxWSEnv}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := tr.open(t, env)
			phase := "pre-init"
			for _, rc := range rp.Cases {
				if phase == "pre-init" && rc.Phase != phase {
					result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
					phase = "pre-initialized"
				}
				if phase == "pre-initialized" && rc.Phase != phase {
					c.write(`{"method":"initialized"}`)
					phase = "ready"
				}
				var req map[string]any
				if err := json.Unmarshal([]byte(sub(string(rc.Request))), &req); err != nil {
					t.Fatal(err)
				}
				id := c.nextID
				c.nextID++
				req["id"] = id
				b, _ := json.Marshal(req)
				c.write(string(b))
				got := c.wait(id, 15*time.Second)
				delete(got, "id")
				var want map[string]any
				wb, _ := json.Marshal(rc.Expect)
				if err := json.Unmarshal([]byte(strings.ReplaceAll(sub(string(wb)), "$HOSTNAME", host)), &want); err != nil {
					t.Fatal(err)
				}
				if rc.MessagePrefix {
					ge, _ := got["error"].(map[string]any)
					we := want["error"].(map[string]any)
					msg, _ := ge["message"].(string)
					if ge == nil || ge["code"] != we["code"] || !strings.HasPrefix(msg, we["message"].(string)) || msg == we["message"] {
						t.Errorf("%s: got %v, want code %v and a message past %q", rc.Name, got, we["code"], we["message"])
					}
					continue
				}
				if !reflect.DeepEqual(normalize(got), normalize(want)) {
					gb, _ := json.Marshal(got)
					wb, _ := json.Marshal(want)
					t.Errorf("%s:\n got %s\nwant %s", rc.Name, gb, wb)
				}
			}
		})
	}
}

// flagMethods is what each capability flag of environmentInfo stands for,
// from the reference's inventory (docs/protocol.md §6.3), kept here apart from the server's own table so that the two check each
// other. A flag the server turns on must be listed here with methods.
var flagMethods = map[string][]string{
	"networkProxyLaunch":         {"process/start"},
	"networkProxyReviewDomains":  {"process/start"},
	"fsWatchMissing":             {"fs/watchMissing"},
	"environmentConfigRead":      {"environmentConfig/read"},
	"capabilityDiscoveryV2":      {"capabilities/discoverV2"},
	"capabilityDiscoverySandbox": {"capabilities/discoverV2"},
	"httpHeaderEnvVars":          {"http/request"},
	"sandboxedFileStreaming":     {"fs/open", "fs/readBlock", "fs/writeBlock", "fs/close"},
	"fileWriteStreaming":         {"fs/open", "fs/writeBlock", "fs/close"},
}

// referenceFlags are the 15 flags the reference 0.169.0 reports, all of
// them always present (probe info.capabilities_and_extras).
var referenceFlags = []string{"networkProxyLaunch", "networkProxyReviewDomains", "credentialMasking",
	"credentialMaskingCustomProviders", "capabilityDiscoverySandbox", "fsWatchMissing", "capabilityDiscoveryV2",
	"environmentConfigRead", "httpHeaderEnvVars", "sandboxedFileStreaming", "fileWriteStreaming", "shellSnapshotV2",
	"windowsMxc", "linuxRootWritePreservesDevices", "linuxApprovedRootWritePreservesRestrictions"}

// TestAdvertisedCapabilitiesAnswer reads the capability flags of
// initialize, over stdio and WebSocket, checks that environment/info
// reports the same, and calls every method behind each flag that is on:
// none may answer -32601. The flags are the reference's 15, and
// environmentInfo carries the reference's extras (providerId;
// prependPathDirs left out, as the reference does for a binary outside its
// npm package).
func TestAdvertisedCapabilitiesAnswer(t *testing.T) {
	type envInfo struct {
		ProviderID      string          `json:"providerId"`
		PrependPathDirs json.RawMessage `json:"prependPathDirs"`
		Capabilities    map[string]bool `json:"capabilities"`
	}
	for _, tr := range []struct {
		name string
		open func(*testing.T) *cx
	}{{"stdio", cxStdio}, {"ws", cxWS}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := tr.open(t)
			var init struct {
				EnvironmentInfo envInfo `json:"environmentInfo"`
			}
			if err := json.Unmarshal([]byte(result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))), &init); err != nil {
				t.Fatal(err)
			}
			c.write(`{"method":"initialized"}`)
			info := init.EnvironmentInfo
			var again envInfo
			if err := json.Unmarshal([]byte(result(t, c.call("environment/info", nil))), &again); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, info) {
				t.Errorf("environment/info %+v differs from initialize's %+v", again, info)
			}
			if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(info.ProviderID) {
				t.Errorf("providerId %q is not sha256: and 64 hex digits", info.ProviderID)
			}
			if info.PrependPathDirs != nil {
				t.Errorf("prependPathDirs %s, want it left out", info.PrependPathDirs)
			}
			if len(info.Capabilities) != len(referenceFlags) {
				t.Errorf("capabilities %v, want the reference's %d flags", info.Capabilities, len(referenceFlags))
			}
			for _, f := range referenceFlags {
				if _, ok := info.Capabilities[f]; !ok {
					t.Errorf("flag %s missing", f)
				}
			}
			if !info.Capabilities["environmentConfigRead"] {
				t.Errorf("environmentConfigRead is off, but the method is served")
			}
			for flag, on := range info.Capabilities {
				if !on {
					continue
				}
				ms, ok := flagMethods[flag]
				if !ok {
					t.Errorf("flag %s is on, but this test does not know its methods: list them in flagMethods", flag)
				}
				for _, m := range ms {
					r := c.call(m, map[string]any{})
					if e, _ := r["error"].(map[string]any); e != nil && e["code"] == float64(-32601) {
						t.Errorf("flag %s is on, but %s answers %v", flag, m, e)
					}
				}
			}
		})
	}
}

// TestEnvironmentConfigReadCodexHome holds the answers when CODEX_HOME is
// not a folder to the reference's (probe envcfg.codex_home): -32603 naming
// the value; an unset CODEX_HOME is ~/.codex, which need not exist.
func TestEnvironmentConfigReadCodexHome(t *testing.T) {
	// CODEX_HOME naming a file is config.TestHomeErrors': our server does
	// not start with it, as its permissions file cannot be read.
	missing := filepath.Join(t.TempDir(), "missing")
	params := map[string]any{"cwd": "file:///x", "configPaths": [][]string{{"a"}}, "requirementsPaths": [][]string{}}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"CODEX_HOME=" + missing}, `{"code":-32603,"message":"failed to find Codex home: CODEX_HOME points to \"` + missing + `\", but that path does not exist"}`},
		{[]string{"CODEX_HOME=rel/x"}, `{"code":-32603,"message":"failed to find Codex home: CODEX_HOME points to \"rel/x\", but that path does not exist"}`},
		{[]string{"HOME=" + missing}, ""},
	} {
		c := cxStdioEnv(t, tc.env)
		result(t, c.call("initialize", map[string]any{"clientName": "e2e"}))
		c.write(`{"method":"initialized"}`)
		r := c.call("environmentConfig/read", params)
		if tc.want == "" {
			want := `{"userHomeDir":"file://` + missing + `","codexHomeDir":"file://` + missing + `/.codex","hostname":"` + hostname(t) + `","config":{"layers":[],"cloudInsertionIndex":0},"requirements":{"layers":[],"cloudInsertionIndex":0}}`
			var w any
			if err := json.Unmarshal([]byte(want), &w); err != nil {
				t.Fatal(err)
			}
			if got := result(t, r); !reflect.DeepEqual(normalize(r["result"]), w) {
				t.Errorf("%v:\n got %s\nwant %s", tc.env, got, want)
			}
			continue
		}
		if got, _ := json.Marshal(r["error"]); string(got) != tc.want {
			t.Errorf("%v:\n got %s\nwant %s", tc.env, got, tc.want)
		}
	}
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
