// Package execpolicy is the Codex `.rules` policy engine: Starlark files
// that declare prefix rules (prefix_rule), network rules (network_rule)
// and host executables (host_executable), and the evaluation of a command
// line against them. It is pure: it reads the files it is given and
// imports nothing else of this module.
package execpolicy
