package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/codexec/codex/sandbox"
	"github.com/urfave/cli/v2"
)

// installCommand copies the running executable into a directory: in a
// container image with nothing but codex (FROM scratch: no cp, no shell)
// it is how an init container hands codex to the workspace container
// through a shared volume.
func installCommand() *cli.Command {
	return &cli.Command{
		Name:      "install",
		Usage:     "copy this codex executable into a directory",
		ArgsUsage: " ",
		Description: `Copies the running executable to DIR/NAME (mode 0755; DIR is created if
missing), atomically: a reader sees the old file or the complete new one. Made for
an init container built FROM scratch, which has no cp: run
  codex install --to /shared/bin
with an emptyDir volume at /shared, and run /shared/bin/codex exec-server in the
workspace container. Prints the installed path.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Required: true, Usage: "`DIR` to copy codex into"},
			&cli.StringFlag{Name: "name", Value: "codex", Usage: "file `NAME` in DIR"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cli.Exit("install takes no arguments; give the directory with --to", 2)
			}
			name := c.String("name")
			if name == "" || filepath.Base(name) != name {
				return cli.Exit("--name must be a plain file name", 2)
			}
			dst := filepath.Join(c.String("to"), name)
			if err := installSelf(dst); err != nil {
				return cli.Exit("install: "+err.Error(), 1)
			}
			_, err := fmt.Fprintln(c.App.Writer, dst)
			return err
		},
	}
}

// installSelf copies our running image (the file we were started from,
// even if it was replaced since) to dst through a temporary file in the
// same directory and a rename.
func installSelf(dst string) error {
	src, err := os.Open(sandbox.SelfExe)
	if err != nil {
		return err
	}
	defer src.Close()
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".codex-install-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
