package cli

import (
	"os"

	"github.com/codexec/codex/execpolicy"
	"github.com/urfave/cli/v2"
)

// execpolicyCommand is `codex execpolicy check`, the .rules debugging tool
// of Codex 0.169.0 (same arguments, JSON and error texts). The check
// subcommand parses its own arguments, as the reference's parser does.
func execpolicyCommand() *cli.Command {
	return &cli.Command{
		Name:      "execpolicy",
		Usage:     "tools for .rules files (the shell tool's exec policy)",
		UsageText: "codex execpolicy check --rules FILE [--pretty] COMMAND [ARGS...]",
		Subcommands: []*cli.Command{{
			Name:            "check",
			Usage:           "evaluate a command against .rules files and print the matches as JSON",
			UsageText:       execpolicy.CheckUsage,
			SkipFlagParsing: true,
			HideHelp:        true,
			Action: func(c *cli.Context) error {
				if code := execpolicy.RunCheck(c.Args().Slice(), os.Stdout, os.Stderr); code != 0 {
					return cli.Exit("", code)
				}
				return nil
			},
		}},
	}
}
