package execpolicy

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// fileOptions is the dialect: top-level for/if and reassignment of globals
// are allowed (as in Codex's); while, set and recursion are not.
var fileOptions = &syntax.FileOptions{TopLevelControl: true, GlobalReassign: true}

// maxSteps bounds the work of one file, so that a runaway loop in a rules
// file fails its load ("too many steps") instead of hanging the server.
const maxSteps = 100_000_000

// LoadFiles loads the rules files in order into one policy. A later file
// sees the host_executable() declarations of earlier ones. Every error is
// a *FileError naming the file; a file that is not UTF-8 is an error.
func LoadFiles(paths ...string) (*Policy, error) {
	l := &loader{p: &Policy{}}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, &FileError{Op: "read", Path: path, Err: err}
		}
		if !utf8.Valid(src) {
			return nil, &FileError{Op: "read", Path: path,
				Err: errors.New("stream did not contain valid UTF-8")}
		}
		if err := l.loadFile(path, src); err != nil {
			return nil, &FileError{Op: "parse", Path: path, Err: err}
		}
	}
	return l.p, nil
}

// loader builds a Policy from files; it is used by one goroutine.
type loader struct {
	p       *Policy
	pending []exampleCheck
}

// exampleCheck is the match/not_match examples of one prefix_rule call,
// checked against the rules of that call once its file has run.
type exampleCheck struct {
	rules           []*PrefixRule
	match, notMatch [][]string
}

func (l *loader) loadFile(path string, src []byte) error {
	l.pending = l.pending[:0]
	builtins := starlark.StringDict{
		"prefix_rule":     starlark.NewBuiltin("prefix_rule", l.prefixRule),
		"network_rule":    starlark.NewBuiltin("network_rule", l.networkRule),
		"host_executable": starlark.NewBuiltin("host_executable", l.hostExecutable),
		// Codex's interpreter has no print; ours must never write to
		// stdout, which may be an MCP connection.
		"print":   starlark.NewBuiltin("print", noPrint),
		fstrName:  starlark.Universe["str"],
		freprName: starlark.Universe["repr"],
	}
	src, err := rewriteFStrings(path, src)
	if err != nil {
		return starlarkError(nil, err)
	}
	f, prog, err := starlark.SourceProgramOptions(fileOptions, path, src, builtins.Has)
	if err != nil {
		return starlarkError(nil, err)
	}
	thread := &starlark.Thread{
		Name: path,
		Load: func(_ *starlark.Thread, module string) (starlark.StringDict, error) {
			return nil, errorf("No imports are available, you tried `%s`", module)
		},
	}
	thread.Print = func(*starlark.Thread, string) {}
	thread.SetMaxExecutionSteps(maxSteps)
	if _, err := prog.Init(thread, builtins); err != nil {
		return starlarkError(f, err)
	}
	for _, c := range l.pending {
		if err := l.checkExamples(c); err != nil {
			return err
		}
	}
	return nil
}

func noPrint(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return nil, errorf("Variable `print` not found")
}

// checkExamples verifies that no not_match example matches a rule of the
// call and that every match example matches one, with host executables
// resolved as declared so far.
func (l *loader) checkExamples(c exampleCheck) error {
	tmp := &Policy{hostExecutables: l.p.hostExecutables}
	for _, r := range c.rules {
		tmp.addRule(r)
	}
	opts := MatchOptions{ResolveHostExecutables: true}
	for _, ex := range c.notMatch {
		if ms := tmp.matchesLocked(ex, opts); len(ms) > 0 {
			return &exampleError{fmt.Sprintf("expected example to not match rule `%s`: %s",
				ms[0].debugString(), renderExample(ex))}
		}
	}
	var unmatched []string
	for _, ex := range c.match {
		if len(tmp.matchesLocked(ex, opts)) == 0 {
			unmatched = append(unmatched, renderExample(ex))
		}
	}
	if len(unmatched) == 0 {
		return nil
	}
	rules := make([]string, len(c.rules))
	for i, r := range c.rules {
		rules[i] = r.debugString()
	}
	return &exampleError{fmt.Sprintf("expected every example to match at least one rule. rules: %s; unmatched examples: %s",
		rustList(rules), rustList(unmatched))}
}

func renderExample(ex []string) string {
	if s, ok := JoinShell(ex); ok {
		return s
	}
	return "unable to render example"
}

// starlarkError renders a Starlark failure in the reference's layout:
// "starlark error: ", an optional traceback, "error: MSG" and the
// location " --> file:line:col". f, when known, maps a call to its start.
func starlarkError(f *syntax.File, err error) error {
	var b strings.Builder
	b.WriteString("starlark error: ")
	var pos syntax.Position
	msg := err.Error()
	var serr syntax.Error
	var rerr *ruleError
	var eerr *starlark.EvalError
	switch {
	case errors.As(err, &serr):
		pos, msg = serr.Pos, "Parse error: "+serr.Msg
	case errors.As(err, &eerr):
		b.WriteString("Traceback (most recent call last):\n")
		for _, fr := range eerr.CallStack {
			if fr.Pos.Filename() == "<builtin>" || fr.Pos.Line == 0 {
				continue
			}
			name := fr.Name
			if name == "<toplevel>" {
				name = "<module>"
			}
			fmt.Fprintf(&b, "  * %s:%d, in %s\n", fr.Pos.Filename(), fr.Pos.Line, name)
			pos = fr.Pos
		}
		pos = callStart(f, pos)
		if errors.As(err, &rerr) {
			msg = rerr.msg
		} else {
			msg = eerr.Msg
		}
	default:
		if p, m, ok := firstResolveError(err); ok {
			pos, msg = p, m
			if m := undefinedName().FindStringSubmatch(msg); m != nil {
				msg = "Variable `" + m[1] + "` not found" // Codex's wording
			} else if strings.HasSuffix(msg, "does not support sets") {
				msg = "Variable `set` not found" // Codex has no set either
			}
		}
	}
	fmt.Fprintf(&b, "error: %s\n --> %s:%d:%d", msg, pos.Filename(), pos.Line, pos.Col)
	return errors.New(b.String())
}

var undefinedName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^undefined: (\S+)`) })

// firstResolveError unpacks the first error of a resolver error list.
func firstResolveError(err error) (syntax.Position, string, bool) {
	var list resolve.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return list[0].Pos, list[0].Msg, true
	}
	return syntax.Position{}, "", false
}

// callStart returns the start of the call expression whose '(' is at pos,
// or pos itself.
func callStart(f *syntax.File, pos syntax.Position) syntax.Position {
	if f == nil {
		return pos
	}
	out := pos
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && c.Lparen.Line == pos.Line && c.Lparen.Col == pos.Col {
			out, _ = c.Span()
			return false
		}
		return true
	})
	return out
}
