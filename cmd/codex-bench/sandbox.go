package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/codexec/codex/wire"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// workspaceWritePermissions is the permission profile the 0.169.0 client
// sends in --sandbox workspace-write mode (docs/protocol.md §8.1).
const workspaceWritePermissions = `{"type":"managed",` +
	`"file_system":{"type":"restricted","entries":[` +
	`{"path":{"type":"special","value":{"kind":"root"}},"access":"read"},` +
	`{"path":{"type":"special","value":{"kind":"project_roots"}},"access":"write"},` +
	`{"path":{"type":"special","value":{"kind":"slash_tmp"}},"access":"write"},` +
	`{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"write"},` +
	`{"path":{"type":"special","value":{"kind":"project_roots","subpath":".git"}},"access":"read","missing_path_behavior":"skip"},` +
	`{"path":{"type":"special","value":{"kind":"project_roots","subpath":".agents"}},"access":"read","missing_path_behavior":"skip"},` +
	`{"path":{"type":"special","value":{"kind":"project_roots","subpath":".codex"}},"access":"read","missing_path_behavior":"skip"},` +
	`{"path":{"type":"special","value":{"kind":"project_roots","subpath":".aws"}},"access":"read","missing_path_behavior":"skip"}]},` +
	`"network":"restricted"}`

// PolicyContext is the fs variant's policy context.
type PolicyContext struct {
	Cwd            string   `json:"cwd"`
	WorkspaceRoots []string `json:"workspaceRoots"`
}

// SandboxObject is the sandbox member of process/start and fs/* requests.
type SandboxObject struct {
	Permissions          json.RawMessage `json:"permissions"`
	Cwd                  string          `json:"cwd"`
	WorkspaceRoots       []string        `json:"workspaceRoots"`
	PolicyContext        *PolicyContext  `json:"policyContext,omitempty"`
	UserHomeDir          string          `json:"userHomeDir,omitempty"`
	WindowsSandboxLevel  string          `json:"windowsSandboxLevel"`
	WindowsProxySettings string          `json:"windowsSandboxProxySettingsMode,omitempty"`
	UseLegacyLandlock    bool            `json:"useLegacyLandlock"`
}

// fileURI turns an absolute path into a file:// URI.
func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// workspaceSandbox is the workspace-write object for workspace ws; fs
// selects the fs-method variant (policyContext and userHomeDir, no proxy
// settings mode).
func workspaceSandbox(ws, home string, fs bool) *SandboxObject {
	s := &SandboxObject{
		Permissions:         json.RawMessage(workspaceWritePermissions),
		Cwd:                 fileURI(ws),
		WorkspaceRoots:      []string{fileURI(ws)},
		WindowsSandboxLevel: "disabled",
	}
	if fs {
		s.PolicyContext = &PolicyContext{Cwd: s.Cwd, WorkspaceRoots: s.WorkspaceRoots}
		s.UserHomeDir = fileURI(home)
	} else {
		s.WindowsProxySettings = "reconcile"
	}
	return s
}

