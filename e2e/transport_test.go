package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func httpURL(ws string) string { return "http://" + strings.TrimPrefix(ws, "ws://") }

func get(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPEndpoints(t *testing.T) {
	s := startServer(t)
	base := httpURL(s.URL)
	cases := []struct {
		name, path string
		hdr        map[string]string
		code       int
		body       string
	}{
		{"readyz", "/readyz", nil, 200, ""},
		{"readyz with Origin", "/readyz", map[string]string{"Origin": "http://evil.example"}, 403, "*"},
		{"upgrade path without upgrade", "/", nil, 400, "Connection header did not include 'upgrade'"},
		{"healthz is not served", "/healthz", nil, 404, "*"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, base+tc.path, tc.hdr)
			if code != tc.code || (tc.body != "*" && body != tc.body) {
				t.Fatalf("GET %s: %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
			}
		})
	}
	t.Run("upgrade with Origin is refused", func(t *testing.T) {
		_, resp, err := websocket.Dial(context.Background(), s.URL, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://127.0.0.1"}}})
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Fatalf("dial with Origin: err=%v resp=%v, want 403", err, resp)
		}
	})
}

func TestBearerAuth(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("  s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("s3cret-token"))
	for _, args := range [][]string{
		{"--ws-auth", "capability-token", "--ws-token-file", tokenFile},
		{"--ws-auth", "capability-token", "--ws-token-sha256", hex.EncodeToString(sum[:])},
	} {
		t.Run(args[2], func(t *testing.T) {
			s := startServer(t, args...)
			for _, tc := range []struct {
				auth, body string
			}{
				{"", "missing websocket bearer token"},
				{"Basic abc", "invalid authorization header"},
				{"Bearer ", "invalid authorization header"},
				{"Bearer wrong", "invalid websocket bearer token"},
			} {
				hdr := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
				if tc.auth != "" {
					hdr["Authorization"] = tc.auth
				}
				code, body := get(t, httpURL(s.URL)+"/", hdr)
				if code != 401 || body != tc.body {
					t.Fatalf("auth %q: %d %q, want 401 %q", tc.auth, code, body, tc.body)
				}
			}
			if code, _ := get(t, httpURL(s.URL)+"/readyz", nil); code != 200 {
				t.Fatalf("/readyz is gated by auth: %d", code)
			}
			c := dial(t, s.URL, map[string]string{"Authorization": "bearer s3cret-token"})
			c.handshake()
		})
	}
}

func TestListenURLErrors(t *testing.T) {
	for _, tc := range []struct{ url, msg string }{
		{"http://127.0.0.1:0", "unsupported --listen URL `http://127.0.0.1:0`; expected `ws://IP:PORT` or `stdio`"},
		{"ws://localhost:0", "invalid websocket --listen URL `ws://localhost:0`; expected `ws://IP:PORT`"},
		{"ws://127.0.0.1", "invalid websocket --listen URL `ws://127.0.0.1`; expected `ws://IP:PORT`"},
	} {
		cmd := exec.Command(binary, "exec-server", "--listen", tc.url)
		out, err := cmd.Output()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 {
			t.Fatalf("%s: err %v, want exit status 2", tc.url, err)
		}
		if len(out) != 0 {
			t.Fatalf("%s: stdout %q, want nothing", tc.url, out)
		}
		if !strings.Contains(string(ee.Stderr), tc.msg) {
			t.Fatalf("%s: stderr %q does not contain %q", tc.url, ee.Stderr, tc.msg)
		}
	}
}

func TestOversizeFrameClosesWith1009(t *testing.T) {
	s := startServer(t, "--max-message-bytes", "1024")
	c := dial(t, s.URL, nil)
	c.handshake()
	c.sendRaw(`{"id":5,"method":"environment/status","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`)
	r := c.next()
	if string(r.ID) != "-1" {
		t.Fatalf("oversize answer id %s, want -1", r.ID)
	}
	assertError(t, r, -32600, "*")
	select {
	case err := <-c.closed:
		if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
			t.Fatalf("close: %v, want status 1009", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connection not closed after an oversize message")
	}
	// The server lives on.
	c2 := dial(t, s.URL, nil)
	c2.handshake()
	c2.ok("environment/status", nil, nil)
}

// Binary WebSocket frames are read as JSON too; the server answers with
// text frames.
func TestBinaryFramesAccepted(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	if err := c.ws.Write(c.ctx, websocket.MessageBinary, []byte(`{"id":77,"method":"environment/status"}`)); err != nil {
		t.Fatal(err)
	}
	r := c.next()
	if string(r.ID) != "77" || r.Error != nil || !strings.Contains(string(r.Result), "ready") {
		t.Fatalf("answer to a binary frame: %+v %s", r, r.Result)
	}
}
