package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// handlesReplay is testdata/handles_replay.json, recorded from the
// reference exec-server 0.169.0 by testdata/handles_record.py: a fixture
// tree and, in order, requests of the file-handle methods with the
// reference's answers, and what files held at points between them.
type handlesReplay struct {
	Files         map[string]string `json:"files"`
	Dirs          []string          `json:"dirs"`
	Fifos         []string          `json:"fifos"`
	Links         map[string]string `json:"links"`
	Sandbox       json.RawMessage   `json:"sandbox"`
	SandboxHidden json.RawMessage   `json:"sandboxHidden"`
	Cases         []struct {
		Name    string `json:"name"`
		Phase   string `json:"phase"`
		Request struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"request"`
		// ChunkOf replaces a null chunk of the request by that many bytes
		// of the fixture's pattern (a block too large to record as text).
		ChunkOf *struct {
			Len int `json:"len"`
		} `json:"chunkOf"`
		Expect json.RawMessage `json:"expect"`
		// Digest stands for a large chunk of the answer, recorded as null.
		Digest *struct {
			Len    int    `json:"len"`
			SHA256 string `json:"sha256"`
		} `json:"digest"`
		// Disk, when set, makes the case a check of what the file holds:
		// Expect is {"base64": …} or {"missing": true}.
		Disk string `json:"disk"`
	} `json:"cases"`
}

// handlePattern is the fixture's large content: byte i is i mod 251.
func handlePattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// TestFileHandleReplay builds the recorded fixture and replays every
// recorded request over stdio and WebSocket, expecting the reference's
// answers, and the files to hold what they held under the reference:
// the handshake gate, decoding errors and their order, the 1 MiB bounds,
// eof, a read error dropping the handle, positional writes, the 128-handle
// limit, and sandboxed opens inside and outside the writable root, through
// links and under an access-none entry. [handle.*]
func TestFileHandleReplay(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/handles_replay.json")
	if err != nil {
		t.Fatal(err)
	}
	var rp handlesReplay
	if err := json.Unmarshal(data, &rp); err != nil {
		t.Fatal(err)
	}
	if len(rp.Cases) < 200 {
		t.Fatalf("only %d recorded cases", len(rp.Cases))
	}
	for _, tr := range []struct {
		name string
		open func(*testing.T, []string) *cx
	}{{"stdio", cxStdioEnv}, {"ws", cxWSEnv}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			sub := func(s string) string { return strings.ReplaceAll(s, "$ROOT", root) }
			for rel, text := range rp.Files {
				path := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(root, "big"), handlePattern(1<<20+5), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, d := range rp.Dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range rp.Fifos {
				if err := syscall.Mkfifo(filepath.Join(root, f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for link, target := range rp.Links {
				if err := os.Symlink(sub(target), filepath.Join(root, link)); err != nil {
					t.Fatal(err)
				}
			}
			c := tr.open(t, nil)
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
				if rc.Disk != "" {
					var want struct {
						Base64  *string `json:"base64"`
						Missing bool    `json:"missing"`
					}
					_ = json.Unmarshal(rc.Expect, &want)
					got, err := os.ReadFile(filepath.Join(root, rc.Disk))
					switch {
					case want.Missing && !os.IsNotExist(err):
						t.Errorf("%s: %s exists (%v), want it missing", rc.Name, rc.Disk, err)
					case !want.Missing && err != nil:
						t.Errorf("%s: %v", rc.Name, err)
					case !want.Missing && base64.StdEncoding.EncodeToString(got) != *want.Base64:
						t.Errorf("%s: %s holds %q, want base64 %s", rc.Name, rc.Disk, got, *want.Base64)
					}
					continue
				}
				params := sub(string(rc.Request.Params))
				params = strings.ReplaceAll(params, `"$SANDBOX_HIDDEN"`, sub(string(rp.SandboxHidden)))
				params = strings.ReplaceAll(params, `"$SANDBOX"`, sub(string(rp.Sandbox)))
				var buf bytes.Buffer
				if err := json.Compact(&buf, []byte(params)); err != nil {
					t.Fatalf("%s: %v", rc.Name, err)
				}
				params = buf.String()
				if rc.ChunkOf != nil {
					chunk := base64.StdEncoding.EncodeToString(handlePattern(rc.ChunkOf.Len))
					params = strings.Replace(params, `"chunk":null`, `"chunk":"`+chunk+`"`, 1)
				}
				id := c.nextID
				c.nextID++
				method, _ := json.Marshal(rc.Request.Method)
				c.write(fmt.Sprintf(`{"id":%d,"method":%s,"params":%s}`, id, method, params))
				got := c.wait(id, 15*time.Second)
				delete(got, "id")
				if rc.Digest != nil {
					res, _ := got["result"].(map[string]any)
					s, _ := res["chunk"].(string)
					b, _ := base64.StdEncoding.DecodeString(s)
					sum := sha256.Sum256(b)
					if len(b) != rc.Digest.Len || hex.EncodeToString(sum[:]) != rc.Digest.SHA256 {
						t.Errorf("%s: a chunk of %d bytes, want %d bytes of sha256 %s", rc.Name, len(b), rc.Digest.Len, rc.Digest.SHA256)
					}
					if res != nil {
						res["chunk"] = nil
					}
				}
				var want map[string]any
				if err := json.Unmarshal([]byte(sub(string(rc.Expect))), &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(normalize(got), normalize(want)) {
					gb, _ := json.Marshal(got)
					wb, _ := json.Marshal(want)
					t.Errorf("%s: %s %s\n got %s\nwant %s", rc.Name, rc.Request.Method, clipText(params, 300), gb, wb)
				}
			}
		})
	}
}

// clipText shortens s for a failure message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TestFileHandlesPerConnection: a handle is seen only by the connection
// that opened it, which may reuse an id another connection holds; a new
// connection does not inherit a closed one's handles. The answers were
// recorded from the reference 0.169.0 over WebSocket with the same steps.
func TestFileHandlesPerConnection(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	path := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(path, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := dial(t, s.URL, nil), dial(t, s.URL, nil)
	a.handshake()
	b.handshake()
	open := map[string]any{"handleId": "h", "path": "file://" + path}
	read := map[string]any{"handleId": "h", "offset": 0, "len": 4}
	a.ok("fs/open", open, nil)
	b.fail("fs/readBlock", read, -32004, "unknown file handle `h`")
	b.ok("fs/open", open, nil)
	var res map[string]any
	a.ok("fs/readBlock", read, &res)
	if res["chunk"] != "aGVsbA==" || res["eof"] != false {
		t.Fatalf("read on the opening connection: %v", res)
	}
	a.close()
	c := dial(t, s.URL, nil)
	c.handshake()
	c.fail("fs/readBlock", read, -32004, "unknown file handle `h`")
}
