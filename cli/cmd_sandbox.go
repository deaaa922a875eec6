package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/codexec/codex/sandbox"
	"github.com/urfave/cli/v2"
)

func sandboxCommand() *cli.Command {
	return &cli.Command{
		Name:      "sandbox",
		Usage:     "run a command under a sandbox policy, to try a policy by hand",
		ArgsUsage: "-- COMMAND [ARGS...]",
		Description: `Runs COMMAND the way exec-server runs a sandboxed process/start: our own
binary is re-executed as the sandbox helper, which builds a read-only view of
the system with the writable roots re-bound, drops capabilities, applies
Landlock and the seccomp network filter, and then executes COMMAND. This
process itself is never restricted. Exits with COMMAND's exit code (128+N for
a death by signal N).

--mode workspace-write makes the current directory, the --writable-root
directories, /tmp and $TMPDIR (unless --exclude-tmp) writable. --policy-json
takes a legacy SandboxPolicy and --profile-json a PermissionProfile, as JSON
or @FILE; they replace --mode.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mode", Value: "read-only", Usage: "`MODE`: read-only, workspace-write or danger-full-access"},
			&cli.StringSliceFlag{Name: "writable-root", Usage: "extra writable `DIR` (workspace-write; repeatable)"},
			&cli.BoolFlag{Name: "network", Usage: "allow network access"},
			&cli.BoolFlag{Name: "exclude-tmp", Usage: "workspace-write: do not make /tmp and $TMPDIR writable"},
			&cli.StringFlag{Name: "policy-json", Usage: "legacy SandboxPolicy as `JSON` or @FILE"},
			&cli.StringFlag{Name: "profile-json", Usage: "PermissionProfile as `JSON` or @FILE"},
		},
		Action: runSandbox,
	}
}

// jsonArg reads a flag value that is JSON or @FILE.
func jsonArg(v string) (json.RawMessage, error) {
	if name, ok := strings.CutPrefix(v, "@"); ok {
		return os.ReadFile(name)
	}
	return json.RawMessage(v), nil
}

// sandboxProfile builds the profile the flags describe.
func sandboxProfile(c *cli.Context) (sandbox.Profile, error) {
	switch {
	case c.IsSet("policy-json") && c.IsSet("profile-json"):
		return sandbox.Profile{}, errors.New("give either --policy-json or --profile-json, not both")
	case c.IsSet("policy-json"):
		raw, err := jsonArg(c.String("policy-json"))
		if err != nil {
			return sandbox.Profile{}, err
		}
		pol, err := sandbox.ParsePolicy(raw)
		if err != nil {
			return sandbox.Profile{}, err
		}
		return pol.Profile(), nil
	case c.IsSet("profile-json"):
		raw, err := jsonArg(c.String("profile-json"))
		if err != nil {
			return sandbox.Profile{}, err
		}
		return sandbox.ParseProfile(raw)
	}
	return sandbox.ModeProfile(c.String("mode"), sandbox.ModeOptions{
		WritableRoots: c.StringSlice("writable-root"), Network: c.Bool("network"),
		ExcludeTmpdirEnvVar: c.Bool("exclude-tmp"), ExcludeSlashTmp: c.Bool("exclude-tmp"),
	})
}

func runSandbox(c *cli.Context) error {
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return usageErrorf(c, "missing command (codex sandbox [flags] -- COMMAND [ARGS...])")
	}
	prof, err := sandboxProfile(c)
	if err != nil {
		return usageErrorf(c, "%s", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	plan, err := sandbox.Prepare(&sandbox.Sandbox{Permissions: prof}, sandbox.Request{Cwd: cwd, Env: os.Environ()})
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	var cmd *exec.Cmd
	sandboxed := plan != nil
	if !sandboxed {
		cmd = exec.Command(argv[0], argv[1:]...)
	} else {
		if plan.Refusal != "" {
			return cli.Exit(plan.Refusal, 1)
		}
		plan.Argv, plan.Dir, plan.Env = argv, cwd, os.Environ()
		// The placeholders of the missing protected names are made or
		// shared here, like a server does, for as long as the command
		// runs: the same names are placeholders in every process that
		// sandboxes in these roots.
		guard := sandbox.GuardPlan(plan, func(msg, path string, err error) {
			if err != nil {
				msg += ": " + err.Error()
			}
			fmt.Fprintf(os.Stderr, "codex sandbox: %s: %s\n", path, msg)
		})
		defer guard.Release()
		w, err := sandbox.Wrap(*plan)
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		// The helper gets a session of its own (Command sets Setsid):
		// a command on the caller's terminal session could push input
		// into it (TIOCSTI) or signal its jobs. Terminal signals then no
		// longer reach the command; runForwardingSignals passes them on.
		cmd = w.Command(context.Background())
		if w.DenyNamedUnixSends {
			// Network off: a cgroup of its own, whose filter stops a
			// socketpair's sendmsg to a named host socket.
			cg, err := sandbox.NewCommandCgroup()
			if err != nil {
				fmt.Fprintf(os.Stderr, "codex sandbox: warning: the command can still send to host unix datagram sockets by path: %v\n", err)
			} else {
				defer cg.Remove()
				cg.Apply(cmd.SysProcAttr)
			}
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if sandboxed {
		err = runForwardingSignals(cmd)
	} else {
		// Unsandboxed, the command stays in the terminal's session and
		// process group: terminal signals reach it directly.
		stop := ignoreSignals()
		err = cmd.Run()
		stop()
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return cli.Exit(err.Error(), 127)
		}
		return cli.Exit("", exitCode(ee.ProcessState))
	}
	return nil
}

// exitCode is the shell convention: the code, or 128+N for signal N.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
