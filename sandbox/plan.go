package sandbox

import "github.com/codexec/codex/internal/fsat"

// Plan is everything the sandbox helper child needs to enforce a policy
// for one command. The server computes it (Resolve, a pure function of a
// profile and a context) and passes it as JSON through an inherited fd; the
// helper only applies it (docs/sandbox.md §4.1). A Plan is an immutable value.
//
// This type is the contract between resolution (policy.go, resolve*.go) and
// enforcement (child*.go). Add fields only with a comment saying who sets
// them and what the helper does with them.
type Plan struct {
	// Command. Argv[0] is resolved by the helper with execvp semantics
	// against PATH in Env. Arg0, when set, is the argv[0] the command sees.
	Argv []string `json:"argv"`
	Arg0 string   `json:"arg0,omitempty"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`

	// FSHelper asks the helper to run the fs helper operation in-process
	// (after enforcement) instead of executing Argv (docs/sandbox.md §4.7).
	FSHelper bool `json:"fsHelper,omitempty"`

	// Namespaces to create at spawn time (set by the server through
	// SysProcAttr.Cloneflags; recorded here so the helper knows it is PID 1
	// and whether it must bring up loopback). Every sandboxed command gets
	// mount, PID, IPC and cgroup namespaces, and a network namespace when
	// the network is off (Resolve and Wrap; docs/sandbox.md §4.2): the
	// helper refuses a plan without mount and PID namespaces, since it
	// could not take the kernel's knobs out of the command's reach, unless
	// the plan is Unsandboxed.
	NewMountNS bool `json:"newMountNs,omitempty"`
	NewPIDNS   bool `json:"newPidNs,omitempty"`
	// InheritPIDNS runs the command in the server's PID namespace instead
	// of one of its own (--linux-sandbox-pid-namespace inherit; Request):
	// NewPIDNS is then off, the helper is not PID 1 and mounts no /proc, so
	// the command sees the host's processes. It may signal none outside its
	// sandbox (a Landlock signal scope) nor change another process's
	// limits or scheduling (the filter's inherit rules; docs/sandbox.md
	// §4.2).
	InheritPIDNS bool `json:"inheritPidNs,omitempty"`
	NewNetNS     bool `json:"newNetNs,omitempty"`
	NewUserNS    bool `json:"newUserNs,omitempty"`
	// NewIPCNS gives the command its own System V IPC objects and POSIX
	// message queues: set with any mount namespace, so no host segment,
	// queue or semaphore (all owned by uid 0, as the command is) is
	// reachable, and none the command makes outlives it.
	NewIPCNS bool `json:"newIpcNs,omitempty"`
	// NewCgroupNS roots the command's cgroup namespace at its own cgroup
	// leaf (clone with CLONE_INTO_CGROUP and CLONE_NEWCGROUP): set with
	// any mount namespace. Moving a process into a cgroup outside that
	// root fails (ENOENT) even through a cgroup directory the command
	// should never have had: a second wall behind the hidden cgroup
	// filesystems and the dropped capabilities.
	NewCgroupNS bool `json:"newCgroupNs,omitempty"`

	// Mount layer (docs/sandbox.md §4.3). ReadOnlyRoot makes "/" read-only
	// recursively; WritableRoots are then re-bound read-write, shallowest
	// first, each with its read-only carve-outs.
	ReadOnlyRoot  bool           `json:"readOnlyRoot,omitempty"`
	WritableRoots []WritableRoot `json:"writableRoots,omitempty"`
	// DenyPaths are masked: directories by a mode-000 read-only tmpfs (111
	// when a writable root lies below), files by an empty mode-000 file.
	// The folders between a writable root and a deny path are pinned
	// (bound onto themselves), so no run can rename them and move a
	// denied file out of the next run's reach.
	DenyPaths []string `json:"denyPaths,omitempty"`
	// DenyMatches are what the deny globs matched (docs/sandbox.md §3.5):
	// files, symlinks, and folders masked whole when there were too many
	// matches in them, all with canonical folders. Each is masked where
	// it is: a symlink (or a path that has become one since) is covered
	// itself, never followed; otherwise like DenyPaths, folders pinned.
	DenyMatches []string `json:"denyMatches,omitempty"`
	// ProtectedCreate are paths that do not exist and must not come into
	// existence during the run (missing .git/.agents/.codex under a
	// writable root; protected-create watcher, docs/sandbox.md §4.3 step 5).
	ProtectedCreate []string `json:"protectedCreate,omitempty"`
	// ReadOnlyFiles are regular files inside the writable area that the
	// command must not change, rename or replace: our own executable
	// (Context.Self), which the server and later helpers run as root.
	// Resolution sets them for every plan with a mount layer; the helper
	// binds each onto itself read-only after the writable roots (so a
	// write fails with EROFS and a rename over it with EBUSY), and pins
	// the folders on the way to it as it pins those of the deny paths.
	ReadOnlyFiles []string `json:"readOnlyFiles,omitempty"`
	// RestrictedRead limits reads to ReadableRoots (the `minimal` case):
	// the mount layer starts from an empty root instead of "/".
	RestrictedRead bool     `json:"restrictedRead,omitempty"`
	ReadableRoots  []string `json:"readableRoots,omitempty"`

	// PTSFD, when not 0, is the helper's fd holding a detached devpts
	// mount whose instance holds the command's terminal (OpenPTY; always
	// the constant PTSFD). The spawner sets it; the helper mounts that
	// instance on /dev/pts instead of a new one, so the command's own
	// slave is the only terminal it can reach, and closes the fd.
	PTSFD int `json:"ptsFd,omitempty"`

	// KeepFD, when not 0, is the one inherited descriptor besides 0-2
	// that the command keeps, at the same number: the MCP shell tool's
	// escalate socket, which the command's execve wrapper uses to ask the
	// server about each exec (docs/shell-tool.md §4). The spawner sets it
	// to KeepFDFor(plan) and appends the socket to ExtraFiles after the
	// plan's own files. The helper refuses to run the command unless that
	// fd is open and is a Unix socket, keeps it open (without close-on-exec)
	// across its exec or fork of the command, and still closes every other
	// fd from 3 up. Zero keeps nothing.
	KeepFD int `json:"keepFd,omitempty"`

	// TraceExecFD, when not 0, puts every exec of the command under a
	// ptrace tracer (the MCP shell tool's kernel-level interception,
	// docs/shell-tool.md §10). The spawner sets it to KeepFDFor(plan)
	// (KeepFD must then be 0), passes the read end of a pipe there, and
	// writes one byte to the pipe once its tracer has seized every thread
	// of the helper. The helper reads that byte before enforcing anything
	// (EOF or an error: it refuses to run the command), checks that it is
	// traced, and closes the fd. Its seccomp filter then returns
	// SECCOMP_RET_TRACE for execve and execveat (without a tracer they
	// fail with ENOSYS: fail closed) and denies ptrace, process_vm_readv
	// and process_vm_writev in every mode, so the command can neither
	// detach, trace, nor rewrite another process of the call.
	TraceExecFD int `json:"traceExecFd,omitempty"`

	// Proxy, when not nil, makes the command's network a proxied one
	// (docs/sandbox.md §4.9): Resolve sets it for a profile whose network
	// is on and whose Proxy is set. The plan then has a network namespace
	// of its own (NewNetNS, whatever else it asks for) and the seccomp
	// mode SeccompProxied or SeccompProxiedUnix. The helper brings up lo,
	// opens one TCP listener on 127.0.0.1:0 per route inside that
	// namespace, sends them to the server over ProxyFD, closes them, and
	// gives the command the proxy variables of those ports. The server's
	// proxy serves the listeners (Launcher.ProxyListeners).
	Proxy *ProxyPlan `json:"proxy,omitempty"`

	// ProxyFD, when not 0, is the helper's fd of the control socket the
	// listeners of Proxy go to (a SOCK_SEQPACKET Unix socket). Wrap sets
	// it to ProxyFDFor(plan) for a plan with Proxy and puts the socket's
	// far end in ExtraFiles; a plan with Proxy and another ProxyFD is
	// refused. The helper refuses to run the command unless the fd is a
	// Unix socket and the listeners went out on it, and closes it before
	// the command starts.
	//
	// The helper's fds, in order: 0-2 the command's stdio; 3 the plan
	// (planFD); then PTSFD (4) when the command has a terminal of its
	// own; then ProxyFD when the plan has Proxy; then KeepFD or
	// TraceExecFD (KeepFDFor) when set.
	ProxyFD int `json:"proxyFd,omitempty"`

	// Unsandboxed marks a plan that runs through the helper only so that
	// its execs are traced (TraceExecFD): the MCP shell tool's call that
	// asked for no sandbox (a disabled, external or danger-full-access
	// profile; docs/shell-tool.md §10). Such a command is not a sandboxed
	// one (docs/sandbox.md §3.7): Wrap gives it no namespace and the helper
	// keeps the server's capabilities, sets no_new_privs, installs the base
	// filter and execs it in its place. Wrap refuses it with anything else
	// to enforce, or without TraceExecFD.
	Unsandboxed bool `json:"unsandboxed,omitempty"`

	// Landlock rules (docs/sandbox.md §4.5); nil means no Landlock.
	Landlock *LandlockRules `json:"landlock,omitempty"`

	// Seccomp selects the network filter (docs/sandbox.md §4.4).
	Seccomp SeccompMode `json:"seccomp,omitempty"`

	// NetworkDisabled adds CODEX_SANDBOX_NETWORK_DISABLED=1 to Env.
	NetworkDisabled bool `json:"networkDisabled,omitempty"`

	// Refusal, when set by the server, makes the helper print it on stderr
	// and exit 1 without running the command: how a policy that cannot be
	// enforced safely (a carve-out reached through a writable symlink,
	// docs/sandbox.md §3.4) is reported, as the reference reports it from its
	// helper.
	Refusal string `json:"refusal,omitempty"`

	// Handles and placeholders (docs/sandbox.md §3.4, §4.3).
	//
	// Identities holds, by path, the identity (device and inode) of every
	// writable root and read-only carve-out Resolve saw, and of every
	// placeholder the server created. The helper opens each of them with
	// openat2(RESOLVE_NO_SYMLINKS), refuses to run when the file it finds
	// is not the one recorded, and mounts from and onto that handle, so a
	// symlink swapped in after resolution cannot redirect a mount.
	Identities map[string]fsat.ID `json:"identities,omitempty"`
	// Placeholders are the missing protected names of ProtectedCreate
	// that are shadowed instead of watched (.codex of the cwd root,
	// .agents, .git outside a parent repository; docs/sandbox.md §4.3 step 5):
	// the helper mounts an empty read-only tmpfs of mode 555 on each, so
	// creating one fails with EROFS. Their empty mountpoints are made or
	// shared on the host before the start and let go after the run
	// (GuardPlan, HostGuard.Release), which also records their identities.
	// A placeholder the helper cannot mount on (no mountpoint, a kernel
	// without the new mount API) is watched like the rest of
	// ProtectedCreate, and the helper says so on stderr; the watcher then
	// empties the recorded directory rather than removing it.
	Placeholders []string `json:"placeholders,omitempty"`
}

