package escalate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// An escalated program must not read what the sandbox wrote: the
// configuration a command planted in its workspace (a repository's
// .git/config and hooks, a Makefile, ~/.gitconfig under a writable HOME)
// would otherwise run as the server's user (docs/shell-tool.md §11.2).
// So, unless the operator trusts them, the Escalator starts the program
// through ExecMain, our own image re-executed through /proc/self/exe,
// which hides the call's writable roots from it with Landlock — no
// reading, listing or executing there; writing stays allowed — and then
// executes the judged file's descriptor with execveat(AT_EMPTY_PATH).

// ExecName is the argv[0] base name under which the codex binary acts as
// the escalation trampoline (ExecMain).
const ExecName = "codex-escalate-exec"

// execFD is the trampoline's descriptor of the judged file.
const execFD = 3

// hiddenRights are the Landlock rights the trampoline handles: reading
// files, listing directories, executing.
const hiddenRights = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)

// HidingAvailable reports whether this kernel can hide directories from
// escalated programs (Landlock, any ABI).
var HidingAvailable = sync.OnceValue(func() bool {
	v, err := ll.LandlockGetABIVersion()
	return err == nil && v >= 1
})

// execSpec is the trampoline's first argument.
type execSpec struct {
	Hidden []string `json:"hidden"`
	Script bool     `json:"script,omitempty"`
}

// ExecMain is `codex-escalate-exec SPEC ARGV...`: hide SPEC's directories,
// then execveat(3, "", ARGV, environ, AT_EMPTY_PATH). It returns only on
// failure (126, the error on stderr).
func ExecMain() int {
	runtime.LockOSThread()
	if err := execHidden(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "Error: escalation: %v\n", err)
	}
	return 126
}

func execHidden(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("usage: %s SPEC ARGV0 [ARG...]", ExecName)
	}
	var spec execSpec
	if err := json.Unmarshal([]byte(args[1]), &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	rules, err := visibleRules(spec.Hidden)
	if err != nil {
		return err
	}
	cfg := landlock.Config{HandledAccessFS: hiddenRights}
	if err := cfg.RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if !spec.Script {
		// A script's interpreter reads it through /dev/fd/3.
		if _, err := unix.FcntlInt(execFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return os.NewSyscallError("fcntl", err)
		}
	}
	return execveat(execFD, args[2:], os.Environ())
}

// visibleRules grants the hidden rights on everything but hidden: every
// entry of the directories above a hidden one, except those on the way
// down to it, which are walked in turn. Symlinks need no rule (their
// targets are judged where they lie). Entries made later in those
// directories stay unreadable.
func visibleRules(hidden []string) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.Type()&os.ModeSymlink != 0, under(p, hidden):
			case above(p, hidden):
				if e.IsDir() {
					if err := walk(p); err != nil {
						return err
					}
				}
			case e.IsDir():
				rules = append(rules, landlock.PathAccess(hiddenRights, p).IgnoreIfMissing())
			default:
				rules = append(rules, landlock.PathAccess(ll.AccessFSExecute|ll.AccessFSReadFile, p).IgnoreIfMissing())
			}
		}
		return nil
	}
	if under("/", hidden) {
		return nil, nil // everything hidden: nothing to grant
	}
	return rules, walk("/")
}

// under reports whether p is one of dirs or lies below one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// above reports whether one of dirs lies below p.
func above(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(d, p+"/") {
			return true
		}
	}
	return false
}

// execveat runs the file of fd with argv and env in place of this
// process.
func execveat(fd int, argv, env []string) error {
	empty, err := syscall.BytePtrFromString("")
	if err != nil {
		return err
	}
	av, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	ev, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&av[0])), uintptr(unsafe.Pointer(&ev[0])), unix.AT_EMPTY_PATH, 0)
	return os.NewSyscallError("execveat", errno)
}
