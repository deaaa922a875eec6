//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// HelperName is the argv[0] under which our binary acts as the sandbox
// helper (the name the reference uses for the same role). main dispatches on
// filepath.Base(os.Args[0]) == HelperName before anything else.
const HelperName = "codex-linux-sandbox"

// planFD is the helper's fd that carries the plan: ExtraFiles[0].
const planFD = 3

// maxPlanSize bounds the plan the helper reads; a plan with many thousands
// of deny paths is still far below it.
const maxPlanSize = 64 << 20

// WrappedCommand is what the process spawner runs instead of a sandboxed
// command: our own binary as the helper, with the plan on an inherited fd.
// Start it with Command (os/exec) or ApplyTo (syscall.ForkExec), never by
// copying the fields by hand: both put ExtraFiles after fds 0-2 (the first
// becomes fd 3) and the remaining fields into syscall.SysProcAttr.
//
// Fork either through package reap (reap.StartCmd, reap.Fork), so that an
// orphan reaper of the server never takes the helper's exit status.
//
// After the start (or a failed start) the caller closes ExtraFiles
// (Close). The command's Dir, Env and Arg0 travel in the plan; the spawner
// starts the helper with any directory and an empty environment.
type WrappedCommand struct {
	// Path is SelfExe: the running image of our executable, never its
	// path on disk.
	Path string
	// Argv is the helper's argv: HelperName, "--plan-fd", "3".
	Argv []string
	// ExtraFiles[0] is a sealed, read-only memfd holding the plan as JSON.
	// When the plan has PTSFD set, the spawner appends the devpts mount
	// of OpenPTY, which becomes fd PTSFD.
	ExtraFiles []*os.File
	// Cloneflags are the namespaces to create (SysProcAttr.Cloneflags):
	// at least mount, PID, IPC and cgroup.
	Cloneflags uintptr
	// UidMappings and GidMappings map 0 to the server's effective ids when
	// a user namespace is created (SysProcAttr.UidMappings/GidMappings,
	// with GidMappingsEnableSetgroups left false); nil otherwise.
	UidMappings []syscall.SysProcIDMap
	GidMappings []syscall.SysProcIDMap
	// Pdeathsig is SIGKILL: the helper is PID 1 of its namespace and would
	// ignore SIGTERM, and its death tears the whole namespace down.
	Pdeathsig syscall.Signal
	// DenyNamedUnixSends is set when the network is off or proxied
	// without every Unix socket allowed: a spawner that starts the helper
	// in a cgroup leaf of its own passes the leaf to DenyNamedUnixSends
	// before the start (seccomp cannot stop a socketpair's sendmsg to a
	// named host socket).
	DenyNamedUnixSends bool

	// proxy is the server's end of the control socket of a proxied plan
	// (Plan.ProxyFD; its far end is in ExtraFiles): ProxyListeners
	// receives the listeners on it and closes it.
	proxy *proxyControl
}

