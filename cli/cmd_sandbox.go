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
	"time"

	"github.com/codexec/codex/config"
	"github.com/codexec/codex/netproxy"
	"github.com/codexec/codex/sandbox"
	"github.com/urfave/cli/v2"
)

func sandboxCommand() *cli.Command {
	cmd := &cli.Command{
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
or @FILE; --permissions-profile NAME a profile of $CODEX_HOME/config.toml
(with -c, --enable, --disable as exec-server takes them). They replace --mode.

A domain-filtered network: --allow-domain and --deny-domain (patterns such as
api.example.com, *.example.com, **.example.com) give the command a network of
its own whose only way out is a proxy this process runs, which lets it reach
only the allowed hosts (docs/sandbox.md §9); a config.toml profile with
[features] network_proxy = true does the same with its domains. The proxy's
decisions are printed on stderr.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mode", Value: "read-only", Usage: "`MODE`: read-only, workspace-write or danger-full-access"},
			&cli.StringSliceFlag{Name: "writable-root", Usage: "extra writable `DIR` (workspace-write; repeatable)"},
			&cli.BoolFlag{Name: "network", Usage: "allow network access"},
			&cli.BoolFlag{Name: "exclude-tmp", Usage: "workspace-write: do not make /tmp and $TMPDIR writable"},
			&cli.StringFlag{Name: "policy-json", Usage: "legacy SandboxPolicy as `JSON` or @FILE"},
			&cli.StringFlag{Name: "profile-json", Usage: "PermissionProfile as `JSON` or @FILE"},
			&cli.StringFlag{Name: "permissions-profile", Usage: "the permission profile `NAME` of config.toml (a built-in such as :workspace, or [permissions.NAME])"},
			&cli.StringSliceFlag{Name: "allow-domain", Usage: "network through a proxy that allows `PATTERN` (repeatable)"},
			&cli.StringSliceFlag{Name: "deny-domain", Usage: "network through a proxy that denies `PATTERN` (repeatable; wins over allow)"},
			&cli.StringFlag{Name: "network-mode", Value: "full", Usage: "proxied network: `MODE` full, or limited (GET, HEAD, OPTIONS over plain HTTP)"},
			&cli.BoolFlag{Name: "allow-local-binding", Usage: "proxied network: allowed names may resolve to local and private addresses"},
		},
		Action: runSandbox,
	}
	cmd.Flags = append(cmd.Flags, configFlags()...)
	return cmd
}

// jsonArg reads a flag value that is JSON or @FILE.
func jsonArg(v string) (json.RawMessage, error) {
	if name, ok := strings.CutPrefix(v, "@"); ok {
		return os.ReadFile(name)
	}
	return json.RawMessage(v), nil
}

// sandboxProfile builds the profile the flags describe: the profile of
// --policy-json, --profile-json, --permissions-profile or --mode, narrowed
// to a proxied network by --allow-domain and --deny-domain.
func sandboxProfile(c *cli.Context, cwd string) (*sandbox.Sandbox, error) {
	sb, err := baseSandboxProfile(c, cwd)
	if err != nil || !c.IsSet("allow-domain") && !c.IsSet("deny-domain") {
		return sb, err
	}
	set := &netproxy.Settings{Domains: map[string]netproxy.Action{}, Mode: netproxy.Mode(c.String("network-mode")),
		AllowLocalBinding: c.Bool("allow-local-binding"), EnableSOCKS5: true}
	if set.Mode != netproxy.ModeFull && set.Mode != netproxy.ModeLimited {
		return nil, fmt.Errorf("--network-mode %q: want full or limited", set.Mode)
	}
	for _, d := range c.StringSlice("allow-domain") {
		set.Domains[d] = netproxy.Allow
	}
	for _, d := range c.StringSlice("deny-domain") {
		set.Domains[d] = netproxy.Deny
	}
	if sb.Permissions.Type == sandbox.ProfileManaged {
		sb.Permissions.Network = sandbox.NetworkEnabled
	}
	sb.Permissions.Proxy = set
	return sb, nil
}

