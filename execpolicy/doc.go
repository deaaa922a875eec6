// Package execpolicy is the Codex `.rules` policy engine: Starlark files
// that declare prefix rules (prefix_rule), network rules (network_rule)
// and host executables (host_executable), and the evaluation of a command
// line against them. It is pure: it reads the files it is given and
// imports nothing else of this module.
//
// The grammar, the error texts and the matching follow Codex 0.169.0,
// whose `codex execpolicy check` is the oracle (testdata/check holds the
// cases recorded from it; RunCheck is our `codex execpolicy check`):
//
//   - LoadFiles and LoadLayers build a Policy; every load error is a
//     *FileError naming the file. Match examples are checked at load.
//   - Policy.Matches lists the rules matching a command (prefix match,
//     exact program, optionally resolving a program path through
//     host_executable); Policy.Evaluate adds the strictest decision and the
//     MightBeDangerous fallback for unmatched commands.
//   - Policy.AppendAllowPrefix records an "always allow" approval.
//
// The Starlark dialect is go.starlark.net's with top-level control flow,
// global reassignment and f-strings (rewritten to plain Starlark before
// parsing); there is no load(), no print, no while and no set. Type
// annotations (def f(x: str)), which Codex's interpreter accepts, are not
// supported. Diagnostics of the interpreter itself (syntax errors,
// undefined names) have go.starlark.net's wording.
package execpolicy
