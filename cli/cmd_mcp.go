package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/codexec/codex/config"
	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/shelltool"
	"github.com/codexec/codex/shelltool/escalate"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// mcpServerName is the argv[0] base name that runs exec-mcp-server
// directly, as the reference's binary of that name does.
const mcpServerName = "codex-exec-mcp-server"

func execMCPServerCommand() *cli.Command {
	return &cli.Command{
		Name:  "exec-mcp-server",
		Usage: "serve the MCP `shell` tool over stdio, judging every exec by .rules",
		Description: `An MCP server (protocol 2025-06-18, newline-delimited JSON-RPC on stdin and
stdout; logs on stderr) offering one tool, "shell": it runs a Bash command in
the sandbox of the client's sandbox state (per-call _meta
"codex/sandbox-state", else the last codex/sandbox-state/update, else
read-only). Every exec of the call (the shell's, and those of any program it
runs: sh -c, env, xargs, python...) stops in the kernel for this server, which
traces the call with ptrace (--intercept ptrace, the default; any shell,
/bin/bash unless --bash). With --intercept wrapper, a patched Bash (--bash, or
CODEX_BASH_PATH) execs its own programs through codex-execve-wrapper instead,
which asks this server over an inherited socket; programs started by other
programs are not seen. Either way: "allow" rules run the program outside the
sandbox, "prompt" asks the user by MCP elicitation, "forbidden" refuses it
(exit 1, "Execution denied: ..."), and programs no rule matches run in the
sandbox. The rules are the *.rules files of /etc/codex/rules and
$CODEX_HOME/rules, read once at start-up.

Each call runs in a cgroup leaf of its own (cgroup v2), with the shell, what
it forks and the programs escalated for it: --max-pids-per-process and
--max-memory-per-process limit it as they limit an exec-server command, and
the whole leaf is killed when the call ends, times out or is cancelled.

With [features] network_proxy = true in $CODEX_HOME/config.toml (the file the
Codex CLI reads, and passes CODEX_HOME for; -c, --enable and --disable apply
over it), a call whose sandbox state enables the network runs behind a proxy
that allows the domains of the default_permissions profile, or nothing when
that profile has no proxied network; a full-access state (danger-full-access,
disabled, external) keeps the whole network (docs/shell-tool.md §3.6).

Use it from Codex with, in config.toml:
  [mcp_servers.shell-tool]
  command = "/path/to/codex"
  args = ["exec-mcp-server"]
  [features]
  shell_tool = false`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "bash", Usage: "`PATH` of the shell (default: /bin/bash with --intercept ptrace, $CODEX_BASH_PATH, a patched Bash, with wrapper)"},
			&cli.StringFlag{Name: "execve", Usage: "`PATH` of codex-execve-wrapper (default: this binary under that name, linked in a private temporary directory)"},
			&cli.BoolFlag{Name: "preserve-program-paths", Usage: "match rules on the full program path instead of its base name"},
			&cli.BoolFlag{Name: "escalate-in-writable-dirs", Usage: "let an allowed program escalate even when its working directory (or HOME) lies where a sandboxed call could write, and may have planted the configuration the program reads (docs/shell-tool.md §11.2)"},
			&cli.StringFlag{Name: "intercept", Value: interceptPtrace, Usage: "how execs are intercepted: `MODE` ptrace (every exec of the call, traced in the kernel; any shell) or wrapper (a patched shell execs codex-execve-wrapper; that shell's own execs only)"},
			&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "log `LEVEL`: debug, info, warn or error (stderr)"},
			&cli.Int64Flag{Name: "max-pids-per-process", Value: defaultMaxPids, Usage: "`N` tasks (processes and threads) one call may have at once (its shell, what that forks, the programs escalated for it), through its cgroup's pids.max; stops fork bombs; 0: no limit"},
			&cli.StringFlag{Name: "max-memory-per-process", Value: defaultMaxMemory, Usage: "memory.max of each call's cgroup: `SIZE` in bytes, with a K, M or G suffix, or a percentage of the memory the server may use (its cgroup's memory limit, else physical memory); 0: no limit"},
			stateDirFlag,
		}, configFlags()...),
		Action: runExecMCPServer,
	}
}

