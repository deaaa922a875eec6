//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// probeOK is what the helper prints in probe mode once everything is
// enforced; Available checks it, so a binary that does not dispatch to
// ChildMain cannot pass the probe by accident.
const probeOK = "codex-linux-sandbox probe ok\n"

// noCommandMessage is the reference's text for a helper without a command.
const noCommandMessage = "No command specified to execute."

// childArgs is the helper's command line: --plan-fd N [--probe].
type childArgs struct {
	planFD int
	probe  bool // enforce the plan, then exit 0 (Available)
}

// ChildMain is the sandbox helper: the entry point when our binary runs as
// HelperName. main calls it before anything else (no logger, no server
// state), with the in-process parts opts names, and exits with the status
// it returns.
//
// It runs in the child that Wrap describes, never in the server: the
// restrictions it applies are irreversible and process-wide. It locks its
// OS thread, reads the plan from the inherited fd, builds the mount view
// (docs/sandbox.md §4.3), drops every capability, sets no_new_privs, applies
// Landlock and the seccomp filter, then runs the command: as PID 1 of its
// PID namespace it forks and execs it, reaps every child and returns the
// command's status (128+N for a death by signal N); without a PID namespace
// it execs the command in its place. Any failure before the command runs
// is reported on stderr with status 1, and the command never runs.
func ChildMain(opts ChildOptions) int {
	// Never unlocked: capabilities and no_new_privs are per thread, and the
	// command is forked from this thread.
	runtime.LockOSThread()
	// Group signals aimed at the command also reach the helper. Handle and
	// discard them (the channel is never read): SIG_IGN would be inherited
	// by the command, and the runtime's default would end the helper with
	// its own status instead of the command's.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)

	args, err := parseChildArgs(os.Args[1:])
	if err != nil {
		return childFail(err)
	}
	plan, err := readPlan(args.planFD)
	if err != nil {
		return childFail(err)
	}
	if plan.Refusal != "" {
		fmt.Fprintln(os.Stderr, plan.Refusal)
		return 1
	}
	if err := opts.validate(&plan); err != nil {
		return childFail(err)
	}
	if err := checkKeptFD(&plan); err != nil {
		return childFail(err)
	}
	if err := awaitTracer(&plan); err != nil {
		return childFail(err)
	}
	// A proxied plan's listeners go to the server before anything else,
	// and the command gets their variables (docs/sandbox.md §4.9).
	proxyVars, err := openProxy(&plan)
	if err != nil {
		return childFail(err)
	}
	if proxyVars != nil {
		plan.Env = withEnv(plan.Env, proxyVars)
	}
	if len(plan.Argv) == 0 && !plan.FSHelper && !args.probe {
		fmt.Fprintln(os.Stderr, noCommandMessage)
		return 1
	}
	w, err := enforce(&plan)
	if err != nil {
		return childFail(err)
	}
	switch {
	case args.probe:
		fmt.Print(probeOK)
		return 0
	case plan.FSHelper:
		return w.finish(opts.FSHelper())
	}
	return runCommand(&plan, w)
}

// checkKeptFD refuses a plan whose kept fd (Plan.KeepFD) is not an open
// Unix socket distinct from the helper's own inherited fds.
func checkKeptFD(p *Plan) error {
	fd := p.KeepFD
	if fd == 0 {
		return nil
	}
	if fd < 3 || fd == planFD || (p.PTSFD != 0 && fd == p.PTSFD) {
		return fmt.Errorf("kept fd %d: not a free inherited fd", fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("kept fd %d: %w", fd, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("kept fd %d: not a socket", fd)
	}
	if dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || dom != unix.AF_UNIX {
		return fmt.Errorf("kept fd %d: not a Unix socket", fd)
	}
	return nil
}

// errNoFSHelper refuses an fs-helper plan in a helper composed without
// ChildOptions.FSHelper.
var errNoFSHelper = errors.New("no fs helper in this binary")

// validate reports a plan that a helper composed with o cannot run, before
// anything is enforced.
func (o ChildOptions) validate(p *Plan) error {
	if p.FSHelper && o.FSHelper == nil {
		return errNoFSHelper
	}
	return nil
}

// childFail reports err on stderr and returns exit status 1. The reference's
// fixed texts are printed on their own.
func childFail(err error) int {
	if errors.Is(err, errCapsRetained) || errors.Is(err, ErrUnenforceable) {
		fmt.Fprintln(os.Stderr, err)
	} else {
		fmt.Fprintln(os.Stderr, HelperName+": "+err.Error())
	}
	return 1
}

// parseChildArgs parses the helper's own arguments.
func parseChildArgs(args []string) (childArgs, error) {
	a := childArgs{planFD: -1}
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--plan-fd":
			if i+1 >= len(args) {
				return a, errors.New("--plan-fd needs a value")
			}
			i++
			fd, err := strconv.Atoi(args[i])
			if err != nil || fd < 3 {
				return a, fmt.Errorf("bad --plan-fd %q", args[i])
			}
			a.planFD = fd
		case "--probe":
			a.probe = true
		default:
			return a, fmt.Errorf("unknown argument %q", args[i])
		}
	}
	if a.planFD < 0 {
		return a, errors.New("missing --plan-fd")
	}
	return a, nil
}

