package cli

import (
	"fmt"
	"math"
	"time"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wsserve"
	"github.com/urfave/cli/v2"
)

// signedBearerMode is the --ws-auth value of HS256 signed bearer tokens.
const signedBearerMode = "signed-bearer-token"

// signedBearerFlags are the flags only --ws-auth signed-bearer-token uses.
var signedBearerFlags = []string{"ws-shared-secret-file", "ws-issuer", "ws-audience", "ws-max-clock-skew-seconds"}

// signedBearerAuth reads the signed-token flags: nil without --ws-auth
// signed-bearer-token, else the verifier. The secret file is masked from
// sandboxed commands. Errors are start-up (usage) errors.
func signedBearerAuth(c *cli.Context) (*wsserve.JWTVerifier, error) {
	if c.String("ws-auth") != signedBearerMode {
		for _, name := range signedBearerFlags {
			if c.IsSet(name) {
				return nil, fmt.Errorf("--%s needs --ws-auth %s", name, signedBearerMode)
			}
		}
		return nil, nil
	}
	file := c.String("ws-shared-secret-file")
	if file == "" {
		return nil, fmt.Errorf("--ws-auth %s needs --ws-shared-secret-file", signedBearerMode)
	}
	skew := c.Int64("ws-max-clock-skew-seconds")
	if skew < 0 || skew > math.MaxInt64/int64(time.Second) {
		return nil, fmt.Errorf("--ws-max-clock-skew-seconds must be from 0 to %d", math.MaxInt64/int64(time.Second))
	}
	secret, err := wsserve.ReadSharedSecret(file)
	if err != nil {
		return nil, fmt.Errorf("--ws-shared-secret-file: %w", err)
	}
	sandbox.MaskSecrets(file) // no sandboxed command may read the key
	return wsserve.NewJWTVerifier(wsserve.JWTConfig{
		Secret:       secret,
		Issuer:       c.String("ws-issuer"),
		Audience:     c.String("ws-audience"),
		MaxClockSkew: time.Duration(skew) * time.Second,
	})
}