// mcpEvaluator loads the exec policy of a server once, at start-up: the
// *.rules files of /etc/codex/rules and $CODEX_HOME/rules (docs/shell-tool.md §7.1).
// Any error is fatal, so that a typo cannot silently drop a forbidden rule.
func mcpEvaluator() (shelltool.EvaluateFunc, *execpolicy.Policy, error) {
	home, err := execpolicy.UserLayerHome()
	if err != nil {
		return nil, nil, err
	}
	pol, err := execpolicy.LoadLayers(home)
	if err != nil {
		return nil, nil, rulesLoadError(err)
	}
	return func(cmd []string) (execpolicy.Decision, bool) {
		ev := pol.Evaluate(cmd)
		return ev.Decision, ev.PolicyDriven
	}, pol, nil
}

// rulesLoadError words a load error as the reference server does for a
// rules file it cannot parse.
func rulesLoadError(err error) error {
	var fe *execpolicy.FileError
	if errors.As(err, &fe) && fe.Op == "parse" {
		return fmt.Errorf("failed to parse rules file %s: starlark error: %s", fe.Path, fe.Cause())
	}
	return err
}

func runExecMCPServer(c *cli.Context) error {
	defer surviveBrokenPipe()()
	if c.NArg() > 0 {
		return usageErrorf(c, "unexpected argument %q", c.Args().First())
	}
	mode := c.String("intercept")
	if mode != interceptPtrace && mode != interceptWrapper {
		return usageErrorf(c, "unknown --intercept mode %q (want ptrace or wrapper)", mode)
	}
	bash := c.String("bash")
	if mode == interceptWrapper {
		var err error
		if bash, err = shelltool.ResolveBash(bash); err != nil {
			return cli.Exit(err.Error(), 1)
		}
	} else if bash == "" {
		bash = shelltool.DefaultTracedBash
	}
	limits, memShare, err := processLimits(c)
	if err != nil {
		return usageErrorf(c, "%s", err)
	}
	logger, err := newLogger(c.String("log-level"), "console")
	if err != nil {
		return usageErrorf(c, "%s", err)
	}
	defer func() { _ = logger.Sync() }()
	memShare.log(logger)
	evaluate, pol, err := mcpEvaluator()
	if err != nil {
		return cli.Exit("Error: "+err.Error(), 1)
	}
	network, err := mcpNetwork(c, logger)
	if err != nil {
		return cli.Exit("exec-mcp-server: "+err.Error(), 1)
	}
	pathDirs := programDirs(os.Getenv("PATH"))
	stopWatchdog, err := startWatchdog(c, logger, c.String("log-level"), "console")
	if err != nil {
		return cli.Exit("exec-mcp-server: "+err.Error(), 1)
	}
	defer stopWatchdog() // after the tree's Close, deferred below
	tree := callTree(logger, limits)
	if tree != nil {
		defer func() {
			if err := tree.Close(); err != nil {
				logger.Warn("removing the calls' cgroups", zap.Error(err))
			}
		}()
	}
	var runner shelltool.Runner = &shelltool.TracedRunner{Bash: bash, Logger: logger, Tree: tree}
	if mode == interceptWrapper {
		wrapper := c.String("execve")
		if wrapper == "" {
			dir, link, err := wrapperLink()
			if err != nil {
				return cli.Exit("exec-mcp-server: "+err.Error(), 1)
			}
			defer os.RemoveAll(dir)
			wrapper = link
		}
		runner = &shelltool.BashRunner{Bash: bash, Wrapper: wrapper, Logger: logger, Tree: tree}
	}
	in, restore := pollableStdin()
	defer restore()
	closer, _ := in.(io.Closer)
	return shelltool.Serve(c.Context, in, os.Stdout, closer, shelltool.Config{
		Name: "codex", Version: buildVersion(),
		Evaluate:             evaluate,
		PreserveProgramPaths: c.Bool("preserve-program-paths"),
		Programs:             shelltool.NewPrograms(pol.Programs(), pol.HostExecutables, pathDirs),
		Escalation: &shelltool.EscalationPolicy{Dirs: shelltool.TrustedPathDirs(os.Getenv("PATH")),
			HostExecutables: pol.HostExecutables, InWritableDirs: c.Bool("escalate-in-writable-dirs")},
		Network: network,
		Runner:  runner,
		Logger:  logger,
	})
}