// readPlan reads and closes the plan fd. It reads with pread from offset 0,
// so the fd's shared offset does not matter, and it rejects fields it does
// not know: a restriction the helper cannot see must not be dropped.
func readPlan(fd int) (Plan, error) {
	f := os.NewFile(uintptr(fd), "plan")
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, 0, maxPlanSize+1))
	if err != nil {
		return Plan{}, fmt.Errorf("reading the plan: %w", err)
	}
	if len(data) > maxPlanSize {
		return Plan{}, errors.New("reading the plan: plan too large")
	}
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("decoding the plan: %w", err)
	}
	return p, nil
}

// enforce applies the plan to the helper process, in the order of
// docs/sandbox.md §4.3. It returns the protected-create watcher (nil without
// protected paths).
func enforce(p *Plan) (*protectWatcher, error) {
	if p.Unsandboxed {
		return nil, enforceTraceOnly(p)
	}
	if !p.NewMountNS || p.NewPIDNS == p.InheritPIDNS {
		// Without them the command would keep the host's cgroup
		// filesystems, kernel knobs and processes (Wrap always sets both,
		// or the mount namespace and InheritPIDNS, which the operator chose).
		return nil, errors.New("the plan has no mount and PID namespace")
	}
	dir := p.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		dir = wd
	}
	shadowed, err := setupMounts(p)
	if err != nil {
		return nil, err
	}
	if p.NewNetNS {
		loopbackUp()
	}
	// Re-resolve the working directory through the new mounts: the
	// inherited one still points into the old, read-only tree.
	if err := os.Chdir(dir); err != nil {
		return nil, err
	}
	// The parents are opened now (openat2, which the filter hides); the
	// sweeps start once the process is restricted (protectWatcher.start).
	w, err := openProtected(slices.DeleteFunc(slices.Clone(p.ProtectedCreate), func(s string) bool { return shadowed[s] }), p.keptPlaceholders(), p.FSHelper)
	if err != nil {
		return nil, err
	}
	// Every plan, full write included (docs/sandbox.md §4.3 step 9): uid 0
	// without capabilities cannot mount, load modules or BPF programs, or
	// override a file's mode. What root's file modes still grant (the
	// cgroup.procs files, sysctls) setupMounts hid or made read-only.
	if err := dropCapabilities(p.FSHelper); err != nil {
		return nil, err
	}
	if err := setNoNewPrivs(p.FSHelper); err != nil {
		return nil, err
	}
	if err := applyLandlock(p.Landlock); err != nil {
		return nil, err
	}
	if p.InheritPIDNS {
		// In the server's PID namespace every host process is in view:
		// no signal may leave the sandbox (docs/sandbox.md §4.2).
		if err := scopeSignals(); err != nil {
			return nil, err
		}
	}
	if err := installSeccomp(p.Seccomp, p.TraceExecFD != 0, p.InheritPIDNS); err != nil {
		return nil, err
	}
	if err := w.start(); err != nil {
		return nil, err
	}
	return w, nil
}

// enforceTraceOnly is enforce for an Unsandboxed plan: no_new_privs and
// the base filter with exec tracing, nothing else (the command keeps the
// server's capabilities: it asked for no sandbox).
func enforceTraceOnly(p *Plan) error {
	if !p.onlyTraces() {
		return errors.New("an unsandboxed plan may only trace execs")
	}
	if p.Dir != "" {
		if err := os.Chdir(p.Dir); err != nil {
			return err
		}
	}
	if err := setNoNewPrivs(false); err != nil {
		return err
	}
	return installSeccomp(SeccompNone, true, false)
}

// loopbackUp brings up "lo" in the new network namespace (it starts down),
// best effort. The seccomp filter still denies connect and bind.
func loopbackUp() { _ = loopbackUpErr() }

// loopbackUpErr brings up "lo" in the helper's network namespace.
func loopbackUpErr() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("ioctl SIOCGIFFLAGS", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return os.NewSyscallError("ioctl SIOCSIFFLAGS", unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr))
}