// WritableRoot is a directory the command may write, minus its read-only
// carve-outs (.git, the resolved gitdir, .agents, .codex, .aws, explicit
// narrower read entries).
type WritableRoot struct {
	Path     string   `json:"path"`
	ReadOnly []string `json:"readOnly,omitempty"`
}

// LandlockRules are the path rules given to go-landlock.
type LandlockRules struct {
	ReadDirs  []string `json:"readDirs,omitempty"`
	WriteDirs []string `json:"writeDirs,omitempty"`
	// WriteFiles are device files and the like that stay read-write
	// (/dev/null, /dev/zero, /dev/full, /dev/tty, /dev/ptmx, /dev/pts).
	WriteFiles []string `json:"writeFiles,omitempty"`
}

// SeccompMode is the network filter a plan installs (docs/sandbox.md §4.4).
// The helper always installs at least the base filter (keyring,
// pidfd_getfd, kcmp, io_uring, TIOCSTI/TIOCLINUX), SeccompNone included.
type SeccompMode string

// Seccomp modes (docs/sandbox.md §4.4).
const (
	// SeccompNone selects no network filter: only the base filter.
	SeccompNone               SeccompMode = ""
	SeccompRestricted         SeccompMode = "restricted"
	SeccompVMSocketRestricted SeccompMode = "vmSocketRestricted"
	// SeccompProxied is a proxied command's filter (Plan.Proxy): inet
	// stream and datagram sockets (which reach only the namespace's own
	// loopback), AF_UNIX socketpairs, no AF_UNIX socket and no other
	// family. SeccompProxiedUnix allows AF_UNIX sockets as well
	// (dangerously_allow_all_unix_sockets).
	SeccompProxied     SeccompMode = "proxied"
	SeccompProxiedUnix SeccompMode = "proxiedUnix"
)

