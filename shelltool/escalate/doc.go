// Package escalate is the interception-independent half of the MCP shell
// tool's exec control: the request an interceptor produces for one exec,
// the decision about it (run in the sandbox, escalate outside it, deny),
// and the actuator that carries an escalation out. The wrapper interceptor
// (codex-execve-wrapper and its socket protocol) lives here too; other
// interceptors produce the same Request and use the same Decider.
//
// # The wrapper interceptor
//
// A patched Bash execs codex-execve-wrapper (WrapperMain: the codex binary
// under that name) instead of each program. The wrapper finds the
// escalate socket, one end of a Unix datagram socketpair made per shell
// call (NewSocketPair), by the descriptor number in
// CODEX_ESCALATE_SOCKET; it sends a one-byte datagram carrying one end of
// a fresh stream socketpair and asks its question on the other end
// (docs/shell-tool.md §5–§6). Serve, in the server, answers every
// such session.
//
// Stream messages are a u32 little-endian length and a JSON payload, with
// descriptors (at most MaxFDs) attached to the first sendmsg of a frame.
// Descriptors are received close-on-exec and closed unless handed on.
//
// # Escalated programs
//
// An Escalator runs each escalated program outside the sandbox, in its
// own process group, with exactly the request's argv, directory and
// environment and only the descriptors the wrapper passed; it kills the
// group when the shell call ends (its context) or on KillAll, and reaps
// everything it started.
//
// # Known limits
//
// The wrapper is a Go program: the runtime installs its signal handlers
// at start-up, so a program the wrapper execs in place (Run) gets the
// default disposition for signals the shell had ignored (`trap "" TERM`,
// SIGQUIT for background jobs), except SIGHUP and SIGINT, whose ignored
// state the runtime keeps. Its start-up also costs more than the
// reference's Rust wrapper (see BenchmarkWrapperExec).
package escalate
