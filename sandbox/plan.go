package sandbox

// Plan is everything the sandbox helper child needs to enforce a policy
// for one command. The server computes it (Resolve, a pure function of a
// profile and a context) and passes it as JSON through an inherited fd; the
// helper only applies it (sandbox.md §4.1). A Plan is an immutable value.
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
	// (after enforcement) instead of executing Argv (sandbox.md §4.7).
	FSHelper bool `json:"fsHelper,omitempty"`

	// Namespaces to create at spawn time (set by the server through
	// SysProcAttr.Cloneflags; recorded here so the helper knows it is PID 1
	// and whether it must bring up loopback).
	NewMountNS bool `json:"newMountNs,omitempty"`
	NewPIDNS   bool `json:"newPidNs,omitempty"`
	NewNetNS   bool `json:"newNetNs,omitempty"`
	NewUserNS  bool `json:"newUserNs,omitempty"`

	// Mount layer (sandbox.md §4.3). ReadOnlyRoot makes "/" read-only
	// recursively; WritableRoots are then re-bound read-write, shallowest
	// first, each with its read-only carve-outs.
	ReadOnlyRoot  bool           `json:"readOnlyRoot,omitempty"`
	WritableRoots []WritableRoot `json:"writableRoots,omitempty"`
	// DenyPaths are masked: directories by a mode-000 read-only tmpfs (111
	// when a writable root lies below), files by an empty mode-000 file.
	DenyPaths []string `json:"denyPaths,omitempty"`
	// ProtectedCreate are paths that do not exist and must not come into
	// existence during the run (missing .git/.agents/.codex under a
	// writable root; protected-create watcher, sandbox.md §4.3 step 5).
	ProtectedCreate []string `json:"protectedCreate,omitempty"`
	// RestrictedRead limits reads to ReadableRoots (the `minimal` case):
	// the mount layer starts from an empty root instead of "/".
	RestrictedRead bool     `json:"restrictedRead,omitempty"`
	ReadableRoots  []string `json:"readableRoots,omitempty"`

	// Landlock rules (sandbox.md §4.5); nil means no Landlock.
	Landlock *LandlockRules `json:"landlock,omitempty"`

	// Seccomp selects the network filter (sandbox.md §4.4).
	Seccomp SeccompMode `json:"seccomp,omitempty"`

	// NetworkDisabled adds CODEX_SANDBOX_NETWORK_DISABLED=1 to Env.
	NetworkDisabled bool `json:"networkDisabled,omitempty"`

	// Refusal, when set by the server, makes the helper print it on stderr
	// and exit 1 without running the command: how a policy that cannot be
	// enforced safely (a carve-out reached through a writable symlink,
	// sandbox.md §3.4) is reported, as the reference reports it from its
	// helper.
	Refusal string `json:"refusal,omitempty"`
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

// SeccompMode is the network filter a plan installs (sandbox.md §4.4).
// The helper always installs at least the base filter (keyring,
// pidfd_getfd, kcmp, io_uring, TIOCSTI/TIOCLINUX), SeccompNone included.
type SeccompMode string

// Seccomp modes (sandbox.md §4.4).
const (
	// SeccompNone selects no network filter: only the base filter.
	SeccompNone               SeccompMode = ""
	SeccompRestricted         SeccompMode = "restricted"
	SeccompVMSocketRestricted SeccompMode = "vmSocketRestricted"
)

// Enforces reports whether the plan restricts anything; a plan that does
// not may run the command directly.
func (p *Plan) Enforces() bool {
	return p.Refusal != "" || p.NewMountNS || p.NewPIDNS || p.NewNetNS || p.ReadOnlyRoot || p.Landlock != nil ||
		p.Seccomp != SeccompNone || len(p.DenyPaths) > 0 || p.RestrictedRead
}
