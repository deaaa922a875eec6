package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/codexec/codex/config"
	"github.com/urfave/cli/v2"
)

// runConfigFlags parses args with the config flags and returns what
// configOptions makes of them.
func runConfigFlags(t *testing.T, args ...string) (config.Options, error) {
	t.Helper()
	var opts config.Options
	var oerr error
	app := &cli.App{Flags: configFlags(), Action: func(c *cli.Context) error {
		opts, oerr = configOptions(c)
		return nil
	}}
	if err := app.Run(append([]string{"x"}, args...)); err != nil {
		t.Fatal(err)
	}
	return opts, oerr
}

// TestConfigFlagsOrder: -c and --config add to one list in command-line
// order, values whole (commas of TOML arrays included), then the features
// of --enable and --disable; --strict-config is read.
func TestConfigFlagsOrder(t *testing.T) {
	opts, err := runConfigFlags(t, "--enable", "shell_tool", "-c", `l=["a","b"]`, "-c", "a=1", "--disable", "js_repl", "-c", "a=2", "--strict-config")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range opts.Overrides {
		keys = append(keys, o.Key())
	}
	if !slices.Equal(keys, []string{"l", "a", "a", "features.shell_tool", "features.js_repl"}) || !opts.Strict {
		t.Fatalf("%q strict %v", keys, opts.Strict)
	}
	if v, ok := opts.Overrides[0].Value.([]any); !ok || len(v) != 2 || opts.Overrides[2].Value != int64(2) {
		t.Fatalf("%#v %#v", opts.Overrides[0].Value, opts.Overrides[2].Value)
	}
	opts, err = runConfigFlags(t, "--config", "a=1", "--config", "b=2")
	if err != nil || len(opts.Overrides) != 2 || opts.Overrides[1].Key() != "b" {
		t.Fatalf("--config: %+v %v", opts, err)
	}
}

// TestConfigFlagsErrors: the Codex CLI's texts.
func TestConfigFlagsErrors(t *testing.T) {
	for args, want := range map[string]string{
		"--enable bogus_feature": "Unknown feature flag: bogus_feature",
		"--disable nope":         "Unknown feature flag: nope",
		"-c foo":                 "Invalid override (missing '='): foo",
		"-c =x":                  "Empty key in override: =x",
	} {
		if _, err := runConfigFlags(t, strings.Fields(args)...); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
