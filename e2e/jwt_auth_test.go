package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// jwtSecret is the shared secret of the signed-token tests (40 bytes).
const jwtSecret = "e2e-shared-secret-0123456789-abcdefghijk"

// signJWT signs header and payload (JSON text) with key and h; a nil h
// leaves the signature empty, as alg "none" does.
func signJWT(header, payload, key string, h func() hash.Hash) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	if h == nil {
		return signing + "."
	}
	m := hmac.New(h, []byte(key))
	m.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(m.Sum(nil))
}

// writeJWTFile writes content to a new file in dir and returns its path.
func writeJWTFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// upgradeHeaders are the headers of a WebSocket upgrade request.
func upgradeHeaders(auth string) map[string]string {
	h := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	if auth != "" {
		h["Authorization"] = auth
	}
	return h
}

// A server in signed-bearer-token mode accepts a good HS256 token (raw
// handshake, and `exec run` with the token from the environment or minted
// from the secret file) and refuses the others with 401 and the
// reference's body; /readyz is not gated; the refusals are logged with
// their reasons, but neither tokens nor the secret reach the debug log.
func TestSignedBearerAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := writeJWTFile(t, dir, "secret", jwtSecret+"\n")
	s := startServer(t, "--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secretFile,
		"--ws-issuer", "ctl", "--ws-audience", "ws1")
	now := time.Now().Unix()
	claims := func(exp int64, iss, aud string) string {
		return fmt.Sprintf(`{"exp":%d,"iss":%q,"aud":%s}`, exp, iss, aud)
	}
	const hs = `{"alg":"HS256","typ":"JWT"}`
	good := signJWT(hs, claims(now+300, "ctl", `"ws1"`), jwtSecret, sha256.New)
	var sent []string
	for _, tc := range []struct{ name, token, body string }{
		{"expired", signJWT(hs, claims(now-600, "ctl", `"ws1"`), jwtSecret, sha256.New), "expired websocket jwt"},
		{"not yet valid", signJWT(hs, fmt.Sprintf(`{"exp":%d,"nbf":%d,"iss":"ctl","aud":"ws1"}`, now+600, now+300), jwtSecret, sha256.New), "websocket jwt is not valid yet"},
		{"wrong issuer", signJWT(hs, claims(now+300, "other", `"ws1"`), jwtSecret, sha256.New), "websocket jwt issuer mismatch"},
		{"wrong audience", signJWT(hs, claims(now+300, "ctl", `"ws2"`), jwtSecret, sha256.New), "websocket jwt audience mismatch"},
		{"alg HS512", signJWT(`{"alg":"HS512","typ":"JWT"}`, claims(now+300, "ctl", `"ws1"`), jwtSecret, sha512.New), "invalid websocket jwt"},
		{"alg none", signJWT(`{"alg":"none","typ":"JWT"}`, claims(now+300, "ctl", `"ws1"`), "", nil), "invalid websocket jwt"},
		{"wrong secret", signJWT(hs, claims(now+300, "ctl", `"ws1"`), strings.Repeat("w", 40), sha256.New), "invalid websocket jwt"},
		{"missing exp", signJWT(hs, `{"iss":"ctl","aud":"ws1"}`, jwtSecret, sha256.New), "invalid websocket jwt"},
		{"garbage", "not-a-jwt", "invalid websocket jwt"},
	} {
		sent = append(sent, tc.token)
		if code, body := get(t, httpURL(s.URL)+"/", upgradeHeaders("Bearer "+tc.token)); code != 401 || body != tc.body {
			t.Errorf("%s: %d %q, want 401 %q", tc.name, code, body, tc.body)
		}
	}
	if code, body := get(t, httpURL(s.URL)+"/", upgradeHeaders("")); code != 401 || body != "missing websocket bearer token" {
		t.Errorf("no token: %d %q", code, body)
	}
	if code, _ := get(t, httpURL(s.URL)+"/readyz", nil); code != 200 {
		t.Errorf("/readyz is gated by auth: %d", code)
	}
	c := dial(t, s.URL, map[string]string{"Authorization": "Bearer  " + good + " "})
	c.handshake()
	c.close()
	sent = append(sent, good)

	out, errOut, code := execRun(t, []string{"CODEX_EXEC_SERVER_TOKEN=" + good}, "--server", s.URL, "--", "/bin/echo", "by env")
	if code != 0 || out != "by env\n" {
		t.Errorf("exec run with a signed token: code %d out %q stderr %q", code, out, errOut)
	}
	out, errOut, code = execRun(t, nil, "--server", s.URL, "--token-secret-file", secretFile, "--token-issuer", "ctl", "--token-audience", "ws1", "--", "/bin/echo", "minted")
	if code != 0 || out != "minted\n" {
		t.Errorf("exec run minting tokens: code %d out %q stderr %q", code, out, errOut)
	}
	_, errOut, code = execRun(t, nil, "--server", s.URL, "--token-secret-file", secretFile, "--token-issuer", "ctl", "--token-audience", "ws2", "--", "true")
	if code != 255 || !strings.Contains(errOut, "websocket jwt audience mismatch") {
		t.Errorf("exec run minting for another audience: code %d stderr %q", code, errOut)
	}
	// The secret file is masked from sandboxed commands.
	out, _, code = execRun(t, nil, "--server", s.URL, "--token-secret-file", secretFile, "--token-issuer", "ctl", "--token-audience", "ws1", "--sandbox", "read-only", "--", "/bin/cat", secretFile)
	if code == 0 || strings.Contains(out, jwtSecret) {
		t.Errorf("a sandboxed command read the secret file: code %d out %q", code, out)
	}

	s.waitStderr("websocket jwt audience mismatch", 5*time.Second)
	logs := s.stderr.String()
	for _, tok := range sent {
		if sig := tok[strings.LastIndex(tok, ".")+1:]; strings.Contains(logs, tok) || (sig != "" && strings.Contains(logs, sig)) {
			t.Errorf("the debug log shows a token:\n%s", logs)
		}
	}
	if !strings.Contains(logs, "websocket authentication rejected") || !strings.Contains(logs, "websocket jwt audience mismatch") {
		t.Errorf("the log does not show the refusals and their reasons:\n%s", logs)
	}
	if strings.Contains(logs, jwtSecret) {
		t.Errorf("the debug log shows the secret:\n%s", logs)
	}
}