// Wrap returns the command that runs plan's command under the sandbox
// helper: our own running image, re-executed through SelfExe. Wrap
// restricts nothing itself: all enforcement happens in the helper child,
// never in the server process.
//
// Wrap normalises the namespaces (normalizeNamespaces): every helper gets
// mount, PID, IPC and cgroup namespaces, a network namespace when the
// network is off or proxied, and, when the server is not root, a user namespace
// (uid/gid 0 mapped to its effective ids), whatever the plan asked for: a
// command without them would share the host's cgroup filesystems, kernel
// knobs, processes and network (docs/sandbox.md §4.2).
func Wrap(plan Plan) (WrappedCommand, error) {
	if plan.Unsandboxed && !plan.onlyTraces() {
		return WrappedCommand{}, errors.New("sandbox: wrap: an unsandboxed plan may only trace execs")
	}
	plan = normalizeNamespaces(plan, os.Geteuid())
	if plan.PTSFD != 0 && (plan.PTSFD != PTSFD || !plan.NewMountNS) {
		return WrappedCommand{}, fmt.Errorf("sandbox: wrap: devpts fd %d: want %d and a mount namespace", plan.PTSFD, PTSFD)
	}
	if plan.KeepFD != 0 && plan.KeepFD != KeepFDFor(&plan) {
		return WrappedCommand{}, fmt.Errorf("sandbox: wrap: kept fd %d: want %d", plan.KeepFD, KeepFDFor(&plan))
	}
	if plan.TraceExecFD != 0 && (plan.TraceExecFD != KeepFDFor(&plan) || plan.KeepFD != 0) {
		return WrappedCommand{}, fmt.Errorf("sandbox: wrap: trace fd %d: want %d and no kept fd", plan.TraceExecFD, KeepFDFor(&plan))
	}
	if plan.Proxy != nil {
		if plan.ProxyFD == 0 {
			plan.ProxyFD = ProxyFDFor(&plan)
		}
		if plan.ProxyFD != ProxyFDFor(&plan) || !plan.NewNetNS || !plan.Seccomp.Proxied() || len(plan.Proxy.Routes) == 0 {
			return WrappedCommand{}, fmt.Errorf("sandbox: wrap: proxied plan (fd %d, want %d; network namespace %v; filter %q)",
				plan.ProxyFD, ProxyFDFor(&plan), plan.NewNetNS, plan.Seccomp)
		}
	} else if plan.ProxyFD != 0 || plan.Seccomp.Proxied() {
		return WrappedCommand{}, errors.New("sandbox: wrap: a proxy fd or filter without a proxy")
	}
	data, err := json.Marshal(plan)
	if err != nil {
		return WrappedCommand{}, fmt.Errorf("sandbox: wrap: encoding plan: %w", err)
	}
	f, err := sealedMemfd("codex-sandbox-plan", data)
	if err != nil {
		return WrappedCommand{}, fmt.Errorf("sandbox: wrap: %w", err)
	}
	w := WrappedCommand{
		Path:       SelfExe,
		Argv:       []string{HelperName, "--plan-fd", strconv.Itoa(planFD)},
		ExtraFiles: []*os.File{f},
		Cloneflags: cloneflags(&plan),
		Pdeathsig:  syscall.SIGKILL,

		DenyNamedUnixSends: plan.Seccomp == SeccompRestricted || plan.Seccomp == SeccompProxied,
	}
	if plan.Proxy != nil {
		ctl, far, err := newProxyControl(plan.Proxy.Routes)
		if err != nil {
			f.Close()
			return WrappedCommand{}, fmt.Errorf("sandbox: wrap: %w", err)
		}
		w.proxy = ctl
		w.ExtraFiles = append(w.ExtraFiles, far)
	}
	if plan.NewUserNS {
		w.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		w.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	return w, nil
}

// KeepFDFor returns the helper's fd number of the file kept for the
// command (Plan.KeepFD, or the trace pipe of Plan.TraceExecFD): the one
// right after the plan, the devpts mount when the plan has one, and the
// proxy control socket when the plan is proxied (Plan.ProxyFD).
func KeepFDFor(p *Plan) int {
	if p.Proxy != nil {
		return ProxyFDFor(p) + 1
	}
	return ProxyFDFor(p)
}

// ProxyFDFor returns the helper's fd number of a proxied plan's control
// socket (Plan.ProxyFD): the one right after the plan and, when the plan
// has one, the devpts mount.
func ProxyFDFor(p *Plan) int {
	if p.PTSFD != 0 {
		return PTSFD + 1
	}
	return planFD + 1
}

// needsMounts reports whether the plan changes the mount table.
func (p *Plan) needsMounts() bool {
	return p.ReadOnlyRoot || p.RestrictedRead || len(p.WritableRoots) > 0 || len(p.DenyPaths) > 0 ||
		len(p.DenyMatches) > 0 || len(p.ReadOnlyFiles) > 0
}

// normalizeNamespaces gives p the namespaces of every sandboxed command
// (docs/sandbox.md §4.2), whatever it asked for: mount and PID (the helper
// builds the kernel layer of §4.3 in them and refuses to run without),
// IPC and cgroup; network when the network is off (the restricted
// filter); user when the server is not root, which needs it to create
// the others and to empty the bounding set. A plan that inherits the PID
// namespace (Plan.InheritPIDNS) gets no PID namespace.
func normalizeNamespaces(p Plan, euid int) Plan {
	if p.Unsandboxed {
		return p // only traced (Plan.Unsandboxed): no sandbox was asked for
	}
	p.NewMountNS, p.NewPIDNS, p.NewIPCNS, p.NewCgroupNS = true, !p.InheritPIDNS, true, true
	if p.Seccomp == SeccompRestricted || p.NetworkDisabled || p.Proxy != nil || p.Seccomp.Proxied() {
		p.NewNetNS = true
	}
	if euid != 0 {
		p.NewUserNS = true
	}
	return p
}

// onlyTraces reports whether p traces execs and restricts nothing else:
// what an Unsandboxed plan must be.
func (p *Plan) onlyTraces() bool {
	return p.TraceExecFD != 0 && p.Refusal == "" && !p.FSHelper && !p.needsMounts() && p.PTSFD == 0 && p.Proxy == nil &&
		!p.NewMountNS && !p.NewPIDNS && !p.NewNetNS && !p.NewUserNS && !p.NewIPCNS && !p.NewCgroupNS &&
		p.Landlock == nil && p.Seccomp == SeccompNone && len(p.ProtectedCreate) == 0 && len(p.Placeholders) == 0
}

// cloneflags maps the plan's namespaces to CLONE_* flags.
func cloneflags(p *Plan) uintptr {
	var f uintptr
	for _, ns := range []struct {
		on   bool
		flag uintptr
	}{
		{p.NewMountNS, unix.CLONE_NEWNS},
		{p.NewPIDNS, unix.CLONE_NEWPID},
		{p.NewNetNS, unix.CLONE_NEWNET},
		{p.NewUserNS, unix.CLONE_NEWUSER},
		{p.NewIPCNS, unix.CLONE_NEWIPC},
		{p.NewCgroupNS, unix.CLONE_NEWCGROUP},
	} {
		if ns.on {
			f |= ns.flag
		}
	}
	return f
}

// sealedMemfd returns a close-on-exec memfd holding data, sealed against
// any further change. Writing it never blocks, whatever the size, and the
// reader sees the whole plan or nothing.
func sealedMemfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, os.NewSyscallError("fcntl F_ADD_SEALS", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Command returns the exec.Cmd that starts w: Path, Args and ExtraFiles
// from w, an empty environment, a session of its own (Setsid) and w's
// namespaces, id maps and parent-death signal; ctx kills it
// (exec.CommandContext; context.Background() for a command not bound to
// one). The caller sets the standard streams and may add to SysProcAttr
// (for example a cgroup fd). It is the one way to build an exec.Cmd for
// the helper; ApplyTo is its syscall.ForkExec counterpart.
func (w *WrappedCommand) Command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, w.Path)
	cmd.Args = slices.Clone(w.Argv)
	cmd.Env = helperEnv()
	cmd.ExtraFiles = w.ExtraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	w.applySys(cmd.SysProcAttr)
	return cmd
}