// Proxied reports whether m is the filter of a proxied command.
func (m SeccompMode) Proxied() bool { return m == SeccompProxied || m == SeccompProxiedUnix }

// Enforces reports whether the plan restricts anything; a plan that does
// not may run the command directly.
func (p *Plan) Enforces() bool {
	return p.Refusal != "" || p.NewMountNS || p.NewPIDNS || p.NewNetNS || p.ReadOnlyRoot || p.Landlock != nil ||
		p.Seccomp != SeccompNone || len(p.DenyPaths) > 0 || len(p.DenyMatches) > 0 || p.RestrictedRead || len(p.ReadOnlyFiles) > 0 ||
		p.TraceExecFD != 0 || p.Proxy != nil
}

// RecordIdentities fills Identities with the current identity of every
// writable root and read-only carve-out of the plan that exists (Resolve
// calls it; a hand-made plan must too). It keeps identities already
// recorded.
func (p *Plan) RecordIdentities() {
	record := func(path string) {
		if _, ok := p.Identities[path]; ok {
			return
		}
		if id, err := fsat.Lstat(path); err == nil {
			if p.Identities == nil {
				p.Identities = map[string]fsat.ID{}
			}
			p.Identities[path] = id
		}
	}
	for _, w := range p.WritableRoots {
		record(w.Path)
		for _, c := range w.ReadOnly {
			record(c)
		}
	}
}
