package wsserve

import (
	"bytes"
	"fmt"
)

// The placeholder rule of shared secrets (docs/operations.md §2). A secret
// is refused, whatever its length, when
//
//  1. it is a text an example of ours ever shipped (knownPlaceholders);
//  2. lower-cased, with every byte that is not a letter or a digit
//     removed, it contains one of placeholderWords;
//  3. it has fewer than minDistinctBytes distinct bytes;
//  4. it repeats itself with a period of at most half its length (every
//     byte equals the byte p before it, for some p ≤ len/2).
//
// The rules are for mistakes, not for entropy: a random key of at least 32
// characters from an alphabet of 10 or more symbols (decimal, hex, base64)
// is refused by rule 3 with a probability below 1e-7, by rule 4 below
// 1e-16, and by rule 2 below 1e-6 (the shortest word has 7 letters).
const minDistinctBytes = 6

// knownPlaceholders are the exact secrets our examples shipped.
var knownPlaceholders = []string{
	"replace-me-with-at-least-32-random-bytes-of-key", // deploy/kubernetes until issue 18
}

// placeholderWords mark a secret someone was meant to replace.
var placeholderWords = []string{"changeme", "replaceme", "placeholder", "example"}

// SecretGenerateHint is how the errors and docs say to make a key.
const SecretGenerateHint = "head -c 32 /dev/urandom | base64"

// placeholderReason returns why secret is a placeholder, or "" when it is
// not one by the rule above. The reason never quotes the secret beyond the
// public word of rule 2.
func placeholderReason(secret []byte) string {
	for _, p := range knownPlaceholders {
		if string(secret) == p {
			return "it is the example text a deploy file of ours shipped"
		}
	}
	folded := bytes.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, secret)
	for _, w := range placeholderWords {
		if bytes.Contains(folded, []byte(w)) {
			return fmt.Sprintf("it contains %q", w)
		}
	}
	var seen [256]bool
	distinct := 0
	for _, b := range secret {
		if !seen[b] {
			seen[b] = true
			distinct++
		}
	}
	if distinct < minDistinctBytes {
		return fmt.Sprintf("it has %d distinct bytes; a key has at least %d", distinct, minDistinctBytes)
	}
	if p := period(secret); p > 0 {
		return fmt.Sprintf("it repeats a %d-byte pattern", p)
	}
	return ""
}

// period returns the smallest p ≤ len(s)/2 with s[i] == s[i-p] for every
// i ≥ p, or 0 if there is none.
func period(s []byte) int {
	for p := 1; p <= len(s)/2; p++ {
		if bytes.Equal(s[p:], s[:len(s)-p]) {
			return p
		}
	}
	return 0
}

// placeholderError is ReadSharedSecret's error for a placeholder in path.
func placeholderError(path, why string) error {
	return fmt.Errorf("shared secret file %s holds a placeholder, not a key (%s); generate a key with: %s",
		path, why, SecretGenerateHint)
}
