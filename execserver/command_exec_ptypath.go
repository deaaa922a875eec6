package execserver

import (
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/codexec/codex/proc"
	"golang.org/x/sys/unix"
)

// ptyLookupError is a failed program lookup of an unsandboxed PTY
// command/exec; its text follows "failed to spawn command: ".
type ptyLookupError string

func (e ptyLookupError) Error() string { return string(e) }

// checkPTYProgram looks argv[0] up the way the reference does before an
// unsandboxed PTY spawn (docs/protocol.md §12.2) and returns its
// error, or nil when a candidate exists (the start itself then decides).
// An absolute program is not looked up: its start fails with the OS error.
// A program whose first component is "." or ".." is taken relative to the
// cwd, any other relative one is searched in the PATH of the child's env,
// each PATH entry joined onto the cwd. The caller skips the check when the
// cwd is missing, which answers the OS error as without a PTY (§13.6).
func checkPTYProgram(prog, cwd string, env []string) error {
	if prog == "" || strings.HasPrefix(prog, "/") {
		return nil
	}
	first, _, _ := strings.Cut(prog, "/")
	if first == "." || first == ".." {
		abs := joinPath(cwd, prog)
		switch candidateState(abs) {
		case candidateOK:
			return nil
		case candidateDir:
			return ptyLookupError(fmt.Sprintf("Unable to spawn %s because it is a directory", abs))
		case candidateNotExec:
			return ptyLookupError(fmt.Sprintf("Unable to spawn %s because it is not executable", abs))
		}
		return ptyLookupError(fmt.Sprintf("Unable to spawn %s because it does not exist", abs))
	}
	path, ok := envValue(env, "PATH")
	if !ok {
		return ptyLookupError(fmt.Sprintf("Unable to spawn %s because:\nUnable to resolve the PATH", prog))
	}
	var notes []string
	for _, dir := range strings.Split(path, ":") {
		cand := joinPath(joinPath(cwd, dir), prog)
		switch candidateState(cand) {
		case candidateOK:
			return nil
		case candidateDir:
			notes = append(notes, cand+" exists but is a directory")
		case candidateNotExec:
			notes = append(notes, cand+" exists but is not executable")
		}
	}
	notes = append(notes, "No viable candidates found in PATH "+debugQuote(path))
	return ptyLookupError(fmt.Sprintf("Unable to spawn %s because:\n%s", prog, strings.Join(notes, ".\n")))
}

// ptyPreflight runs checkPTYProgram for an unsandboxed PTY spec whose cwd
// exists; nil otherwise.
func ptyPreflight(spec proc.Spec) error {
	if !spec.TTY || spec.Launcher != nil || len(spec.Argv) == 0 {
		return nil
	}
	if st, err := os.Stat(spec.Dir); err != nil || !st.IsDir() {
		return nil
	}
	return checkPTYProgram(spec.Argv[0], spec.Dir, spec.Env)
}

// candidate is what a looked-up path turned out to be.
type candidate int

const (
	candidateMissing candidate = iota
	candidateDir
	candidateOK
	candidateNotExec
)

// candidateState classifies a path: a directory (symlinks followed),
// executable, present but not executable, or missing.
func candidateState(p string) candidate {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return candidateDir
	}
	if unix.Access(p, unix.X_OK) == nil {
		return candidateOK
	}
	if unix.Access(p, unix.F_OK) == nil {
		return candidateNotExec
	}
	return candidateMissing
}

// joinPath appends p to base with one separator, keeping "." and ".."
// (the reference reports the joined path unnormalised); an absolute p
// replaces base.
func joinPath(base, p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return p
	case strings.HasSuffix(base, "/"):
		return base + p
	}
	return base + "/" + p
}

// envValue returns the value of name in a NAME=value list (the last one).
func envValue(env []string, name string) (string, bool) {
	val, ok := "", false
	for _, kv := range env {
		if k, v, found := strings.Cut(kv, "="); found && k == name {
			val, ok = v, true
		}
	}
	return val, ok
}

// debugQuote quotes s as the reference's messages print a path: in double
// quotes, with \t \r \n \0 \\ \" escaped, other unprintable characters as
// \u{hex} and bytes that are not UTF-8 as \xHH.
func debugQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02X`, s[0])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == 0:
			b.WriteString(`\0`)
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r != ' ' && !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	b.WriteByte('"')
	return b.String()
}
