package execserver

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/sandbox"
	"go.uber.org/zap"
)

// tmpdirSandbox is a sandbox whose only writable place is $TMPDIR: the
// tmpdir special path, which Prepare takes from the child's environment.
func tmpdirSandbox() map[string]any {
	special := func(kind string) map[string]any {
		return map[string]any{"type": "special", "value": map[string]any{"kind": kind}}
	}
	return map[string]any{"permissions": map[string]any{
		"type": "managed",
		"file_system": map[string]any{"type": "restricted", "entries": []any{
			map[string]any{"path": special("root"), "access": "read"},
			map[string]any{"path": special("tmpdir"), "access": "write"},
		}},
		"network": "restricted",
	}}
}

// A sandbox's $TMPDIR is the child's, never the server's own
// (docs/sandbox.md §3.1): for process/start the command's environment, for
// an fs call the fs helper's, which comes from the server's base
// environment (SessionConfig.BaseEnv) as a command's does. The server's own
// $TMPDIR is another directory, writable by neither.
func TestSandboxTmpdirIsTheChilds(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	child, own := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", own)
	cfg := SessionConfig{SessionTTL: -1, BaseEnv: []string{"PATH=/usr/bin:/bin", "TMPDIR=" + child}}
	s := newTestServer(t, cfg)
	s.bind = NewBinder(s.reg, fshelper.Handlers(cfg.BaseEnv), zap.NewNop())
	tc := s.dial(t)

	p := startParams("tmp", `echo p > "$TMPDIR/p" && echo ok`)
	p["env"] = nil
	p["envPolicy"] = map[string]any{"inherit": "core"}
	p["cwd"], p["sandbox"] = child, tmpdirSandbox()
	tc.call("process/start", p, nil)
	if code, out := tc.waitExited("tmp"); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("process/start writing the child's $TMPDIR: exit %d, output %q", code, out)
	}

	write := func(dir string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return tc.c.Call(ctx, "fs/writeFile", map[string]any{
			"path": "file://" + filepath.Join(dir, "f"), "dataBase64": base64.StdEncoding.EncodeToString([]byte("x")),
			"sandbox": tmpdirSandbox(),
		}, nil)
	}
	if err := write(child); err != nil {
		t.Errorf("fs/writeFile in the child's $TMPDIR %s: %v", child, err)
	}
	if err := write(own); err == nil || !strings.Contains(err.Error(), "Read-only file system") {
		t.Errorf("fs/writeFile in the server's own $TMPDIR %s: %v, want Read-only file system", own, err)
	}
	if _, err := os.Stat(filepath.Join(own, "f")); err == nil {
		t.Errorf("the fs call wrote the server's own $TMPDIR")
	}
}
