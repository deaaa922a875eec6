package cli

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/codexec/codex/config"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// configFlags are the Codex CLI's flags over config.toml, which exec-server
// shares with it (docs/operations.md §7): -c overrides, --enable and
// --disable of features, --strict-config.
func configFlags() []cli.Flag {
	return []cli.Flag{
		&cli.GenericFlag{Name: "config", Aliases: []string{"c"}, Value: &repeated{}, Usage: "override a config.toml value: `key=value`, a dotted key and a TOML value (else taken as a string); repeatable, a later one wins. " +
			"The server reads default_permissions, permissions.* and features.network_proxy; other keys are warned about and ignored"},
		&cli.GenericFlag{Name: "enable", Value: &repeated{}, Usage: "enable `FEATURE` (repeatable): -c features.FEATURE=true; an unknown name stops start-up. Only network_proxy changes what the server does: profiles with the network on go through a proxy (docs/sandbox.md §9)"},
		&cli.GenericFlag{Name: "disable", Value: &repeated{}, Usage: "disable `FEATURE` (repeatable): -c features.FEATURE=false"},
		&cli.BoolFlag{Name: "strict-config", Usage: "stop start-up on a key of config.toml or -c that the Codex CLI 0.169.0 does not know (top-level keys and feature names)"},
	}
}

// repeated is the value of a repeatable flag: each use adds one value, as
// written (no splitting at commas, which a TOML array holds).
type repeated struct{ values []string }

// serializedPrefix marks the whole list, which urfave/cli hands from a
// flag's name to its alias (Serialize) and which then replaces the list
// instead of adding to it.
const serializedPrefix = "\x00repeated:"

func (r *repeated) Set(v string) error {
	if list, ok := strings.CutPrefix(v, serializedPrefix); ok {
		return json.Unmarshal([]byte(list), &r.values)
	}
	r.values = append(r.values, v)
	return nil
}

// Serialize implements cli.Serializer.
func (r *repeated) Serialize() string {
	b, _ := json.Marshal(r.values)
	return serializedPrefix + string(b)
}

func (r *repeated) String() string {
	if r == nil {
		return ""
	}
	return strings.Join(r.values, " ")
}

// flagValues returns the values given to the repeatable flag name.
func flagValues(c *cli.Context, name string) []string {
	if r, ok := c.Generic(name).(*repeated); ok {
		return r.values
	}
	return nil
}

// configOptions reads the config flags. Its errors have the Codex CLI's
// texts: `Unknown feature flag: NAME`, `Invalid override (missing '='):
// ARG`, `Empty key in override: ARG`.
func configOptions(c *cli.Context) (config.Options, error) {
	opts := config.Options{Strict: c.Bool("strict-config")}
	for _, f := range []struct {
		name string
		on   bool
	}{{"enable", true}, {"disable", false}} {
		for _, name := range flagValues(c, f.name) {
			o, err := config.FeatureOverride(name, f.on)
			if err != nil {
				return config.Options{}, err
			}
			opts.Overrides = append(opts.Overrides, o)
		}
	}
	var overrides []config.Override
	for _, arg := range flagValues(c, "config") {
		o, err := config.ParseOverride(arg)
		if err != nil {
			return config.Options{}, err
		}
		overrides = append(overrides, o)
	}
	opts.Overrides = append(overrides, opts.Overrides...) // the features after -c, as the Codex CLI applies them
	return opts, nil
}

// loadPermissions reads the permission profiles of $CODEX_HOME/config.toml
// with the command line's overrides (command/exec resolves profile names
// against them). A missing file means the defaults. A file the Codex CLI
// refuses stops start-up: the server must not run with other permissions
// than its operator wrote. One it accepts never does: what the server
// cannot honour is warned about once, naming the key, and refused on the
// requests that need it.
func loadPermissions(c *cli.Context, logger *zap.Logger) (*config.Permissions, error) {
	opts, err := configOptions(c)
	if err != nil {
		return nil, err
	}
	path := config.Path()
	perms, err := config.LoadWith(path, opts)
	if err != nil {
		return nil, err
	}
	for _, w := range perms.Warnings {
		logger.Warn("configuration", zap.String("warning", w))
	}
	if cwd, err := os.Getwd(); err == nil && !perms.Unusable(perms.DefaultName()) {
		if _, err := perms.Resolve(perms.DefaultName(), cwd); err != nil {
			logger.Warn("configuration: the default permissions cannot be used in the server's cwd; every command/exec will be refused", zap.String("cwd", cwd), zap.Error(err))
		}
	}
	logger.Debug("permissions", zap.String("file", path), zap.String("default", perms.DefaultName()))
	return perms, nil
}
