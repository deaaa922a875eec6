package unifiedexec_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/wsserve"
)

var tokenSecret = []byte("fleet-shared-secret-0123456789abcdefghij")

// A minted token passes the server's verifier with matching claims, and
// fails it once expired or with another audience.
func TestSignedTokenMint(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	st := unifiedexec.SignedToken{Secret: tokenSecret, Issuer: "ctl", Audience: "ws1", Lifetime: time.Minute, Now: func() time.Time { return t0 }}
	tok, err := st.Mint()
	if err != nil {
		t.Fatal(err)
	}
	verify := func(at time.Time, aud string) string {
		v, err := wsserve.NewJWTVerifier(wsserve.JWTConfig{Secret: tokenSecret, Issuer: "ctl", Audience: aud, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		return v.Verify(tok)
	}
	if got := verify(t0.Add(59*time.Second), "ws1"); got != "" {
		t.Errorf("fresh token refused: %q", got)
	}
	if got := verify(t0.Add(2*time.Minute), "ws1"); got != "expired websocket jwt" {
		t.Errorf("token after its lifetime: %q", got)
	}
	if got := verify(t0, "ws2"); got != "websocket jwt audience mismatch" {
		t.Errorf("token for another audience: %q", got)
	}
	if _, err := (unifiedexec.SignedToken{Secret: tokenSecret[:31]}).Mint(); err == nil {
		t.Error("a 31-byte secret minted a token")
	}
}

// Dial asks TokenSource for a token per connection; a server in
// signed-bearer-token mode accepts the minted one and refuses a token
// signed with another secret, showing its 401 reason.
func TestDialTokenSource(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, append(tokenSecret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	url, stop, err := startWSServer("--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secretFile, "--ws-audience", "ws1")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var calls atomic.Int32
	mint := unifiedexec.SignedToken{Secret: tokenSecret, Audience: "ws1"}.Source()
	c, err := unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{Token: "ignored", TokenSource: func(ctx context.Context) (string, error) {
		calls.Add(1)
		return mint(ctx)
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Start(ctx, unifiedexec.StartOptions{Argv: []string{"echo", "signed"}})
	if err != nil {
		t.Fatal(err)
	}
	if out, code := readUntilClosed(ctx, t, c, p.ID()); out != "signed\n" || code != 0 {
		t.Errorf("output %q code %d", out, code)
	}
	_ = c.Close()
	if n := calls.Load(); n != 1 {
		t.Errorf("TokenSource called %d times for one connection", n)
	}
	other := unifiedexec.SignedToken{Secret: []byte(strings.Repeat("z", 40)), Audience: "ws1"}.Source()
	_, err = unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{TokenSource: other})
	if err == nil || !strings.Contains(err.Error(), "invalid websocket jwt") {
		t.Fatalf("dial with a token of another secret: %v", err)
	}
	failing := func(context.Context) (string, error) { return "", errors.New("no key today") }
	if _, err = unifiedexec.Dial(ctx, url, unifiedexec.DialOptions{TokenSource: failing}); err == nil || !strings.Contains(err.Error(), "no key today") {
		t.Fatalf("dial with a failing TokenSource: %v", err)
	}
}
