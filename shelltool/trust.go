package shelltool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// EscalationPolicy is the server-wide part of what an escalation trusts
// (docs/shell-tool.md §11.1-§11.2).
type EscalationPolicy struct {
	// Dirs are the trusted directories of the server's PATH, real paths:
	// a program may be escalated only from one of them, or from a path a
	// host_executable() declaration names.
	Dirs []string
	// HostExecutables returns the paths host_executable() pins a program
	// name to; nil means none.
	HostExecutables func(name string) ([]string, bool)
	// InWritableDirs lets a program escalate although its working
	// directory (or the server's HOME) lies in a directory a sandboxed
	// call could write, where the command may have planted the
	// configuration the program reads (a repository's .git/config).
	InWritableDirs bool

	mu   sync.Mutex
	seen []string // guarded by mu: the writable roots of every call so far
}

// TrustedPathDirs returns the directories of path (a PATH value) that
// are trusted (trustedPath), as real paths, once each.
func TrustedPathDirs(path string) []string {
	var out []string
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil || slices.Contains(out, real) || trustedPath(real) != nil {
			continue
		}
		out = append(out, real)
	}
	return out
}

// trustedPath checks that path (a real path) and every directory above
// it belong to root or to us and that nobody else may write them: no
// group or other write permission (a sticky world-writable /tmp fails).
func trustedPath(path string) error {
	uid := uint32(os.Geteuid())
	for p := path; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Uid != 0 && st.Uid != uid {
			return fmt.Errorf("%s belongs to uid %d", p, st.Uid)
		}
		if st.Mode&0o022 != 0 {
			return fmt.Errorf("%s is writable by others", p)
		}
		if p == "/" {
			return nil
		}
	}
}

// callTrust is the trust of one call: the policy and the directories its
// sandbox can write. A nil *callTrust (no sandbox) escalates nothing:
// the command already runs outside any sandbox.
type callTrust struct {
	pol      *EscalationPolicy
	writable []string // real paths; "/" for a plan that may write everywhere
}

// newCallTrust is the trust of a call with plan (nil: no sandbox).
func newCallTrust(pol *EscalationPolicy, plan *sandbox.Plan) *callTrust {
	if plan == nil || plan.Unsandboxed {
		return nil
	}
	if pol == nil {
		pol = &EscalationPolicy{}
	}
	t := &callTrust{pol: pol}
	if !plan.ReadOnlyRoot {
		t.writable = []string{"/"}
	}
	for _, w := range plan.WritableRoots {
		p := w.Path
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		t.writable = append(t.writable, p)
	}
	pol.remember(t.writable)
	return t
}

// writableAt reports whether the sandbox can write path (a real path)
// or below it.
func (t *callTrust) writableAt(path string) bool {
	for _, w := range t.writable {
		if within(path, w) {
			return true
		}
	}
	return false
}

func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

var errNoSandbox = errors.New("the call has no sandbox")

// qualify opens the file exe stands for (an O_PATH descriptor in the
// command's view; nil: file in the server's view) in the server's own
// view and checks that it may be escalated for the rule program name:
// the same file in both views, in a trusted PATH directory or pinned by
// host_executable, on a trusted path, where the sandbox cannot write.
// The returned Program is that file, to run by its descriptor.
func (t *callTrust) qualify(file string, exe *os.File, name string) (*escalate.Program, error) {
	if t == nil {
		return nil, errNoSandbox
	}
	real := file
	if exe != nil {
		var err error
		if real, err = os.Readlink("/proc/self/fd/" + fmt.Sprint(exe.Fd())); err != nil {
			return nil, err
		}
	}
	if !filepath.IsAbs(real) {
		return nil, fmt.Errorf("%s is not a file of the host", real)
	}
	prog, err := escalate.OpenProgram(real)
	if err != nil {
		return nil, err
	}
	if err := t.check(prog, exe, name); err != nil {
		prog.Close()
		return nil, err
	}
	return prog, nil
}