// ApplyTo turns attr, prepared for the command itself, into the attributes
// of the helper for syscall.ForkExec, and returns the path and argv to
// pass with it. attr.Files must hold the child's fds 0-2: the fds of
// ExtraFiles are appended (the first becomes fd 3). The environment
// becomes empty (the command's travels in the plan); attr.Sys (allocated
// if nil) gets w's namespaces, id maps and parent-death signal, and keeps
// its other settings (Setsid, Setctty, PidFD, a cgroup fd).
func (w *WrappedCommand) ApplyTo(attr *syscall.ProcAttr) (path string, argv []string) {
	attr.Env = helperEnv()
	for _, f := range w.ExtraFiles {
		attr.Files = append(attr.Files, f.Fd())
	}
	if attr.Sys == nil {
		attr.Sys = &syscall.SysProcAttr{}
	}
	w.applySys(attr.Sys)
	return w.Path, slices.Clone(w.Argv)
}

// Close closes ExtraFiles, the parent's copies of the files the helper
// inherits: after the start, or a failed one. It leaves the proxy control
// socket of a proxied plan to ProxyListeners.
func (w *WrappedCommand) Close() {
	for _, f := range w.ExtraFiles {
		_ = f.Close()
	}
}

// ProxyListeners returns the listeners the helper of a proxied plan
// (Plan.Proxy) opened inside the command's network namespace, one per
// route in the plan's order; the caller serves them with the proxy and
// closes them when the command is done. Call it once, after the start
// and after Close, whether the start succeeded or not: it closes the
// control socket on every path. It fails, without waiting further, when
// the helper exits or closes the socket without sending them (the helper
// then refuses to run the command), when what it sent is not the plan's
// loopback listeners, and when ctx ends first. A plan without a proxy
// returns ErrNotProxied.
func (w *WrappedCommand) ProxyListeners(ctx context.Context) ([]ProxyListener, error) {
	ctl := w.proxy
	w.proxy = nil
	return ctl.listeners(ctx)
}

// applySys sets w's namespace, id-map and parent-death settings on sys.
func (w *WrappedCommand) applySys(sys *syscall.SysProcAttr) {
	sys.Cloneflags = w.Cloneflags
	sys.UidMappings, sys.GidMappings = w.UidMappings, w.GidMappings
	sys.Pdeathsig = w.Pdeathsig
}