// Start-up errors of signed-bearer-token mode are usage errors: one line
// on stderr naming the flag, nothing on stdout, exit status 2. The secret
// file may come from $CODEX_EXEC_SERVER_WS_SHARED_SECRET_FILE.
func TestSignedBearerStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	short := writeJWTFile(t, dir, "short", strings.Repeat("s", 31)+"\n")
	good := writeJWTFile(t, dir, "good", jwtSecret)
	for _, tc := range []struct {
		env  []string
		args []string
		msg  string
	}{
		{nil, []string{"--ws-shared-secret-file", short}, "--ws-shared-secret-file: shared secret file " + short + " holds 31 bytes"},
		{[]string{"CODEX_EXEC_SERVER_WS_SHARED_SECRET_FILE=" + short}, nil, short + " holds 31 bytes"},
		{nil, []string{"--ws-shared-secret-file", filepath.Join(dir, "missing")}, "--ws-shared-secret-file: open " + filepath.Join(dir, "missing")},
		{nil, nil, "--ws-auth signed-bearer-token needs --ws-shared-secret-file"},
		{nil, []string{"--ws-shared-secret-file", good, "--ws-token-file", good}, "--ws-token-file and --ws-token-sha256 need --ws-auth capability-token"},
		{nil, []string{"--ws-shared-secret-file", good, "--ws-max-clock-skew-seconds", "-1"}, "--ws-max-clock-skew-seconds must be from 0"},
	} {
		args := append([]string{"exec-server", "--listen", "ws://127.0.0.1:0", "--ws-auth", "signed-bearer-token"}, tc.args...)
		cmd := exec.Command(binary, args...)
		cmd.Env = append([]string{raceEnv, "PATH=/usr/bin:/bin"}, tc.env...)
		out, err := cmd.Output()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || len(out) != 0 {
			t.Errorf("%v %v: err %v stdout %q, want exit status 2 and no output", tc.env, tc.args, err, out)
			continue
		}
		if stderr := string(ee.Stderr); !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "sssss") {
			t.Errorf("%v %v: stderr %q, want one line with %q", tc.env, tc.args, stderr, tc.msg)
		}
	}
	cmd := exec.Command(binary, "exec-server", "--listen", "ws://127.0.0.1:0", "--ws-audience", "x")
	if out, err := cmd.CombinedOutput(); !strings.Contains(string(out), "--ws-audience needs --ws-auth signed-bearer-token") {
		t.Errorf("--ws-audience alone: %v %q", err, out)
	}
}
