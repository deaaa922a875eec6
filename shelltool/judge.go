package shelltool

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/execpolicy"
	"github.com/codexec/codex/shelltool/escalate"
)

// The policy's verdict on one exec, taken from the file the kernel will
// run as well as from its name (docs/shell-tool.md §11.3).

// maxInterpDepth is how deep scripts may name scripts as interpreters
// (the kernel allows a few levels; deeper execs fail there).
const maxInterpDepth = 5

// judgement is the policy's verdict on one exec.
type judgement struct {
	decision execpolicy.Decision
	driven   bool // an explicit rule (not the heuristic) gave decision
	// name is the rule program the exec'd file matched as when a rule
	// allowed it (host_executable pins apply to it).
	name string
	// interp is a script's interpreter, as the kernel will find it, and
	// its file opened in the command's view (closed by close).
	interp    string
	interpExe *os.File
	// loaded: the exec is the dynamic loader running a program; it is
	// judged by that program and never escalated.
	loaded bool
	// refusal, when set, denies the exec: what it runs cannot be told.
	refusal string
}

func (j *judgement) close() {
	if j.interpExe != nil {
		j.interpExe.Close()
		j.interpExe = nil
	}
}

// stricter folds o (the verdict on what the exec also runs: a script's
// interpreter, a loader's program) into j: the strictest decision wins.
func (j *judgement) stricter(o judgement) {
	if o.refusal != "" && j.refusal == "" {
		j.refusal = o.refusal
	}
	switch {
	case o.decision.Stricter(j.decision) != j.decision:
		j.decision, j.driven = o.decision, o.driven
	case o.decision == j.decision && o.driven && !j.driven:
		j.driven = true
	}
}

// judge evaluates r: the rules of its program name and of every rule
// program its file is (Programs), then, for a dynamic loader, the program
// it loads, and for a script, its interpreter.
func (d *PolicyDecider) judge(r escalate.Request, depth int) judgement {
	exe := r.Exe
	if exe == nil {
		if f, err := openPath(r.File, nil); err == nil {
			defer f.Close()
			exe = f
		}
	}
	id := d.Programs.identify(exe)
	names := []string{d.programName(r.File)}
	names = append(names, id.names...)
	if id.multi && len(r.Argv) > 0 {
		names = append(names, filepath.Base(r.Argv[0]))
	}
	j := judgement{decision: execpolicy.Allow}
	first := true
	for _, name := range names {
		cmd := append([]string{name}, argTail(r.Argv)...)
		dec, driven := d.Evaluate(cmd)
		if first || dec.Stricter(j.decision) != j.decision || dec == j.decision && driven && !j.driven {
			j.decision, j.driven, j.name = dec, driven, name
		}
		first = false
	}
	if depth >= maxInterpDepth {
		j.refusal = "too many levels of interpreters"
		return j
	}
	if id.loader {
		j.loaded = true
		prog, argv, ok := loaderTarget(r.Argv)
		switch {
		case !ok:
			j.refusal = "cannot tell which program the dynamic loader is asked to run"
		case prog != "":
			j.stricter(d.judgeOpened(r, prog, argv, depth))
		}
	}
	if interp, arg, ok := escalate.Shebang(exe); ok {
		argv := []string{interp}
		if arg != "" {
			argv = append(argv, arg)
		}
		argv = append(append(argv, r.File), argTail(r.Argv)...)
		sub := escalate.Request{File: absIn(interp, r.Workdir), Argv: argv, Workdir: r.Workdir, Env: r.Env, Open: r.Open}
		f, err := openPath(interp, r.Open)
		if err == nil {
			sub.Exe = f
		}
		sj := d.judge(sub, depth+1)
		sj.close()
		j.stricter(sj)
		j.interp, j.interpExe = sub.File, f
	}
	return j
}

// judgeOpened judges prog (a path in the command's view) run with argv.
func (d *PolicyDecider) judgeOpened(r escalate.Request, prog string, argv []string, depth int) judgement {
	sub := escalate.Request{File: absIn(prog, r.Workdir), Argv: argv, Workdir: r.Workdir, Env: r.Env, Open: r.Open}
	if f, err := openPath(prog, r.Open); err == nil {
		defer f.Close()
		sub.Exe = f
	}
	j := d.judge(sub, depth+1)
	j.close()
	return j
}

// programName is the name rules match a file by (docs/shell-tool.md §7.4).
func (d *PolicyDecider) programName(file string) string {
	if d.PreserveProgramPaths {
		return file
	}
	return filepath.Base(file)
}

func argTail(argv []string) []string {
	if len(argv) > 1 {
		return argv[1:]
	}
	return nil
}

func absIn(p, dir string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// openPath opens path O_PATH with open (the command's view), or in the
// server's view when open is nil.
func openPath(path string, open func(string) (*os.File, error)) (*os.File, error) {
	if open != nil {
		return open(path)
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// The options of the glibc dynamic loader run as a program, with and
// without a value.
var (
	loaderFlags  = []string{"--list", "--verify", "--inhibit-cache", "--list-tunables", "--list-diagnostics", "--help", "--version"}
	loaderValued = []string{"--library-path", "--inhibit-rpath", "--audit", "--preload", "--argv0", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask"}
)

// loaderTarget finds the program in a dynamic loader's argv and the argv
// it runs with. prog is "" when there is none (the loader only prints);
// ok is false for an option the loader may know and we do not.
func loaderTarget(argv []string) (prog string, progArgv []string, ok bool) {
	argv0 := ""
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case !strings.HasPrefix(a, "--"):
			out := append([]string{a}, argv[i+1:]...)
			if argv0 != "" {
				out[0] = argv0
			}
			return a, out, true
		case slices.Contains(loaderFlags, a):
		case slices.Contains(loaderValued, a) && i+1 < len(argv):
			if a == "--argv0" {
				argv0 = argv[i+1]
			}
			i++
		default:
			return "", nil, false
		}
	}
	return "", nil, true
}
