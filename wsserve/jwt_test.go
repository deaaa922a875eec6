package wsserve_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/wsserve"
	"go.uber.org/zap"
)

// jwtSecret is a 40-byte test secret.
var jwtSecret = []byte("0123456789abcdefghijklmnopqrstuvwxyzABCD")

// jwtNow is the fixed clock of the verifier tests.
var jwtNow = time.Unix(1_800_000_000, 0)

// rawJWT signs header and payload (JSON text) with key and hash h; a nil h
// leaves the signature empty, as alg "none" does.
func rawJWT(header, payload string, key []byte, h func() hash.Hash) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	if h == nil {
		return signing + "."
	}
	m := hmac.New(h, key)
	m.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(m.Sum(nil))
}

// hs256 signs payload with the test secret.
func hs256(payload string) string {
	return rawJWT(`{"alg":"HS256","typ":"JWT"}`, payload, jwtSecret, sha256.New)
}

func newTestVerifier(t *testing.T, issuer, audience string) *wsserve.JWTVerifier {
	t.Helper()
	v, err := wsserve.NewJWTVerifier(wsserve.JWTConfig{
		Secret: jwtSecret, Issuer: issuer, Audience: audience,
		MaxClockSkew: 30 * time.Second,
		// Mid-second: the boundaries are whole seconds all the same.
		Now: func() time.Time { return jwtNow.Add(700 * time.Millisecond) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The 401 bodies of every rejection, as the reference server words them
// and in its order of precedence, with the issuer and audience configured.
func TestJWTVerifierCases(t *testing.T) {
	v := newTestVerifier(t, "fleet", "exec")
	now := jwtNow.Unix()
	claims := func(extra string) string {
		return fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":"exec"%s}`, now+300, extra)
	}
	const hdr = `{"alg":"HS256","typ":"JWT"}`
	cases := []struct{ name, token, want string }{
		{"good", hs256(claims("")), ""},
		{"audience array", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":["x","exec"]}`, now+300)), ""},
		{"no typ, extra header members", rawJWT(`{"alg":"HS256","kid":"k","crit":["x"]}`, claims(""), jwtSecret, sha256.New), ""},
		{"other claims ignored", hs256(claims(`,"sub":5,"iat":"x","jti":[1],"x":1,"x":2`)), ""},
		{"expired within the skew", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":"exec"}`, now-30)), ""},
		{"expired", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":"exec"}`, now-31)), "expired websocket jwt"},
		{"expired at 0", hs256(`{"exp":0,"iss":"fleet","aud":"exec"}`), "expired websocket jwt"},
		{"expired negative", hs256(`{"exp":-5,"iss":"fleet","aud":"exec"}`), "expired websocket jwt"},
		{"nbf within the skew", hs256(claims(fmt.Sprintf(`,"nbf":%d`, now+30))), ""},
		{"nbf in the future", hs256(claims(fmt.Sprintf(`,"nbf":%d`, now+31))), "websocket jwt is not valid yet"},
		{"nbf null", hs256(claims(`,"nbf":null`)), ""},
		{"wrong issuer", hs256(fmt.Sprintf(`{"exp":%d,"iss":"other","aud":"exec"}`, now+300)), "websocket jwt issuer mismatch"},
		{"no issuer", hs256(fmt.Sprintf(`{"exp":%d,"aud":"exec"}`, now+300)), "websocket jwt issuer mismatch"},
		{"null issuer", hs256(fmt.Sprintf(`{"exp":%d,"iss":null,"aud":"exec"}`, now+300)), "websocket jwt issuer mismatch"},
		{"wrong audience", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":"other"}`, now+300)), "websocket jwt audience mismatch"},
		{"no audience", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet"}`, now+300)), "websocket jwt audience mismatch"},
		{"empty audience array", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":[]}`, now+300)), "websocket jwt audience mismatch"},
		{"audience array without it", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":["x","y"]}`, now+300)), "websocket jwt audience mismatch"},
		{"expired outranks issuer", hs256(fmt.Sprintf(`{"exp":%d,"iss":"o","aud":"o"}`, now-100)), "expired websocket jwt"},
		{"expired outranks nbf", hs256(fmt.Sprintf(`{"exp":%d,"nbf":%d,"iss":"fleet","aud":"exec"}`, now-100, now+100)), "expired websocket jwt"},
		{"nbf outranks issuer", hs256(fmt.Sprintf(`{"exp":%d,"nbf":%d,"iss":"o","aud":"exec"}`, now+300, now+100)), "websocket jwt is not valid yet"},
		{"issuer outranks audience", hs256(fmt.Sprintf(`{"exp":%d,"iss":"o","aud":"o"}`, now+300)), "websocket jwt issuer mismatch"},
		{"missing exp", hs256(`{"iss":"fleet","aud":"exec"}`), "invalid websocket jwt"},
		{"missing exp outranks issuer", hs256(`{"iss":"o","aud":"exec"}`), "invalid websocket jwt"},
		{"null exp", hs256(`{"exp":null,"iss":"fleet","aud":"exec"}`), "invalid websocket jwt"},
		{"string exp", hs256(fmt.Sprintf(`{"exp":"%d","iss":"fleet","aud":"exec"}`, now+300)), "invalid websocket jwt"},
		{"fractional exp", hs256(fmt.Sprintf(`{"exp":%d.5,"iss":"fleet","aud":"exec"}`, now+300)), "invalid websocket jwt"},
		{"exponent exp", hs256(`{"exp":1e10,"iss":"fleet","aud":"exec"}`), "invalid websocket jwt"},
		{"exp beyond int64", hs256(`{"exp":100000000000000000000,"iss":"fleet","aud":"exec"}`), "invalid websocket jwt"},
		{"fractional nbf", hs256(claims(`,"nbf":5.5`)), "invalid websocket jwt"},
		{"numeric issuer", hs256(fmt.Sprintf(`{"exp":%d,"iss":5,"aud":"exec"}`, now+300)), "invalid websocket jwt"},
		{"numeric audience", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":5}`, now+300)), "invalid websocket jwt"},
		{"null in audience array", hs256(fmt.Sprintf(`{"exp":%d,"iss":"fleet","aud":["exec",null]}`, now+300)), "invalid websocket jwt"},
		{"repeated exp", hs256(fmt.Sprintf(`{"exp":1,"exp":%d,"iss":"fleet","aud":"exec"}`, now+300)), "invalid websocket jwt"},
		{"repeated alg", rawJWT(`{"alg":"none","alg":"HS256"}`, claims(""), jwtSecret, sha256.New), "invalid websocket jwt"},
		{"payload not an object", hs256(`[1]`), "invalid websocket jwt"},
		{"payload with trailing text", hs256(claims("") + " x"), "invalid websocket jwt"},
		{"alg none", rawJWT(`{"alg":"none","typ":"JWT"}`, claims(""), nil, nil), "invalid websocket jwt"},
		{"alg HS512", rawJWT(`{"alg":"HS512","typ":"JWT"}`, claims(""), jwtSecret, sha512.New), "invalid websocket jwt"},
		{"alg RS256", rawJWT(`{"alg":"RS256","typ":"JWT"}`, claims(""), jwtSecret, sha256.New), "invalid websocket jwt"},
		{"alg lower case", rawJWT(`{"alg":"hs256"}`, claims(""), jwtSecret, sha256.New), "invalid websocket jwt"},
		{"no alg", rawJWT(`{"typ":"JWT"}`, claims(""), jwtSecret, sha256.New), "invalid websocket jwt"},
		{"wrong secret", rawJWT(hdr, claims(""), []byte(strings.Repeat("x", 40)), sha256.New), "invalid websocket jwt"},
		{"wrong secret outranks expiry", rawJWT(hdr, `{"exp":1}`, []byte(strings.Repeat("x", 40)), sha256.New), "invalid websocket jwt"},
		{"garbage", "garbage", "invalid websocket jwt"},
		{"two segments", strings.Join(strings.Split(hs256(claims("")), ".")[:2], "."), "invalid websocket jwt"},
		{"four segments", hs256(claims("")) + ".", "invalid websocket jwt"},
		{"padded base64", strings.Replace(hs256(claims("")), ".", "=.", 1), "invalid websocket jwt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := v.Verify(tc.token); got != tc.want {
				t.Errorf("Verify = %q, want %q", got, tc.want)
			}
		})
	}
}

// Without an issuer or an audience configured, neither claim is checked.
func TestJWTVerifierUnconfiguredClaims(t *testing.T) {
	v := newTestVerifier(t, "", "")
	exp := jwtNow.Unix() + 60
	for _, payload := range []string{
		fmt.Sprintf(`{"exp":%d}`, exp),
		fmt.Sprintf(`{"exp":%d,"iss":"any","aud":["a","b"]}`, exp),
	} {
		if got := v.Verify(hs256(payload)); got != "" {
			t.Errorf("%s: Verify = %q, want accepted", payload, got)
		}
	}
	if got := v.Verify(hs256(`{"iss":"any"}`)); got != "invalid websocket jwt" {
		t.Errorf("no exp: Verify = %q", got)
	}
}

func TestNewJWTVerifierRefuses(t *testing.T) {
	if _, err := wsserve.NewJWTVerifier(wsserve.JWTConfig{Secret: jwtSecret[:31]}); err == nil {
		t.Error("a 31-byte secret was accepted")
	}
	if _, err := wsserve.NewJWTVerifier(wsserve.JWTConfig{Secret: jwtSecret, MaxClockSkew: -time.Second}); err == nil {
		t.Error("a negative skew was accepted")
	}
}

// The secret file's surrounding whitespace is not part of the secret; the
// errors name the file but never show its content.
func TestReadSharedSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := wsserve.ReadSharedSecret(write("ok", "\t "+string(jwtSecret)+"\n"))
	if err != nil || string(got) != string(jwtSecret) {
		t.Fatalf("ReadSharedSecret = %q, %v", got, err)
	}
	short := strings.Repeat("s", 31)
	for name, content := range map[string]string{
		"short":    short + "\n",
		"padded":   "   " + short[:29] + "\n\n",
		"empty":    "",
		"not utf8": "\xff\xfe" + strings.Repeat("b", 40),
	} {
		p := write(strings.ReplaceAll(name, " ", "-"), content)
		_, err := wsserve.ReadSharedSecret(p)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "sss") {
			t.Errorf("%s: error %q should name the file and not show the secret", name, err)
		}
	}
	if _, err := wsserve.ReadSharedSecret(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file was accepted")
	}
}

// FuzzJWTVerify feeds arbitrary tokens and payloads to the verifier: it
// must never panic, and it answers with one of the 401 bodies or accepts.
func FuzzJWTVerify(f *testing.F) {
	v, err := wsserve.NewJWTVerifier(wsserve.JWTConfig{Secret: jwtSecret, Issuer: "fleet", Audience: "exec", Now: func() time.Time { return jwtNow }})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("garbage", `{"exp":1}`)
	f.Add("a.b.c", `{"exp":1800000100,"iss":"fleet","aud":["exec"]}`)
	f.Add("", `{"exp":9223372036854775807,"nbf":-9223372036854775808}`)
	f.Add("..", `{"exp":1,"exp":2,"aud":[null]}`)
	valid := map[string]bool{"": true, "invalid websocket jwt": true, "expired websocket jwt": true,
		"websocket jwt is not valid yet": true, "websocket jwt issuer mismatch": true, "websocket jwt audience mismatch": true}
	f.Fuzz(func(t *testing.T, token, payload string) {
		if got := v.Verify(token); !valid[got] {
			t.Fatalf("Verify(%q) = %q", token, got)
		}
		// A correctly signed token with arbitrary claims reaches the claim checks.
		if got := v.Verify(hs256(payload)); !valid[got] {
			t.Fatalf("Verify(signed %q) = %q", payload, got)
		}
	})
}

// FuzzWebSocketAuthorization sends upgrade requests with arbitrary
// Authorization headers to a server in signed-token mode: it never panics
// and refuses each with 401 and one of the documented bodies.
func FuzzWebSocketAuthorization(f *testing.F) {
	v, err := wsserve.NewJWTVerifier(wsserve.JWTConfig{Secret: jwtSecret, Now: func() time.Time { return jwtNow }})
	if err != nil {
		f.Fatal(err)
	}
	srv := &wsserve.WebSocketServer{JWT: v, Logger: zap.NewNop()}
	f.Add("Bearer garbage")
	f.Add("bearer  " + hs256(`{"exp":1}`) + "  ")
	f.Add("Basic x")
	f.Add("Bearer\t\xff")
	f.Add("")
	bodies := map[string]bool{"missing websocket bearer token": true, "invalid authorization header": true,
		"invalid websocket jwt": true, "expired websocket jwt": true}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header["Authorization"] = []string{header}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized || !bodies[w.Body.String()] {
			t.Fatalf("Authorization %q: %d %q", header, w.Code, w.Body.String())
		}
	})
}