// Launcher starts one sandboxed command for a spawner that forks with
// syscall.ForkExec: it implements proc.Launcher (package proc does not
// import this one, nor knows the helper), and execserver passes it in.
// The plan is read when the command starts, so a GuardPlan taken before
// the start is in it. Use a Launcher once.
type Launcher struct {
	plan  *Plan
	warn  func(error)
	pts   *os.File        // devpts mount of OpenPTY, the helper's fd PTSFD
	w     *WrappedCommand // what Wrap made of the plan
	proxy *proxyControl   // a proxied plan's control socket, from Apply to ProxyListeners
}

// NewLauncher returns the launcher of plan. warn, when not nil, is told of
// a gap Apply could not close: a network-off command whose cgroup leaf
// cannot stop a socketpair's sendmsg to a named host socket (no leaf, or
// a kernel that refuses the filter); the command runs anyway.
func NewLauncher(plan *Plan, warn func(error)) *Launcher {
	return &Launcher{plan: plan, warn: warn}
}

// OpenPTY opens the terminal of a TTY command in a devpts instance of its
// own (the package's OpenPTY) when the helper gives the command a /dev of
// its own (Plan.ReplacesDev); otherwise it returns nil files, and the
// spawner uses a terminal of the host. The instance's mount goes to the
// helper with the plan.
func (l *Launcher) OpenPTY() (master, slave *os.File, err error) {
	if !l.plan.ReplacesDev() {
		return nil, nil, nil
	}
	master, slave, l.pts, err = OpenPTY()
	return master, slave, err
}

// Apply fills the plan's command from the spawner's (path found in the
// child's PATH; argv[0] and attr's Dir and Env are what the command gets;
// a symlinked Dir becomes its canonical path, where its writable root is
// bound: docs/sandbox.md §3.4), wraps it (Wrap), turns attr into the
// helper's (WrappedCommand.ApplyTo) and returns the helper's path and argv.
// leafFD is the cgroup leaf the helper starts in (-1: none): for a
// network-off plan it gets the filter of DenyNamedUnixSends.
func (l *Launcher) Apply(path string, argv []string, attr *syscall.ProcAttr, leafFD int) (string, []string, error) {
	plan := *l.plan
	if l.pts != nil {
		plan.PTSFD = PTSFD
	}
	plan.Argv = append([]string{path}, argv[1:]...)
	plan.Arg0 = argv[0]
	plan.Dir, plan.Env = attr.Dir, attr.Env
	if d, err := filepath.EvalSymlinks(attr.Dir); err == nil {
		plan.Dir = d
	}
	if l.w != nil || l.proxy != nil {
		return "", nil, errors.New("sandbox: launcher used twice")
	}
	w, err := Wrap(plan)
	if err != nil {
		return "", nil, err
	}
	l.w = &w
	l.proxy, w.proxy = w.proxy, nil
	if l.pts != nil {
		// The devpts mount is fd PTSFD, right after the plan: before the
		// proxy control socket (Plan.ProxyFD).
		withPTS := w
		withPTS.ExtraFiles = slices.Insert(slices.Clone(w.ExtraFiles), 1, l.pts)
		w = withPTS
	}
	if w.DenyNamedUnixSends {
		err := errNoLeaf
		if leafFD >= 0 {
			err = DenyNamedUnixSends(leafFD)
		}
		if err != nil && l.warn != nil {
			l.warn(err)
		}
	}
	path, argv = w.ApplyTo(attr)
	return path, argv, nil
}

// ProxyListeners is WrappedCommand.ProxyListeners for the command the
// launcher started: call it once after proc.Start returned, whether it
// succeeded or not (a start that failed before Apply gives ErrNotProxied
// as well as a plan without a proxy). It closes the control socket.
func (l *Launcher) ProxyListeners(ctx context.Context) ([]ProxyListener, error) {
	ctl := l.proxy
	l.proxy = nil
	return ctl.listeners(ctx)
}

// Close closes the files Apply and OpenPTY kept for the fork: the plan's
// memfd, the devpts mount and the helper's end of the proxy control
// socket (not the server's: ProxyListeners closes it).
func (l *Launcher) Close() error {
	if l.w != nil {
		l.w.Close()
	}
	if l.pts != nil {
		_ = l.pts.Close()
	}
	l.w, l.pts = nil, nil
	return nil
}

var errNoLeaf = errors.New("no cgroup leaf")
