package unifiedexec

import (
	"context"
	"fmt"
	"time"

	"github.com/codexec/codex/wire"
	"github.com/golang-jwt/jwt/v5"
)

// DefaultTokenLifetime is how long a minted token is valid when
// SignedToken.Lifetime is zero: long enough for one connection attempt on
// a slow network, short enough that a leaked token soon expires.
const DefaultTokenLifetime = 5 * time.Minute

// SignedToken mints HS256 bearer tokens for a server started with
// `--ws-auth signed-bearer-token`, for a client that holds the shared
// secret (a fleet's controller). Use its Source as DialOptions.TokenSource
// so that every connection, recoveries included, gets a fresh token.
type SignedToken struct {
	// Secret is the shared secret, at least wire.MinSharedSecretBytes long
	// (wsserve.ReadSharedSecret reads it from a file as the server does).
	Secret []byte
	// Issuer and Audience, when not empty, become the "iss" and "aud"
	// claims; they must match the server's --ws-issuer and --ws-audience.
	Issuer, Audience string
	// Lifetime sets "exp" after "iat"; zero means DefaultTokenLifetime.
	Lifetime time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Mint returns a new signed token.
func (s SignedToken) Mint() (string, error) {
	if len(s.Secret) < wire.MinSharedSecretBytes {
		return "", fmt.Errorf("unifiedexec: the shared secret has %d bytes; at least %d are needed", len(s.Secret), wire.MinSharedSecretBytes)
	}
	now, life := time.Now, s.Lifetime
	if s.Now != nil {
		now = s.Now
	}
	if life <= 0 {
		life = DefaultTokenLifetime
	}
	t := now()
	claims := jwt.RegisteredClaims{
		Issuer:    s.Issuer,
		IssuedAt:  jwt.NewNumericDate(t),
		ExpiresAt: jwt.NewNumericDate(t.Add(life)),
	}
	if s.Audience != "" {
		claims.Audience = jwt.ClaimStrings{s.Audience}
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.Secret)
}

// Source returns a DialOptions.TokenSource that mints a token per call.
func (s SignedToken) Source() func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return s.Mint() }
}
