package escalate

import (
	"os"
	"slices"
	"strings"
)

// The environment of an escalated program (docs/shell-tool.md §11.2): the
// server's own, with PWD set to the working directory, plus these
// variables of the request, which say how to present output and nothing
// about which code to load or run. A value containing "/" is dropped: a
// locale, terminal or zone name with a slash is a file path to the C
// library or ncurses. Every other request variable (PATH, LD_*, BASH_ENV,
// GIT_*, PYTHONPATH, NODE_OPTIONS, …) is dropped.
var passedVars = []string{
	"TERM", "COLORTERM", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLUMNS", "LINES",
	"LANG", "LANGUAGE", "TZ",
}

// passedVar reports whether the request variable k=v reaches an
// escalated program.
func passedVar(k, v string) bool {
	if strings.Contains(v, "/") {
		return false
	}
	if strings.HasPrefix(k, "LC_") && k != "LC_" {
		return true
	}
	return slices.Contains(passedVars, k)
}

// noEditor names the editor of an escalated program, in every variable
// programs take one from: "false", which edits nothing and fails. An
// editor reads its keys from the program's stdin, the command's, terminal
// or not, and runs shell commands typed at it (vi's :!CMD): through an MCP
// call nobody but the command could type (docs/shell-tool.md §11.2).
// Any other variable of the server's whose name ends in EDITOR (SVN_EDITOR,
// GH_EDITOR, PSQL_EDITOR, JJ_EDITOR, CVSEDITOR, …), and bash's FCEDIT,
// names false too (isEditorVar).
var noEditor = []string{"EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "SUDO_EDITOR", "SYSTEMD_EDITOR", "KUBE_EDITOR", "HGEDITOR"}

// isEditorVar reports whether k names an editor (noEditor).
func isEditorVar(k string) bool {
	return strings.HasSuffix(k, "EDITOR") || k == "FCEDIT" || slices.Contains(noEditor, k)
}

// escalatedEnv is the environment for an escalated program started in
// workdir for a request with env reqEnv, over base (the server's).
func escalatedEnv(base []string, workdir string, reqEnv map[string]string) []string {
	out := make([]string, 0, len(base)+8+len(noEditor))
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "PWD" || slices.Contains(noEditor, k) {
			continue
		}
		if isEditorVar(k) {
			out = append(out, k+"=false")
			continue
		}
		if rv, set := reqEnv[k]; set && passedVar(k, rv) {
			continue // the request's value wins below
		}
		out = append(out, k+"="+v)
	}
	keys := make([]string, 0, len(reqEnv))
	for k, v := range reqEnv {
		if passedVar(k, v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+reqEnv[k])
	}
	for _, k := range noEditor {
		out = append(out, k+"=false")
	}
	return append(out, "PWD="+workdir)
}

// serverEnv is the server's environment, read once.
var serverEnv = os.Environ()
