package execpolicy

import (
	"path/filepath"
	"strings"
)

// MightBeDangerous reports whether an unmatched command deserves a prompt:
// a forced rm (rm -f/-rf/-fr/--force …), git reset or git rm, git branch
// with a delete flag, git push forcing or deleting, git clean -f; the same
// after sudo; and any of these inside bash/sh/zsh -c or -lc SCRIPT when
// the script is plain words joined by ;, &&, || or |. cmd[0] may be a path.
func MightBeDangerous(cmd []string) bool {
	if dangerousExec(cmd) {
		return true
	}
	for _, sub := range shellScriptCommands(cmd) {
		if dangerousExec(sub) {
			return true
		}
	}
	return false
}

func dangerousExec(cmd []string) bool {
	if len(cmd) == 0 {
		return false
	}
	prog := filepath.Base(cmd[0])
	switch {
	case strings.HasSuffix(cmd[0], "git"):
		return dangerousGit(cmd)
	case prog == "rm":
		return forcedRm(cmd[1:])
	case prog == "sudo":
		return dangerousExec(cmd[1:])
	}
	return false
}

// forcedRm reports an rm option list that forces: -f, -rf, -fr, -Rf, any
// short group with f, or --force, before a "--".
func forcedRm(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--force" || shortGroupHas(a, 'f') {
			return true
		}
	}
	return false
}

func shortGroupHas(a string, c byte) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], c) >= 0
}

// gitOptsWithValue are git's global options that take the next argument.
var gitOptsWithValue = map[string]bool{"-C": true, "-c": true, "--config-env": true,
	"--exec-path": true, "--git-dir": true, "--namespace": true, "--super-prefix": true,
	"--work-tree": true}

// gitSubcommand returns the index of git's subcommand, skipping global
// options, or -1.
func gitSubcommand(cmd []string) int {
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		switch {
		case gitOptsWithValue[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return i
		}
	}
	return -1
}

func dangerousGit(cmd []string) bool {
	i := gitSubcommand(cmd)
	if i < 0 {
		return false
	}
	args := cmd[i+1:]
	switch cmd[i] {
	case "reset", "rm":
		return true
	case "branch":
		return anyArg(args, func(a string) bool {
			return a == "--delete" || strings.HasPrefix(a, "--delete=") ||
				shortGroupHas(a, 'd') || shortGroupHas(a, 'D')
		})
	case "push":
		return anyArg(args, func(a string) bool {
			return a == "--force" || a == "--delete" || a == "--force-with-lease" || a == "--force-if-includes" ||
				strings.HasPrefix(a, "--force-with-lease=") || strings.HasPrefix(a, "--force-if-includes=") ||
				strings.HasPrefix(a, "--delete=") || shortGroupHas(a, 'f') || shortGroupHas(a, 'd') ||
				len(a) > 1 && (a[0] == '+' || a[0] == ':')
		})
	case "clean":
		return anyArg(args, func(a string) bool {
			return a == "--force" || strings.HasPrefix(a, "--force=") || shortGroupHas(a, 'f')
		})
	}
	return false
}

func anyArg(args []string, f func(string) bool) bool {
	for _, a := range args {
		if f(a) {
			return true
		}
	}
	return false
}

// shellScriptCommands splits the script of `bash|sh|zsh -c|-lc SCRIPT` into
// its commands at the operators ;, &, | (and so && and ||), also where they
// touch a word ("a;rm -rf x"). Quoting is honoured for words but not for
// these bytes, which can only split more: the heuristic errs towards a
// prompt. A script that does not split as shell words gives nil.
func shellScriptCommands(cmd []string) [][]string {
	if len(cmd) != 3 || (cmd[1] != "-c" && cmd[1] != "-lc") {
		return nil
	}
	switch filepath.Base(cmd[0]) {
	case "bash", "sh", "zsh":
	default:
		return nil
	}
	words, err := SplitShell(cmd[2])
	if err != nil {
		return nil
	}
	var out [][]string
	var cur []string
	for _, w := range words {
		if w == "" {
			cur = append(cur, w)
			continue
		}
		if isOperatorByte(rune(w[0])) {
			out, cur = append(out, cur), nil
		}
		for i, piece := range strings.FieldsFunc(w, isOperatorByte) {
			if i > 0 {
				out, cur = append(out, cur), nil
			}
			cur = append(cur, piece)
		}
		if isOperatorByte(rune(w[len(w)-1])) {
			out, cur = append(out, cur), nil
		}
	}
	return append(out, cur)
}

func isOperatorByte(r rune) bool { return r == ';' || r == '&' || r == '|' }