// check is qualify's test of the opened prog.
func (t *callTrust) check(prog *escalate.Program, exe *os.File, name string) error {
	if exe != nil {
		var st unix.Stat_t
		if err := unix.Fstat(int(exe.Fd()), &st); err != nil {
			return err
		}
		if st.Dev != prog.Dev || st.Ino != prog.Ino {
			return fmt.Errorf("%s is another file in the sandbox than on the host", prog.Path)
		}
	}
	path := prog.Path
	if t.writableAt(path) {
		return fmt.Errorf("the sandbox can write %s", path)
	}
	// An earlier call may have written it: a file planted under
	// workspace-write is still there when the next call is read-only.
	if w := t.pol.plantable(path); w != "" {
		return fmt.Errorf("a sandboxed command could write %s, where it may have planted %s", w, path)
	}
	if err := trustedPath(path); err != nil {
		return err
	}
	if pinned, ok := t.hostExecs(name); ok {
		for _, p := range pinned {
			if id, err := statID(p); err == nil && id == (fileID{prog.Dev, prog.Ino}) {
				return nil
			}
		}
		return fmt.Errorf("%s is not a host_executable() of %s", path, name)
	}
	if !slices.Contains(t.pol.Dirs, filepath.Dir(path)) {
		return fmt.Errorf("%s is not in a trusted directory of the server's PATH", path)
	}
	return nil
}

// isProgram checks that prog is a file of the rule program name: the
// file an absolute name is, or the file of that name in a trusted
// directory of the server's PATH (symlinks followed: python3 ->
// python3.11 is python3). The name a rule judged comes from the path the
// command exec'd, which a symlink of its own can give any trusted file
// (ws/git -> /usr/bin/find); the rule trusts git, not find. A name that
// host_executable() pins was checked against its paths by check.
func (t *callTrust) isProgram(prog *escalate.Program, name string) error {
	if _, ok := t.hostExecs(name); ok {
		return nil
	}
	want := fileID{prog.Dev, prog.Ino}
	if filepath.IsAbs(name) {
		if id, err := statID(name); err == nil && id == want {
			return nil
		}
	} else if name != "" && !strings.Contains(name, "/") {
		for _, d := range t.pol.Dirs {
			if id, err := statID(filepath.Join(d, name)); err == nil && id == want {
				return nil
			}
		}
	}
	return fmt.Errorf("%s is not %s: the rule allows %s", prog.Path, name, name)
}

func (t *callTrust) hostExecs(name string) ([]string, bool) {
	if t.pol.HostExecutables == nil {
		return nil, false
	}
	return t.pol.HostExecutables(name)
}

