package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// envPrefix is the start of the environment variable of every exec-server
// flag: --session-ttl is also CODEX_EXEC_SERVER_SESSION_TTL. A flag given
// on the command line wins over its variable.
const envPrefix = "CODEX_EXEC_SERVER_"

// flagEnvVar is the environment variable of the flag named name.
func flagEnvVar(prefix, name string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// bindEnvVars gives each flag the environment variable of its name under
// prefix (urfave/cli shows it in --help). It panics on a flag type it does
// not know, so that a new flag cannot silently miss its variable (a test
// builds the command tree).
func bindEnvVars(prefix string, flags []cli.Flag) []cli.Flag {
	for _, f := range flags {
		env := []string{flagEnvVar(prefix, f.Names()[0])}
		switch f := f.(type) {
		case *cli.StringFlag:
			f.EnvVars = env
		case *cli.BoolFlag:
			f.EnvVars = env
		case *cli.IntFlag:
			f.EnvVars = env
		case *cli.Int64Flag:
			f.EnvVars = env
		case *cli.UintFlag:
			f.EnvVars = env
		case *cli.Uint64Flag:
			f.EnvVars = env
		case *cli.Float64Flag:
			f.EnvVars = env
		case *cli.DurationFlag:
			f.EnvVars = env
		case *cli.StringSliceFlag:
			f.EnvVars = env
		case *cli.PathFlag:
			f.EnvVars = env
		case *cli.GenericFlag:
			f.EnvVars = env // one value
		default:
			panic(fmt.Sprintf("bindEnvVars: flag --%s of type %T", f.Names()[0], f))
		}
	}
	return flags
}

// withoutFlagEnv is env without the variables of flags: the server's
// settings are not passed on to the commands it runs.
func withoutFlagEnv(env []string, prefix string, flags []cli.Flag) []string {
	drop := make(map[string]bool, len(flags))
	for _, f := range flags {
		drop[flagEnvVar(prefix, f.Names()[0])] = true
	}
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			out = append(out, kv)
		}
	}
	return out
}
