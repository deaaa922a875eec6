package wsserve

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"time"
	"unicode/utf8"

	"github.com/codexec/codex/wire"
	"github.com/golang-jwt/jwt/v5"
)

// The 401 bodies of a refused signed bearer token, worded as the Codex
// CLI's exec-server words them.
const (
	jwtInvalid  = "invalid websocket jwt"
	jwtExpired  = "expired websocket jwt"
	jwtNotYet   = "websocket jwt is not valid yet"
	jwtIssuer   = "websocket jwt issuer mismatch"
	jwtAudience = "websocket jwt audience mismatch"
)

// JWTConfig configures a JWTVerifier.
type JWTConfig struct {
	// Secret is the HS256 key, at least wire.MinSharedSecretBytes long.
	Secret []byte
	// Issuer, when not empty, must equal the token's "iss".
	Issuer string
	// Audience, when not empty, must equal the token's "aud" or one of its
	// members.
	Audience string
	// MaxClockSkew is the leeway granted on both "exp" and "nbf"; it must
	// not be negative.
	MaxClockSkew time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// JWTVerifier checks the signed bearer tokens of WebSocket upgrades: an
// HS256 JWT with a required "exp" and, when configured, a matching "iss"
// and "aud"; "nbf" is honoured when present. It is safe for concurrent use.
type JWTVerifier struct {
	key    []byte
	issuer string
	parser *jwt.Parser
}

// NewJWTVerifier returns a verifier for cfg.
func NewJWTVerifier(cfg JWTConfig) (*JWTVerifier, error) {
	if len(cfg.Secret) < wire.MinSharedSecretBytes {
		return nil, fmt.Errorf("the shared secret has %d bytes; at least %d are needed", len(cfg.Secret), wire.MinSharedSecretBytes)
	}
	if cfg.MaxClockSkew < 0 {
		return nil, errors.New("the clock skew must not be negative")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(cfg.MaxClockSkew),
		jwt.WithStrictDecoding(),
		// Whole seconds, like the claims: the boundaries then do not
		// depend on where in a second the request arrives.
		jwt.WithTimeFunc(func() time.Time { return now().Truncate(time.Second) }),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	key := bytes.Clone(cfg.Secret)
	return &JWTVerifier{key: key, issuer: cfg.Issuer, parser: jwt.NewParser(opts...)}, nil
}

// ReadSharedSecret reads a shared-secret file: UTF-8 text whose
// surrounding whitespace (a trailing newline) is not part of the secret,
// at least wire.MinSharedSecretBytes long and not a placeholder (the rule of
// secret.go). The errors name the file, never its content.
func ReadSharedSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("shared secret file %s is not UTF-8 text", path)
	}
	secret := bytes.TrimSpace(data)
	if len(secret) < wire.MinSharedSecretBytes {
		return nil, fmt.Errorf("shared secret file %s holds %d bytes (surrounding whitespace trimmed); at least %d are needed", path, len(secret), wire.MinSharedSecretBytes)
	}
	if why := placeholderReason(secret); why != "" {
		return nil, placeholderError(path, why)
	}
	return secret, nil
}

// Verify checks token and returns "" when it is accepted, else the 401
// body saying why. Nothing of the token is kept or logged.
func (v *JWTVerifier) Verify(token string) string {
	var c jwtClaims
	_, err := v.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if t.Method != jwt.SigningMethodHS256 {
			return nil, errors.New("not HS256")
		}
		if err := checkHeader(t.Raw); err != nil {
			return nil, err
		}
		return v.key, nil
	})
	if err == nil {
		return ""
	}
	return v.reason(err, &c)
}

// reason maps a parse error to its 401 body. A token that is malformed,
// badly signed or lacks "exp" is invalid; among claim failures an expired
// token outranks one not yet valid, which outranks a wrong issuer, which
// outranks a wrong audience. A missing "iss" or "aud" the configuration
// asks for is a mismatch (the library reports it as a missing claim).
func (v *JWTVerifier) reason(err error, c *jwtClaims) string {
	switch {
	case !errors.Is(err, jwt.ErrTokenInvalidClaims) || c.exp == nil:
		return jwtInvalid
	case errors.Is(err, jwt.ErrTokenExpired):
		return jwtExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return jwtNotYet
	case errors.Is(err, jwt.ErrTokenInvalidIssuer),
		v.issuer != "" && (c.iss == nil || *c.iss != v.issuer):
		return jwtIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience), errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return jwtAudience
	}
	return jwtInvalid
}

// maxClaimSeconds bounds the times of "exp" and "nbf" (the end of year
// 9999), so that time arithmetic on them cannot overflow.
const maxClaimSeconds = 253402300799

// numericDate converts a claim's seconds to the library's date, clamped to
// ±maxClaimSeconds.
func numericDate(sec int64) *jwt.NumericDate {
	sec = min(max(sec, -maxClaimSeconds), maxClaimSeconds)
	return jwt.NewNumericDate(time.Unix(sec, 0))
}

var _ jwt.Claims = (*jwtClaims)(nil)

// GetExpirationTime returns "exp" plus one second: the token stays valid
// through the second "exp" names (with the leeway added), as the reference
// server accepts it, while the library rejects from that second on.
func (c *jwtClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	if c.exp == nil {
		return nil, nil
	}
	if *c.exp == math.MaxInt64 {
		return numericDate(*c.exp), nil
	}
	return numericDate(*c.exp + 1), nil
}

// GetNotBefore returns "nbf", or nil.
func (c *jwtClaims) GetNotBefore() (*jwt.NumericDate, error) {
	if c.nbf == nil {
		return nil, nil
	}
	return numericDate(*c.nbf), nil
}

// GetIssuedAt returns nil: "iat" is not checked.
func (c *jwtClaims) GetIssuedAt() (*jwt.NumericDate, error) { return nil, nil }

// GetIssuer returns "iss", or "".
func (c *jwtClaims) GetIssuer() (string, error) {
	if c.iss == nil {
		return "", nil
	}
	return *c.iss, nil
}

// GetSubject returns "": "sub" is not checked.
func (c *jwtClaims) GetSubject() (string, error) { return "", nil }

// GetAudience returns "aud" as a list.
func (c *jwtClaims) GetAudience() (jwt.ClaimStrings, error) { return c.aud, nil }