// baseSandboxProfile is the sandbox of the flags before the domains.
func baseSandboxProfile(c *cli.Context, cwd string) (*sandbox.Sandbox, error) {
	n := 0
	for _, f := range []string{"policy-json", "profile-json", "permissions-profile"} {
		if c.IsSet(f) {
			n++
		}
	}
	var prof sandbox.Profile
	var err error
	switch {
	case n > 1:
		return nil, errors.New("give one of --policy-json, --profile-json and --permissions-profile")
	case c.IsSet("permissions-profile"):
		return configSandbox(c, c.String("permissions-profile"), cwd)
	case c.IsSet("policy-json"):
		var raw json.RawMessage
		if raw, err = jsonArg(c.String("policy-json")); err != nil {
			return nil, err
		}
		var pol sandbox.Policy
		if pol, err = sandbox.ParsePolicy(raw); err != nil {
			return nil, err
		}
		prof = pol.Profile()
	case c.IsSet("profile-json"):
		var raw json.RawMessage
		if raw, err = jsonArg(c.String("profile-json")); err != nil {
			return nil, err
		}
		if prof, err = sandbox.ParseProfile(raw); err != nil {
			return nil, err
		}
	default:
		if prof, err = sandbox.ModeProfile(c.String("mode"), sandbox.ModeOptions{
			WritableRoots: c.StringSlice("writable-root"), Network: c.Bool("network"),
			ExcludeTmpdirEnvVar: c.Bool("exclude-tmp"), ExcludeSlashTmp: c.Bool("exclude-tmp"),
		}); err != nil {
			return nil, err
		}
	}
	return &sandbox.Sandbox{Permissions: prof}, nil
}

func runSandbox(c *cli.Context) error {
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return usageErrorf(c, "missing command (codex sandbox [flags] -- COMMAND [ARGS...])")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	sb, err := sandboxProfile(c, cwd)
	if err != nil {
		return usageErrorf(c, "%s", err)
	}
	var policy *netproxy.Policy
	if sb.Permissions.Proxied() {
		if policy, err = netproxy.Compile(*sb.Permissions.Proxy); err != nil {
			return cli.Exit("codex sandbox: network proxy: "+err.Error(), 1)
		}
	}
	plan, err := sandbox.Prepare(sb, sandbox.Request{Cwd: cwd, Env: os.Environ()})
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	var w sandbox.WrappedCommand
	var started func()
	var proxy *netproxy.Proxy
	defer func() {
		if proxy != nil {
			_ = proxy.Close()
		}
	}()
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
		if w, err = sandbox.Wrap(*plan); err != nil {
			return cli.Exit(err.Error(), 1)
		}
		if plan.Proxy != nil {
			// The helper hands over the listeners it opened in the
			// command's network namespace; this process serves them.
			started = func() {
				w.Close()
				proxy, err = serveSandboxProxy(&w, policy)
				if err != nil {
					fmt.Fprintf(os.Stderr, "codex sandbox: network proxy: %v\n", err)
				}
			}
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
		err = runForwardingSignals(cmd, started)
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

// serveSandboxProxy serves the proxy of the started command w with
// policy, printing each decision on stderr.
func serveSandboxProxy(w *sandbox.WrappedCommand, policy *netproxy.Policy) (*netproxy.Proxy, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ls, err := w.ProxyListeners(ctx)
	if err != nil {
		return nil, err
	}
	p := netproxy.New(netproxy.Options{Policy: policy, OnDecision: func(ev netproxy.Event) {
		verdict := "allowed"
		if !ev.Allowed {
			verdict = "blocked (" + ev.Reason + ")"
		}
		fmt.Fprintf(os.Stderr, "codex sandbox: network: %s %s:%d %s\n", ev.Protocol, ev.Host, ev.Port, verdict)
	}})
	for _, l := range ls {
		p.Serve(l.Route, l.Listener)
	}
	return p, nil
}

// configSandbox is the sandbox of the permission profile name of
// config.toml ($CODEX_HOME, with the config flags' overrides) for cwd.
func configSandbox(c *cli.Context, name, cwd string) (*sandbox.Sandbox, error) {
	opts, err := configOptions(c)
	if err != nil {
		return nil, err
	}
	perms, err := config.LoadWith(config.Path(), opts)
	if err != nil {
		return nil, err
	}
	r, err := perms.Resolve(name, cwd)
	if err != nil {
		return nil, fmt.Errorf("permission profile %s: %w", name, err)
	}
	if r.Disabled {
		return &sandbox.Sandbox{Permissions: sandbox.DangerFullAccess()}, nil
	}
	return &sandbox.Sandbox{Permissions: r.Profile, Cwd: cwd, WorkspaceRoots: r.WorkspaceRoots}, nil
}