// confine refuses an escalation that would start where a sandboxed
// command could have planted the configuration the program reads
// (docs/shell-tool.md §11.2): its working directory, or the server's HOME
// or XDG_CONFIG_HOME, lies in a writable root of this call or of any
// earlier call of the server. The operator's --escalate-in-writable-dirs
// trusts them.
func (t *callTrust) confine(workdir string) error {
	if t.pol.InWritableDirs {
		return nil
	}
	// The program starts in workdir by its path, followed again then:
	// a symlink on it (ws/link -> /, the request's word in wrapper mode)
	// could lead elsewhere by then. A real path outside every writable
	// root has no component the command can rename or replace.
	if real, err := filepath.EvalSymlinks(workdir); err != nil || real != workdir {
		return fmt.Errorf("its working directory %s is not a real path (a symlink on it could lead elsewhere when it starts)", workdir)
	}
	for _, d := range []string{workdir, os.Getenv("HOME"), os.Getenv("XDG_CONFIG_HOME")} {
		if d == "" {
			continue
		}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if w := t.pol.plantable(d); w != "" {
			return fmt.Errorf("a sandboxed command could write %s, where it may have planted the program's configuration (--escalate-in-writable-dirs trusts it)", w)
		}
	}
	// User configuration lives in HOME's dot-folders and files
	// (~/.config, ~/.local, ~/.gitconfig, ~/.cargo, …) and in
	// XDG_CONFIG_HOME: a writable root there is configuration the
	// command may have planted.
	if w := t.pol.userConfigRoot(os.Getenv("HOME"), os.Getenv("XDG_CONFIG_HOME")); w != "" {
		return fmt.Errorf("a sandboxed command could write %s, where it may have planted the program's user configuration (--escalate-in-writable-dirs trusts it)", w)
	}
	// The same when a symlink there leads into a writable root (dotfile
	// managers link ~/.gitconfig, ~/.config/git, … into a repository,
	// which may be the workspace).
	if link, w := t.pol.linkedConfigRoot(os.Getenv("HOME"), os.Getenv("XDG_CONFIG_HOME")); w != "" {
		return fmt.Errorf("the user configuration %s leads into %s, which a sandboxed command could write, where it may have planted the program's configuration (--escalate-in-writable-dirs trusts it)", link, w)
	}
	// The program, and what it starts, find programs by name in the
	// server's PATH (a relative entry, in workdir), unjudged.
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		d = absIn(d, workdir)
		w := t.pol.plantable(d)
		if real, err := filepath.EvalSymlinks(d); w == "" && err == nil {
			w = t.pol.plantable(real)
		}
		if w != "" {
			return fmt.Errorf("the server's PATH holds %s, which a sandboxed command could write, where it may have planted the programs this one runs (--escalate-in-writable-dirs trusts it)", d)
		}
	}
	return nil
}

// placeArgv0 refuses an argv[0] that leads where a sandboxed command
// could have planted files (docs/shell-tool.md §11.1): an escalated
// program keeps its argv[0], and some take a path there for their own
// location and load what lies beside it (python3 reads a pyvenv.cfg next
// to it and runs the site-packages/*.pth of the prefix it names; gcc
// runs the cc1 found relative to it). An argv[0] without a slash names
// no place. Every prefix of the path (relative ones against workdir) is
// checked as written, cleaned, and with its symlinks resolved, against
// the writable roots of this call and the earlier ones. The operator's
// --escalate-in-writable-dirs trusts them.
func (t *callTrust) placeArgv0(workdir, argv0 string) error {
	if t.pol.InWritableDirs || !strings.Contains(argv0, "/") {
		return nil
	}
	p := argv0
	if !filepath.IsAbs(p) {
		p = workdir + "/" + p
	}
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		prefix := p[:i]
		w := t.pol.plantable(filepath.Clean(prefix))
		if real, err := filepath.EvalSymlinks(prefix); w == "" && err == nil {
			w = t.pol.plantable(real)
		}
		if w != "" {
			return fmt.Errorf("its argv[0] %s leads into %s, which a sandboxed command could write, and programs such as python3 load files found beside their argv[0] (--escalate-in-writable-dirs trusts it)", argv0, w)
		}
	}
	return nil
}

// peerAt checks a working directory a process named over the escalate
// socket (wrapper mode): peer, the process that asked (escalate.Request's
// Peer; 0: workdir was read from the process itself, nothing to check),
// must be a sandboxed process (another mount namespace than ours) whose
// own working directory is workdir (the same directory). Otherwise the
// command could have a program escalated in any directory of the host,
// one its sandbox hides included.
func peerAt(peer int, workdir string) error {
	if peer == 0 {
		return nil
	}
	if peer < 0 {
		return errors.New("the process that asked cannot be told")
	}
	proc := "/proc/" + strconv.Itoa(peer)
	theirs, err := os.Readlink(proc + "/ns/mnt")
	if err != nil {
		return fmt.Errorf("the process that asked: %w", err)
	}
	if ours, err := os.Readlink("/proc/self/ns/mnt"); err != nil || ours == theirs {
		return errors.New("the process that asked is not in the sandbox")
	}
	var at, wd unix.Stat_t
	if err := unix.Stat(proc+"/cwd", &at); err != nil {
		return fmt.Errorf("the process that asked: %w", err)
	}
	if err := unix.Stat(workdir, &wd); err != nil || at.Dev != wd.Dev || at.Ino != wd.Ino {
		return fmt.Errorf("its working directory %s is not that of the process that asked", workdir)
	}
	return nil
}

