package wsserve

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// TestPlaceholderRule: each rule of secret.go refuses what it is for
// and says which rule, and the secrets of our tests and real keys pass.
func TestPlaceholderRule(t *testing.T) {
	for secret, want := range map[string]string{
		"replace-me-with-at-least-32-random-bytes-of-key":    "example text",
		"xx-Change.Me-9f8e7d6c5b4a39281706f5e4d3c2b1a0":      `"changeme"`,
		"9f8e7d6c5b4a3928_REPLACE_ME_1706f5e4d3c2b1a0ff":     `"replaceme"`,
		"key:placeholder:9f8e7d6c5b4a39281706f5e4d3c2":       `"placeholder"`,
		"EXAMPLE-9f8e7d6c5b4a39281706f5e4d3c2b1a0f5e4":       `"example"`,
		strings.Repeat("=", 40):                              "1 distinct bytes",
		strings.Repeat("01", 10) + strings.Repeat("2340", 5): "5 distinct bytes",
		strings.Repeat("hunter2!", 4):                        "8-byte pattern",
		"Zq9!xY7Zq9!xY7Zq9!xY7Zq9!xY7Zq9!xY7Zq9":             "7-byte pattern", // a partial last repeat
	} {
		if got := placeholderReason([]byte(secret)); !strings.Contains(got, want) {
			t.Errorf("%q: reason %q, want one with %q", secret, got, want)
		}
	}
	for _, ok := range []string{
		"0123456789abcdefghijklmnopqrstuvwxyzABCD", // the verifier's test key
		"e2e-shared-secret-0123456789-abcdefghijk", // e2e's
		"fleet-shared-secret-0123456789abcdefghij", // unifiedexec's
		"012345012345012345012345012345012345x",    // a period broken at the end
	} {
		if got := placeholderReason([]byte(ok)); got != "" {
			t.Errorf("%q refused: %s", ok, got)
		}
	}
}

// TestPlaceholderRuleAcceptsRandomKeys: keys made as the docs say (32
// random bytes in base64) and the shorter random texts people use (hex of
// 16 bytes, 32 decimal digits) pass; 3000 of each.
func TestPlaceholderRuleAcceptsRandomKeys(t *testing.T) {
	b := make([]byte, 32)
	for i := 0; i < 3000; i++ {
		_, _ = rand.Read(b)
		digits := make([]byte, 32)
		for j := range digits {
			digits[j] = '0' + b[j]%10 // slightly biased, as hand-made keys are
		}
		for _, key := range []string{base64.StdEncoding.EncodeToString(b), hex.EncodeToString(b[:16]), string(digits)} {
			if why := placeholderReason([]byte(key)); why != "" {
				t.Fatalf("random key %q refused: %s", key, why)
			}
		}
	}
}
