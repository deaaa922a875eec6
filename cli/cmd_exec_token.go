package cli

import (
	"errors"
	"fmt"

	"github.com/codexec/codex/unifiedexec"
	"github.com/codexec/codex/wsserve"
	"github.com/urfave/cli/v2"
)

// execDialOptions returns the dial options of `exec run --server`: a
// bearer token from execToken, or, with --token-secret-file, an HS256
// token minted for every connection (for a server started with --ws-auth
// signed-bearer-token; the client then holds the shared secret).
func execDialOptions(cctx *cli.Context, envToken string) (unifiedexec.DialOptions, error) {
	opts := unifiedexec.DialOptions{RecoveryTimeout: cctx.Duration("recovery-timeout")}
	file := cctx.String("token-secret-file")
	if file == "" {
		for _, name := range []string{"token-issuer", "token-audience", "token-lifetime"} {
			if cctx.IsSet(name) {
				return opts, fmt.Errorf("--%s needs --token-secret-file", name)
			}
		}
		token, err := execToken(cctx, envToken)
		opts.Token = token
		return opts, err
	}
	if cctx.IsSet("token-file") || cctx.IsSet("token") {
		return opts, errors.New("give either --token-secret-file or a token (--token-file, --token), not both")
	}
	if cctx.Duration("token-lifetime") <= 0 {
		return opts, errors.New("--token-lifetime must be positive")
	}
	secret, err := wsserve.ReadSharedSecret(file)
	if err != nil {
		return opts, fmt.Errorf("--token-secret-file: %w", err)
	}
	opts.TokenSource = unifiedexec.SignedToken{
		Secret:   secret,
		Issuer:   cctx.String("token-issuer"),
		Audience: cctx.String("token-audience"),
		Lifetime: cctx.Duration("token-lifetime"),
	}.Source()
	return opts, nil
}
