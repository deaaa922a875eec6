package shelltool

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// progDir makes a directory holding an executable for each name, with
// the given contents.
func progDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func openT(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := openPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestProgramsIdentify: a file is known by identity (a link), by content
// (a copy, a memfd), and a file PATH holds under two names is multi-call.
func TestProgramsIdentify(t *testing.T) {
	bin := progDir(t, map[string]string{"tool": "tool-binary-content", "other": "other-content!!!!!!"})
	if err := os.Link(filepath.Join(bin, "other"), filepath.Join(bin, "other2")); err != nil {
		t.Fatal(err)
	}
	none := func(string) ([]string, bool) { return nil, false }
	p := NewPrograms([]string{"tool", "other"}, none, []string{bin})
	ws := progDir(t, map[string]string{"renamed": "tool-binary-content", "almost": "tool-binary-contenT"})
	if err := os.Symlink(filepath.Join(bin, "tool"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	mfd, err := unix.MemfdCreate("okname", 0)
	if err != nil {
		t.Fatal(err)
	}
	memfd := os.NewFile(uintptr(mfd), "memfd")
	defer memfd.Close()
	if _, err := memfd.WriteString("tool-binary-content"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f     *os.File
		names []string
		multi bool
	}{
		{openT(t, filepath.Join(bin, "tool")), []string{"tool"}, false},
		{openT(t, filepath.Join(ws, "link")), []string{"tool"}, false},
		{openT(t, filepath.Join(ws, "renamed")), []string{"tool"}, false},
		{memfd, []string{"tool"}, false},
		{openT(t, filepath.Join(ws, "almost")), nil, false},
		{openT(t, filepath.Join(bin, "other2")), []string{"other"}, true},
	} {
		id := p.identify(tc.f)
		if !slices.Equal(id.names, tc.names) || id.multi != tc.multi || id.loader {
			t.Errorf("%s: %+v, want names %v multi %v", tc.f.Name(), id, tc.names, tc.multi)
		}
	}
	if l := loaderPaths(); len(l) > 0 {
		if id := p.identify(openT(t, l[0])); !id.loader {
			t.Errorf("%s is not known as the loader", l[0])
		}
	}
}

func TestLoaderTarget(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		prog string
		out  []string
		ok   bool
	}{
		{[]string{"ld.so", "/usr/bin/touch", "x"}, "/usr/bin/touch", []string{"/usr/bin/touch", "x"}, true},
		{[]string{"ld.so", "--library-path", "/l", "--inhibit-cache", "--argv0", "a0", "./t", "x"}, "./t", []string{"a0", "x"}, true},
		{[]string{"ld.so", "--help"}, "", nil, true},
		{[]string{"ld.so", "--new-option", "/usr/bin/touch"}, "", nil, false},
		{[]string{"ld.so", "--preload"}, "", nil, false},
	} {
		prog, out, ok := loaderTarget(tc.argv)
		if prog != tc.prog || !slices.Equal(out, tc.out) || ok != tc.ok {
			t.Errorf("%q: %q %q %v", tc.argv, prog, out, ok)
		}
	}
}

// TestDeciderJudgesTheFile: a forbidden program is forbidden through a
// renamed copy, through a script whose interpreter it is, and through
// the dynamic loader; an allowed one escalates only from a trusted
// directory, and a host_executable pin restricts it to its paths.
func TestDeciderJudgesTheFile(t *testing.T) {
	pol, err := loadRules(t, `prefix_rule(pattern=["touch"], decision="forbidden")
prefix_rule(pattern=["env"], decision="allow")
prefix_rule(pattern=["true"], decision="allow")
host_executable(name="true", paths=["/nonexistent/true"])
`)
	if err != nil {
		t.Fatal(err)
	}
	touch, err := filepath.EvalSymlinks("/usr/bin/touch")
	if err != nil {
		t.Skip(err)
	}
	data, _ := os.ReadFile(touch)
	ws := progDir(t, map[string]string{"tuch": string(data), "okname": "#!" + touch + " x\n"})
	dirs := []string{"/usr/bin", "/bin"}
	d := &PolicyDecider{
		Evaluate: func(cmd []string) (execpolicy.Decision, bool) {
			ev := pol.Evaluate(cmd)
			return ev.Decision, ev.PolicyDriven
		},
		Programs: NewPrograms(pol.Programs(), pol.HostExecutables, dirs),
		trust: newCallTrust(&EscalationPolicy{Dirs: TrustedPathDirs("/usr/bin:/bin"), HostExecutables: pol.HostExecutables},
			&sandbox.Plan{ReadOnlyRoot: true, WritableRoots: []sandbox.WritableRoot{{Path: ws}}}),
	}
	decide := func(file string, argv ...string) escalate.Decision {
		dec := d.Decide(context.Background(), escalate.Request{File: file, Argv: argv, Workdir: "/"})
		t.Cleanup(dec.Close)
		return dec
	}
	for _, tc := range []struct {
		file string
		argv []string
	}{
		{filepath.Join(ws, "tuch"), []string{"tuch", "x"}},
		{filepath.Join(ws, "okname"), []string{"okname"}},
	} {
		if dec := decide(tc.file, tc.argv...); dec.Action != escalate.Deny {
			t.Errorf("%s: %+v, want Deny", tc.file, dec)
		}
	}
	if l := loaderPaths(); len(l) > 0 {
		if dec := decide(l[0], "ld.so", filepath.Join(ws, "tuch"), "x"); dec.Action != escalate.Deny {
			t.Errorf("loader: %+v, want Deny", dec)
		}
	}
	if dec := decide("/usr/bin/env", "env"); dec.Action != escalate.Escalate || dec.Program == nil {
		t.Errorf("env: %+v, want Escalate", dec)
	}
	if dec := decide("/usr/bin/env", "git-archive"); dec.Action != escalate.Run || !strings.Contains(dec.Note, "argv[0]") {
		t.Errorf("env as git-archive: %+v, want Run with a note", dec)
	}
	if dec := decide("/usr/bin/true", "true"); dec.Action != escalate.Run || !strings.Contains(dec.Note, "host_executable") {
		t.Errorf("pinned true: %+v, want Run with a note", dec)
	}
	if dec := decide("/usr/bin/env", "env"); dec.Program == nil {
		t.Error("no program")
	} else if real, _ := filepath.EvalSymlinks("/usr/bin/env"); dec.Program.Path != real {
		t.Errorf("program %s, want %s", dec.Program.Path, real)
	}
}

// loadRules loads src as a rules file.
func loadRules(t *testing.T, src string) (*execpolicy.Policy, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.rules")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return execpolicy.LoadFiles(path)
}

// TestConfine: an escalation from a writable root of this call or of an
// earlier one is refused; from elsewhere it goes ahead; the operator's
// flag trusts them.
func TestConfine(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	other, _ := filepath.EvalSymlinks(t.TempDir())
	pol := &EscalationPolicy{}
	plan := func(roots ...string) *sandbox.Plan {
		p := &sandbox.Plan{ReadOnlyRoot: true}
		for _, r := range roots {
			p.WritableRoots = append(p.WritableRoots, sandbox.WritableRoot{Path: r})
		}
		return p
	}
	first := newCallTrust(pol, plan(ws))
	if err := first.confine(filepath.Join(ws, "sub")); err == nil || !strings.Contains(err.Error(), ws) {
		t.Errorf("from the workspace: %v", err)
	}
	if err := first.confine(other); err != nil {
		t.Errorf("from elsewhere: %v", err)
	}
	later := newCallTrust(pol, plan()) // read-only: the workspace was writable before
	if err := later.confine(ws); err == nil {
		t.Error("a later read-only call escalates from the earlier call's workspace")
	}
	trusting := newCallTrust(&EscalationPolicy{InWritableDirs: true}, plan(ws))
	if err := trusting.confine(ws); err != nil {
		t.Errorf("the flag: %v", err)
	}
}

// TestDeciderEscalatesOnlyTheRuleProgram: an allow rule escalates its own
// program's file, not another trusted program reached through a symlink
// named after it (ws/git -> /usr/bin/find, allowed as `git status`),
// whether the interceptor opened the file in the command's view (ptrace)
// or not (the wrapper). The real file still escalates, also through a
// symlink named otherwise (judged as the program it is) when its argv[0]
// is a name it has in a trusted directory: the symlink's name is not
// (ws/git-archive -> /usr/bin/git would run git archive).
func TestDeciderEscalatesOnlyTheRuleProgram(t *testing.T) {
	pol, err := loadRules(t, `prefix_rule(pattern=["git", "status"], decision="allow")
prefix_rule(pattern=["env"], decision="allow")
`)
	if err != nil {
		t.Fatal(err)
	}
	find, err := filepath.EvalSymlinks("/usr/bin/find")
	if err != nil {
		t.Skip(err)
	}
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	git, err := filepath.EvalSymlinks("/usr/bin/git")
	if err != nil {
		t.Skip(err)
	}
	for name, target := range map[string]string{"git": find, "e": "/usr/bin/env", "git-archive": git} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	dirs := TrustedPathDirs("/usr/bin:/bin")
	d := workspaceDecider(pol, dirs, ws)
	for _, opened := range []bool{false, true} {
		decide := func(file string, argv ...string) escalate.Decision {
			r := escalate.Request{File: file, Argv: argv, Workdir: "/"}
			if opened {
				r.Exe = openT(t, file)
			}
			dec := d.Decide(context.Background(), r)
			t.Cleanup(dec.Close)
			return dec
		}
		if dec := decide(filepath.Join(ws, "git"), "git", "status", "/", "-exec", "mkdir", "/x", ";"); dec.Action == escalate.Escalate {
			t.Errorf("opened %v: find named git by a symlink escalates under the rule for git status: %+v", opened, dec)
		} else if dec.Action != escalate.Run || !strings.Contains(dec.Note, "not git") {
			t.Errorf("opened %v: %+v, want Run with a note saying it is not git", opened, dec)
		}
		if dec := decide(filepath.Join(ws, "e"), "env"); dec.Action != escalate.Escalate {
			t.Errorf("opened %v: env through a symlink named e: %+v, want Escalate", opened, dec)
		}
		// git and the like act by argv[0]: the name of the symlink is no
		// name the file has in a trusted directory.
		if dec := decide(filepath.Join(ws, "e"), "e"); dec.Action != escalate.Run || !strings.Contains(dec.Note, "argv[0]") {
			t.Errorf("opened %v: env through a symlink named e, as e: %+v, want Run with a note on argv[0]", opened, dec)
		}
		if dec := decide(filepath.Join(ws, "git-archive"), "git-archive", "status", "--remote=/ws", "--exec=sh"); dec.Action == escalate.Escalate {
			t.Errorf("opened %v: git as git-archive through a symlink escalates under the rule for git status: %+v", opened, dec)
		}
		// Another name of a multi-call file in a trusted directory is
		// another program: git-upload-pack is not git status.
		if _, err := os.Stat("/usr/bin/git-upload-pack"); err == nil {
			if dec := decide("/usr/bin/git-upload-pack", "git-upload-pack", "status"); dec.Action == escalate.Escalate {
				t.Errorf("opened %v: git-upload-pack escalates under the rule for git status: %+v", opened, dec)
			}
		}
	}
}

// TestDeciderArgv0Placed: an escalated program keeps its argv[0], where
// programs such as python3 and gcc look for their own files, so an
// argv[0] with a slash must not lead into a place a sandboxed command
// could write (lexically or through a symlink of the host), unless the
// operator trusts those places.
func TestDeciderArgv0Placed(t *testing.T) {
	pol, err := loadRules(t, `prefix_rule(pattern=["env"], decision="allow")`)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	host, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.Symlink(ws, filepath.Join(host, "link")); err != nil {
		t.Fatal(err)
	}
	dirs := TrustedPathDirs("/usr/bin:/bin")
	for _, trusting := range []bool{false, true} {
		d := &PolicyDecider{
			Evaluate: func(cmd []string) (execpolicy.Decision, bool) {
				ev := pol.Evaluate(cmd)
				return ev.Decision, ev.PolicyDriven
			},
			trust: newCallTrust(&EscalationPolicy{Dirs: dirs, InWritableDirs: trusting},
				&sandbox.Plan{ReadOnlyRoot: true, WritableRoots: []sandbox.WritableRoot{{Path: ws}}}),
		}
		for _, tc := range []struct {
			argv0, workdir string
			ok             bool
		}{
			{"env", "/", true},
			{"/usr/bin/env", "/", true},
			{"/custom/env", "/", true},
			{ws + "/v/bin/env", "/", false},
			{"../../" + ws + "/v/bin/env", "/usr/bin", false},
			{host + "/link/v/bin/env", "/", false},
			{host + "/link/../env", "/", false}, // a program may resolve host/link before the ..
		} {
			dec := d.Decide(context.Background(), escalate.Request{File: "/usr/bin/env", Argv: []string{tc.argv0}, Workdir: tc.workdir})
			dec.Close()
			want := escalate.Run
			if tc.ok || trusting {
				want = escalate.Escalate
			}
			if dec.Action != want {
				t.Errorf("trusting %v, argv[0] %s in %s: %+v, want action %d", trusting, tc.argv0, tc.workdir, dec, want)
			}
		}
	}
}

// TestConfineSymlinkedWorkdir: the working directory an escalation
// starts in is a path, followed again when the program starts; in wrapper
// mode it is the command's word, and a symlink in a writable root
// (ws/link -> /) can be pointed elsewhere between the decision and the
// start. Only a real path (no symlink in it, existing) is escalated
// from; a real path outside the writable roots has no component the
// command can rename.
func TestConfineSymlinkedWorkdir(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	host, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.Symlink("/", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws, filepath.Join(host, "tows")); err != nil {
		t.Fatal(err)
	}
	trust := newCallTrust(&EscalationPolicy{}, &sandbox.Plan{ReadOnlyRoot: true, WritableRoots: []sandbox.WritableRoot{{Path: ws}}})
	for _, dir := range []string{filepath.Join(ws, "link"), filepath.Join(host, "tows", "link"), filepath.Join(host, "tows", "missing")} {
		if err := trust.confine(dir); err == nil {
			t.Errorf("%s: escalates from a path the command can point elsewhere", dir)
		}
	}
	if err := trust.confine(host); err != nil {
		t.Errorf("%s: %v", host, err)
	}
}

// TestPeerAt: a working directory named over the escalate socket is
// taken only from a sandboxed process whose own working directory it is;
// a process of our mount namespace (the server's own, or a host process
// that took a dead wrapper's pid) and an unknown one are refused.
func TestPeerAt(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := peerAt(0, "/nonexistent"); err != nil {
		t.Errorf("no peer: %v", err)
	}
	if err := peerAt(-1, cwd); err == nil {
		t.Error("an unknown peer is trusted")
	}
	if err := peerAt(os.Getpid(), cwd); err == nil || !strings.Contains(err.Error(), "not in the sandbox") {
		t.Errorf("a process of our mount namespace: %v", err)
	}
}

// TestConfineUserConfig: a writable root in a dot-folder of the server's
// HOME, or in XDG_CONFIG_HOME, is user configuration an escalated program
// reads; a project below HOME is not.
func TestConfineUserConfig(t *testing.T) {
	home, _ := filepath.EvalSymlinks(t.TempDir())
	xdg, _ := filepath.EvalSymlinks(t.TempDir())
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	for _, tc := range []struct {
		root string
		ok   bool
	}{
		{filepath.Join(home, "code", "proj"), true},
		{filepath.Join(home, ".cargo"), false},
		{filepath.Join(home, ".config", "git"), false},
		{filepath.Join(xdg, "git"), false},
	} {
		trust := newCallTrust(&EscalationPolicy{}, &sandbox.Plan{ReadOnlyRoot: true, WritableRoots: []sandbox.WritableRoot{{Path: tc.root}}})
		if err := trust.confine("/"); (err == nil) != tc.ok {
			t.Errorf("writable %s: %v, want ok %v", tc.root, err, tc.ok)
		}
	}
}

// TestConfineUserConfigSymlinked: user configuration that a symlink in
// HOME (or in XDG_CONFIG_HOME) leads into a writable root is as
// plantable as a writable root in a dot-folder: a dotfiles repository
// (stow and the like link ~/.gitconfig, ~/.config/git, … into it) opened
// as the workspace let the command write the global git configuration
// an escalated git reads. Symlinks elsewhere in HOME do not count.
func TestConfineUserConfigSymlinked(t *testing.T) {
	home, _ := filepath.EvalSymlinks(t.TempDir())
	xdg, _ := filepath.EvalSymlinks(t.TempDir())
	dots, _ := filepath.EvalSymlinks(t.TempDir()) // the dotfiles repository
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	for _, d := range []string{"gitconfig", "git", "nvim", "proj", "deep"} {
		if err := os.MkdirAll(filepath.Join(dots, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("unix", filepath.Join(dots, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	confined := func(link, target string) error {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		trust := newCallTrust(&EscalationPolicy{}, &sandbox.Plan{ReadOnlyRoot: true, WritableRoots: []sandbox.WritableRoot{{Path: dots}}})
		return trust.confine("/")
	}
	for _, tc := range []struct {
		link, target string
		ok           bool
	}{
		{filepath.Join(home, ".gitconfig"), filepath.Join(dots, "gitconfig"), false},
		{filepath.Join(home, ".config", "git"), filepath.Join(dots, "git"), false},
		{filepath.Join(home, ".config", "git", "config"), filepath.Join(dots, "git"), false},
		{filepath.Join(xdg, "nvim"), filepath.Join(dots, "nvim"), false},
		{filepath.Join(home, ".bashrc"), filepath.Join(dots, "absent", "bashrc"), false},                  // dangling: the command can create it
		{filepath.Join(home, ".local", "share", "x"), "../../../" + filepath.Base(dots) + "/deep", false}, // relative
		{filepath.Join(home, "work"), filepath.Join(dots, "proj"), true},
		{filepath.Join(home, ".ssh", "agent.sock"), filepath.Join(dots, "agent.sock"), true}, // a socket is not configuration
		{filepath.Join(home, ".vimrc"), "/etc/hostname", true},
	} {
		if err := confined(tc.link, tc.target); (err == nil) != tc.ok {
			t.Errorf("%s -> %s: %v, want ok %v", tc.link, tc.target, err, tc.ok)
		}
	}
}

// TestDeciderArgv0TrailingSlash: programs take their name from what
// follows the last slash of argv[0], which is empty for "rvim/";
// filepath.Base drops the slash and says rvim. Under a rule allowing
// rvim, `exec -a rvim/ rvim -es -c '!CMD'` ran an unrestricted vim
// (restricted mode needs a name starting with r), and CMD outside the
// sandbox.
func TestDeciderArgv0TrailingSlash(t *testing.T) {
	rvim, err := filepath.EvalSymlinks("/usr/bin/rvim")
	if err != nil {
		t.Skip(err)
	}
	pol, err := loadRules(t, `prefix_rule(pattern=["rvim"], decision="allow")`+"\n")
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	dirs := TrustedPathDirs("/usr/bin:/bin")
	if !slices.Contains(dirs, filepath.Dir(rvim)) {
		t.Skipf("%s is not in a trusted directory", rvim)
	}
	d := workspaceDecider(pol, dirs, ws)
	decide := func(argv ...string) escalate.Decision {
		dec := d.Decide(context.Background(), escalate.Request{File: "/usr/bin/rvim", Argv: argv, Workdir: "/"})
		t.Cleanup(dec.Close)
		return dec
	}
	if dec := decide("rvim", "-es"); dec.Action != escalate.Escalate {
		t.Fatalf("rvim as rvim: %+v, want Escalate", dec)
	}
	if dec := decide("/usr/bin/rvim", "-es"); dec.Action != escalate.Escalate {
		t.Errorf("rvim as /usr/bin/rvim: %+v, want Escalate", dec)
	}
	for _, a0 := range []string{"rvim/", "/usr/bin/rvim//", "rvim/."} {
		if dec := decide(a0, "-es", "-c", "!id"); dec.Action == escalate.Escalate {
			t.Errorf("rvim as %q (vim, unrestricted) escalates under the rule for rvim: %+v", a0, dec)
		}
	}
}

// workspaceDecider is a PolicyDecider of pol for a read-only call whose
// one writable root is ws, trusting dirs.
func workspaceDecider(pol *execpolicy.Policy, dirs []string, ws string) *PolicyDecider {
	return &PolicyDecider{
		Evaluate: func(cmd []string) (execpolicy.Decision, bool) {
			ev := pol.Evaluate(cmd)
			return ev.Decision, ev.PolicyDriven
		},
		Programs: NewPrograms(pol.Programs(), pol.HostExecutables, dirs),
		trust: newCallTrust(&EscalationPolicy{Dirs: dirs, HostExecutables: pol.HostExecutables},
			&sandbox.Plan{ReadOnlyRoot: true, WritableRoots: []sandbox.WritableRoot{{Path: ws}}}),
	}
}
