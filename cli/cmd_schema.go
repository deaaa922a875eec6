package cli

import (
	"github.com/codexec/codex/schema"
	"github.com/urfave/cli/v2"
)

// generateSchemaCommand is `codex exec-server generate-json-schema`.
func generateSchemaCommand() *cli.Command {
	return &cli.Command{
		Name:  "generate-json-schema",
		Usage: "write the JSON Schema (draft 2020-12) of every exec-server method and notification",
		Description: `Writes one file per method's params and result and per notification into DIR,
named after the method: process/start gives process_start.params.json and
process_start.result.json, process/output gives process_output.notification.json.
The schemas are generated from the Go protocol types (package wire), with sorted
keys, so the output is the same on every run. Generated files of methods that no
longer exist are removed from DIR; other files are left alone.

The repository keeps them under schema/; refresh them with
` + schema.RefreshCommand + `.`,
		UsageText: "codex exec-server generate-json-schema --out DIR",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "`DIR` to write the schema files into (created if missing); required"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf(c, "unexpected argument %q", c.Args().First())
			}
			if c.String("out") == "" {
				return usageErrorf(c, "missing --out DIR")
			}
			if err := schema.Write(c.String("out")); err != nil {
				return cli.Exit("generate-json-schema: "+err.Error(), 1)
			}
			return nil
		},
	}
}