// sandboxSpawnSampler starts /bin/true sandboxed in ws and returns
// start→response and start→closed (#11).
func sandboxSpawnSampler(t *Target, ws string) sampler {
	params := StartParams{Argv: []string{"/bin/true"}, Cwd: fileURI(ws), Env: benchEnv, Sandbox: workspaceSandbox(ws, "", false)}
	return func(ctx context.Context) ([]time.Duration, error) {
		c, err := t.client(ctx)
		if err != nil {
			return nil, fatal(err)
		}
		p, r, err := c.StartWith(ctx, params, false)
		if err != nil {
			return nil, err
		}
		if err := p.Wait(ctx, 20*time.Second); err != nil {
			t.cleanup(c, p)
			return nil, err
		}
		var res struct {
			SandboxType string `json:"sandboxType"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil || res.SandboxType != "linuxSeccomp" {
			return nil, fmt.Errorf("sandboxed process/start: result %s, want sandboxType linuxSeccomp", r.Result)
		}
		if !t.checkExit(p, 0, "sandboxed /bin/true") {
			return nil, fmt.Errorf("sandboxed /bin/true did not exit 0")
		}
		return []time.Duration{r.At.Sub(p.Start), p.ClosedAt.Sub(p.Start)}, nil
	}
}

// sandboxWrite sends a sandboxed fs/writeFile of data to path and returns
// request→response.
func sandboxWrite(ctx context.Context, t *Target, sb *SandboxObject, path string, data []byte) (time.Duration, error) {
	c, err := t.client(ctx)
	if err != nil {
		return 0, fatal(err)
	}
	ch, sent, err := c.Send(ctx, wire.MethodFSWriteFile, map[string]any{
		"path": fileURI(path), "dataBase64": base64.StdEncoding.EncodeToString(data), "sandbox": sb,
	})
	if err != nil {
		return 0, err
	}
	r, err := c.Await(ctx, ch)
	if err != nil {
		return 0, err
	}
	if r.Err != nil {
		return 0, r.Err
	}
	return r.At.Sub(sent), nil
}

// sandboxWriteSampler times a sandboxed fs/writeFile of a small file in ws
// and checks the file's content afterwards (#11).
func sandboxWriteSampler(t *Target, ws, home string) sampler {
	sb := workspaceSandbox(ws, home, true)
	path := filepath.Join(ws, "bench-write.txt")
	n := 0
	return func(ctx context.Context) ([]time.Duration, error) {
		n++
		data := []byte(fmt.Sprintf("%s sample %d\n", t.Role, n))
		d, err := sandboxWrite(ctx, t, sb, path, data)
		if err != nil {
			return nil, fmt.Errorf("sandboxed fs/writeFile: %w", err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
			return nil, fmt.Errorf("sandboxed fs/writeFile: %s holds %q (%v), want %q", path, got, err, data)
		}
		return []time.Duration{d}, nil
	}
}

// runSandbox is #11: sandboxed /bin/true and fs/writeFile, interleaved,
// each server in its own fresh workspace under the scratch directory
// (outside /tmp, like CODEX_HOME). A sandboxed write outside the workspace
// must be refused; if it is not, the measured path is not sandboxed.
func (b *Bench) runSandbox(ctx context.Context) {
	c := b.cfg
	home, _ := os.UserHomeDir()
	ws := map[*Target]string{}
	for _, t := range b.targets() {
		ws[t] = filepath.Join(b.scratch, t.Role+"-workspace")
		if err := os.MkdirAll(ws[t], 0o755); err != nil {
			t.setError("sandbox", err)
			return
		}
		outside := filepath.Join(b.scratch, t.Role+"-outside.txt")
		if _, err := sandboxWrite(ctx, t, workspaceSandbox(ws[t], home, true), outside, []byte("x")); err == nil {
			t.setError("sandbox_enforcement", fmt.Errorf("a sandboxed fs/writeFile outside the workspace (%s) succeeded", outside))
			_ = os.Remove(outside)
		}
	}
	rounds := max(1, min(c.Rounds, c.SandN))
	logf("sandbox: /bin/true start/completion (N=%d, %d rounds)", c.SandN, rounds)
	s := interleave(ctx, []subject{
		{"ref", sandboxSpawnSampler(b.ref, ws[b.ref])},
		{"ours", sandboxSpawnSampler(b.ours, ws[b.ours])},
	}, 2, c.SandWarm, c.SandN, rounds)
	recordErrors("sandboxed_spawn_latency", false, b.targets(), s)
	for i, t := range b.targets() {
		t.Res.Metrics.SandboxSpawn, t.Res.Metrics.SandboxClosed = s[i].latency(0), s[i].latency(1)
	}
	logf("sandbox: fs/writeFile (N=%d, %d rounds)", c.SandN, rounds)
	s = interleave(ctx, []subject{
		{"ref", sandboxWriteSampler(b.ref, ws[b.ref], home)},
		{"ours", sandboxWriteSampler(b.ours, ws[b.ours], home)},
	}, 1, c.SandWarm, c.SandN, rounds)
	recordErrors("sandboxed_fs_write_latency", false, b.targets(), s)
	b.ref.Res.Metrics.SandboxWrite, b.ours.Res.Metrics.SandboxWrite = s[0].latency(0), s[1].latency(0)
}