// remember adds the writable roots of a call to those the server has
// seen.
func (p *EscalationPolicy) remember(roots []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range roots {
		if !slices.Contains(p.seen, r) {
			p.seen = append(p.seen, r)
		}
	}
}

// userConfigRoot returns a writable root, of any call so far, that lies
// in a dot-folder of home or is a dot-file there, or lies in xdgConfig;
// "" when none does.
func (p *EscalationPolicy) userConfigRoot(home, xdgConfig string) string {
	real := func(d string) string {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return r
		}
		return d
	}
	if home != "" {
		home = real(home)
	}
	if xdgConfig != "" {
		xdgConfig = real(xdgConfig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.seen {
		if home != "" && home != "/" && strings.HasPrefix(w, home+"/") && strings.HasPrefix(w[len(home)+1:], ".") {
			return w
		}
		if xdgConfig != "" && within(w, xdgConfig) {
			return w
		}
	}
	return ""
}

// configLinkDepth is how deep linkedConfigRoot looks below HOME
// (~/.config/git/config is 3), and configLinkBudget how many directory
// entries it reads at most.
const (
	configLinkDepth  = 3
	configLinkBudget = 50000
)

// linkedConfigRoot returns a symlink of the user configuration that leads
// into a writable root of any call so far, and that root: a dot-entry of
// home or an entry below one, or an entry of xdgConfig or below it, down
// to configLinkDepth levels below home (xdgConfig counts as ~/.config),
// symlinked directories followed; a dangling symlink counts by the place
// it names, which the command could create. "" when none does.
func (p *EscalationPolicy) linkedConfigRoot(home, xdgConfig string) (link, root string) {
	budget := configLinkBudget
	var walk func(dir string, depth int, dotsOnly bool) bool
	walk = func(dir string, depth int, dotsOnly bool) bool {
		if depth > configLinkDepth || budget <= 0 {
			return false
		}
		f, err := os.Open(dir)
		if err != nil {
			return false
		}
		ents, _ := f.ReadDir(budget)
		f.Close()
		budget -= len(ents)
		for _, e := range ents {
			if dotsOnly && !strings.HasPrefix(e.Name(), ".") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			isDir := e.IsDir()
			if e.Type()&os.ModeSymlink != 0 {
				// A link to a socket (~/.ssh/agent.sock -> /tmp/ssh-…,
				// kept for tmux) is connected to, not read.
				if st, err := os.Stat(path); err == nil && st.Mode()&os.ModeSocket != 0 {
					continue
				}
				if w := p.plantable(linkTarget(path)); w != "" {
					link, root = path, w
					return true
				}
				st, err := os.Stat(path)
				isDir = err == nil && st.IsDir()
			}
			if isDir && walk(path, depth+1, false) {
				return true
			}
		}
		return false
	}
	if home != "" && home != "/" && walk(home, 1, true) {
		return link, root
	}
	if xdgConfig != "" && walk(xdgConfig, 2, false) {
		return link, root
	}
	return "", ""
}

// linkTarget is the real path a symlink leads to; for a dangling one,
// the place it names (its deepest existing directory resolved).
func linkTarget(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	p := path
	for range 40 {
		t, err := os.Readlink(p)
		if err != nil {
			break
		}
		p = absIn(t, filepath.Dir(p))
	}
	for dir, rest := filepath.Dir(p), filepath.Base(p); ; dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == "/" || dir == "." {
			return p
		}
	}
}

// plantable returns the writable root, of any call so far, that holds
// path; "" when none does.
func (p *EscalationPolicy) plantable(path string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.seen {
		if within(path, w) {
			return w
		}
	}
	return ""
}

// statID is the identity of the file at path (symlinks followed).
func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{st.Dev, st.Ino}, nil
}