// mcpNetwork is the server's rule for a call whose sandbox state enables
// the network (docs/shell-tool.md §3.6), from $CODEX_HOME/config.toml with
// the config flags: nil (the whole network, as the state says) without the
// network_proxy feature; with it, a proxy of the default_permissions
// profile's settings when that profile is proxied, and otherwise (not
// proxied, not usable in the server's cwd, settings that do not compile) a
// proxy that allows nothing, since the Codex CLI sends the state alone and
// every enabled network goes through a proxy with the feature on. A file
// the Codex CLI refuses stops start-up, as it does the exec-server's.
func mcpNetwork(c *cli.Context, logger *zap.Logger) (*shelltool.NetworkProxy, error) {
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
		logger.Debug("configuration", zap.String("warning", w))
	}
	if !perms.ProxyGate() {
		logger.Info("network: the network_proxy feature is off: a call whose sandbox state enables the network has the whole network", zap.String("file", path))
		return nil, nil
	}
	name := perms.DefaultName()
	deny := func(why string, err error) *shelltool.NetworkProxy {
		n := shelltool.DenyAllProxy(why)
		logger.Info("network: a call whose sandbox state enables the network runs behind a proxy that allows nothing",
			zap.String("file", path), zap.String("default_permissions", name), zap.String("why", why), zap.Error(err))
		return n
	}
	cwd, err := os.Getwd()
	if err != nil {
		return deny("the server's cwd is unknown", err), nil
	}
	r, err := perms.Resolve(name, cwd)
	switch {
	case err != nil:
		return deny("the default profile cannot be used", err), nil
	case r.Disabled || !r.Profile.Proxied():
		return deny("the default profile has no proxied network", nil), nil
	}
	n, err := shelltool.NewNetworkProxy(*r.Profile.Proxy, "default_permissions "+name)
	if err != nil {
		return deny("the default profile's proxy settings are invalid", err), nil
	}
	logger.Info("network: a call whose sandbox state enables the network runs behind a proxy with the default profile's settings",
		zap.String("file", path), zap.String("default_permissions", name), zap.Int("domains", len(r.Profile.Proxy.Domains)))
	return n, nil
}

// callTree makes the owner of the calls' cgroup leaves (docs/shell-tool.md §4.1),
// or returns nil where cgroup v2 leaves are unavailable: calls then run
// without a leaf, as the debug log says. There is no subreaper fallback as
// in the exec-server: its reaper would reap the children that the ptrace
// tracer and the escalator wait for.
func callTree(logger *zap.Logger, lim proc.Limits) *proc.TreeKiller {
	tree, err := proc.NewCgroupTreeKiller(logger, lim)
	if err != nil {
		logger.Debug("no cgroup leaf per call: calls run without --max-pids-per-process and --max-memory-per-process, and what a call leaves is killed by its interceptor alone", zap.Error(err))
		return nil
	}
	return tree
}

// The --intercept modes of exec-mcp-server.
const (
	// interceptPtrace traces every exec of a call in the kernel (see
	// docs/shell-tool.md §10): any shell, nested execs included. The default.
	interceptPtrace = "ptrace"
	// interceptWrapper relies on a patched shell execing
	// codex-execve-wrapper (docs/shell-tool.md §4-6): only that shell's own execs.
	interceptWrapper = "wrapper"
)

// wrapperLink makes the default wrapper: a symlink named
// codex-execve-wrapper to this executable, in a private (0700) temporary
// directory that the caller removes. The sandboxed command execs it: the
// directory stays readable under every policy that reads the temporary
// directory's file system (all but restricted reads), and replacing the
// link gains a command nothing, since the wrapper only asks the server,
// which judges every request itself.
func wrapperLink() (dir, link string, err error) {
	self, err := os.Executable()
	if err != nil {
		return "", "", err
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", "", err
	}
	dir, err = os.MkdirTemp("", "codex-mcp-")
	if err != nil {
		return "", "", err
	}
	link = filepath.Join(dir, escalate.WrapperName)
	if err := os.Symlink(self, link); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, link, nil
}

// programDirs are the directories where the rules' program names are
// looked up (docs/shell-tool.md §11.3): the server's PATH, then the usual
// system directories.
func programDirs(path string) []string {
	var out []string
	for _, d := range append(filepath.SplitList(path), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin") {
		if filepath.IsAbs(d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
