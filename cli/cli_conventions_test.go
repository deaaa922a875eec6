package cli

import (
	"errors"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestFlagErrorMessage: the flag package's one-dash messages come out with
// our spelling of the flag.
func TestFlagErrorMessage(t *testing.T) {
	for in, want := range map[string]string{
		"flag provided but not defined: -frob":                    "unknown flag --frob",
		"flag provided but not defined: -x":                       "unknown flag -x",
		"flag needs an argument: -listen":                         "flag --listen needs a value",
		`invalid value "soon" for flag -session-ttl: parse error`: `invalid value "soon" for --session-ttl: parse error`,
		`invalid boolean value "maybe" for -tty: parse error`:     `invalid value "maybe" for --tty: parse error`,
		`invalid value "a -b" for flag -env: bad`:                 `invalid value "a -b" for --env: bad`,
		`could not parse "x" as duration value from env CODEX_X`:  `could not parse "x" as duration value from env CODEX_X`,
	} {
		if got := flagErrorMessage(errors.New(in)); got != want {
			t.Errorf("flagErrorMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUsageErrorText: one line with the command path and its --help.
func TestUsageErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    usageError
		want string
	}{
		{usageError{msg: "missing command"}, "missing command. Run 'codex --help' for usage."},
		{usageError{path: "exec run", msg: "unknown flag --x"}, "exec run: unknown flag --x. Run 'codex exec run --help' for usage."},
	} {
		if got := tc.e.Error(); got != tc.want || tc.e.ExitCode() != 2 {
			t.Errorf("%+v: %q, exit %d; want %q, 2", tc.e, got, tc.e.ExitCode(), tc.want)
		}
	}
}

// TestExecServerFlagEnvVars: every exec-server flag, hidden ones included,
// has its CODEX_EXEC_SERVER_ variable, and none of them is passed on to
// the commands the server runs.
func TestExecServerFlagEnvVars(t *testing.T) {
	flags := execServerCommand().Flags
	var env []string
	for _, f := range flags {
		name := f.Names()[0]
		want := "CODEX_EXEC_SERVER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		ev, ok := f.(interface{ GetEnvVars() []string })
		if !ok || !reflect.DeepEqual(ev.GetEnvVars(), []string{want}) {
			t.Errorf("--%s: environment variables %v, want [%s]", name, ev, want)
		}
		env = append(env, want+"=1")
	}
	kept := append(env, "CODEX_EXEC_SERVER_URL=ws://x", "PATH=/bin")
	if got := withoutFlagEnv(kept, envPrefix, flags); !reflect.DeepEqual(got, []string{"CODEX_EXEC_SERVER_URL=ws://x", "PATH=/bin"}) {
		t.Errorf("withoutFlagEnv kept %v", got)
	}
}

// TestBindEnvVarsUnknownType: a flag type bindEnvVars cannot bind stops
// the program at start-up instead of going without its variable.
func TestBindEnvVarsUnknownType(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a *cli.TimestampFlag")
		}
	}()
	bindEnvVars(envPrefix, []cli.Flag{&cli.TimestampFlag{Name: "at"}})
}

// TestVersionFromBuildInfo: the module version, else the short VCS
// revision (dirty marked), else "devel".
func TestVersionFromBuildInfo(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}
	for _, tc := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: rev}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "0123456789ab"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "0123456789ab-dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := versionFromBuildInfo(&tc.info); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.info, got, tc.want)
		}
	}
}

// TestEveryCommandHasConventions: after newApp every command reports usage
// errors our way and has an action (a group without one would print its
// help on a wrong subcommand).
func TestEveryCommandHasConventions(t *testing.T) {
	app := newApp()
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.OnUsageError == nil || c.Action == nil || !c.HideHelpCommand {
				t.Errorf("%s%s: OnUsageError %v, Action %v, HideHelpCommand %v", prefix, c.Name, c.OnUsageError != nil, c.Action != nil, c.HideHelpCommand)
			}
			walk(prefix+c.Name+" ", c.Subcommands)
		}
	}
	walk("", app.Commands)
	if app.OnUsageError == nil || app.Action == nil {
		t.Error("the root has no usage-error handling")
	}
}
