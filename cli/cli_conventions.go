package cli

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// The command-line conventions of every command, on top of urfave/cli:
// a usage error (unknown flag, bad flag value, missing argument, unknown
// command) is one line on stderr ending with a pointer to the command's
// --help, and exit status 2; help goes to stdout only when asked for
// (--help, -h, or the help command).

// usageExit is the exit status of a usage error.
const usageExit = 2

// usageError is a mistake on the command line of one command. Main prints
// it as one line on stderr and exits with usageExit.
type usageError struct {
	path string // the command's path below the program name: "exec run"; "" for the root
	msg  string
}

func (e *usageError) Error() string {
	prefix, help := "", "codex --help"
	if e.path != "" {
		prefix, help = e.path+": ", "codex "+e.path+" --help"
	}
	return prefix + e.msg + ". Run '" + help + "' for usage."
}

// ExitCode makes a usageError a cli.ExitCoder.
func (e *usageError) ExitCode() int { return usageExit }

// usageErrorf is a usage error of the command of c.
func usageErrorf(c *cli.Context, format string, args ...any) error {
	return &usageError{path: commandPath(c), msg: fmt.Sprintf(format, args...)}
}

// commandPath is the path of c's command below the program name.
func commandPath(c *cli.Context) string {
	if c == nil || c.Command == nil {
		return ""
	}
	name := c.Command.HelpName
	if c.App != nil {
		name = strings.TrimPrefix(name, c.App.HelpName)
	}
	return strings.TrimSpace(name)
}

// flagErrorRewrites turn the flag package's messages, which spell every
// flag with one dash, into ours, which spell long flags with two. They are
// compiled on the first flag error, not at every start of the binary.
var flagErrorRewrites = sync.OnceValue(func() []flagRewrite {
	return []flagRewrite{
		{regexp.MustCompile(`^flag provided but not defined: -(\S+)$`), "unknown flag $1"},
		{regexp.MustCompile(`^flag needs an argument: -(\S+)$`), "flag $1 needs a value"},
		{regexp.MustCompile(`^invalid value (".*") for flag -(\S+): (.*)$`), "invalid value $1 for $2: $3"},
		{regexp.MustCompile(`^invalid boolean value (".*") for -(\S+): (.*)$`), "invalid value $1 for $2: $3"},
		{regexp.MustCompile(`^invalid boolean flag (\S+): (.*)$`), "flag $1 takes no value: $2"},
	}
})

// flagRewrite is one rewrite of flagErrorRewrites.
type flagRewrite struct {
	re   *regexp.Regexp
	repl string
}

// flagErrorMessage words a flag parsing error of urfave/cli.
func flagErrorMessage(err error) string {
	msg := err.Error()
	for _, r := range flagErrorRewrites() {
		if m := r.re.FindStringSubmatchIndex(msg); m != nil {
			out := string(r.re.ExpandString(nil, r.repl, msg, m))
			return dashFlag().ReplaceAllStringFunc(out, spellFlag)
		}
	}
	return msg
}

// dashFlag finds the flag names flagErrorRewrites leave bare: a word
// after "flag " or "for ".
var dashFlag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:flag|for) [A-Za-z0-9][\w-]*`) })

// spellFlag puts the dashes before the flag name of a dashFlag match.
func spellFlag(s string) string {
	word, name, _ := strings.Cut(s, " ")
	if len(name) == 1 {
		return word + " -" + name
	}
	return word + " --" + name
}

// onUsageError is the OnUsageError of every command.
func onUsageError(c *cli.Context, err error, _ bool) error {
	return usageErrorf(c, "%s", flagErrorMessage(err))
}

// noSubcommand is the action of a command that only groups subcommands:
// no argument or an unknown one is a usage error.
func noSubcommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErrorf(c, "missing command")
	}
	return usageErrorf(c, "unknown command %q", c.Args().First())
}

// applyConventions sets the usage-error handling on app and on every
// command below it. urfave/cli's own help command, which prints help on a
// wrong topic and exits 3, is replaced by helpCommand.
func applyConventions(app *cli.App) {
	app.OnUsageError = onUsageError
	app.HideHelpCommand = true
	app.Action = noSubcommand
	app.Commands = append(app.Commands, helpCommand())
	app.Flags = append(app.Flags, cli.HelpFlag) // not added when a "help" command exists
	hideFalseDefaults([]cli.Flag{cli.VersionFlag})
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			cmd.OnUsageError = onUsageError
			cmd.HideHelpCommand = true
			hideFalseDefaults(cmd.Flags)
			if cmd.Action == nil {
				cmd.Action = noSubcommand
			}
			walk(cmd.Subcommands)
		}
	}
	walk(app.Commands)
}

// hideFalseDefaults drops the "(default: false)" of switches from help.
func hideFalseDefaults(flags []cli.Flag) {
	for _, f := range flags {
		if b, ok := f.(*cli.BoolFlag); ok && !b.Value {
			b.DisableDefaultText = true
		}
	}
}

// helpCommand is `codex help [COMMAND...]`: the help of a command on
// stdout, as `codex COMMAND... --help` prints it.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the help of codex or of one of its commands",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: func(c *cli.Context) error {
			path := c.Args().Slice()
			cmds := c.App.Commands
			for i, name := range path {
				var found *cli.Command
				for _, cmd := range cmds {
					if cmd.HasName(name) && !cmd.Hidden {
						found = cmd
					}
				}
				if found == nil {
					return &usageError{msg: fmt.Sprintf("unknown command %q", strings.Join(path[:i+1], " "))}
				}
				cmds = found.Subcommands
			}
			args := append(append([]string{c.App.Name}, path...), "--help")
			return c.App.RunContext(c.Context, args)
		},
	}
}
