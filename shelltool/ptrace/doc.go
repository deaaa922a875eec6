// Package ptrace is the kernel-level exec interceptor of the MCP shell
// tool (docs/shell-tool.md §10): the server traces every process of a
// shell call with ptrace, the sandbox's seccomp filter stops each execve
// and execveat for it (Plan.TraceExecFD), and at that stop the exec is
// turned into an escalate.Request and judged by the same escalate.Decider
// the wrapper interceptor uses. The decision is carried out on the stopped
// process: Run lets the exec proceed inside the sandbox; Deny writes
// "Execution denied[: reason]" to the process's stderr and turns the
// syscall into exit_group(1); Escalate runs the program outside the
// sandbox with an escalate.Escalator on the process's own stdin, stdout
// and stderr (taken with pidfd_getfd), keeps the process stopped until it
// ends, then turns the syscall into exit_group(code).
//
// At PTRACE_EVENT_EXEC, before the new image runs an instruction, the
// executable and argv that the kernel actually used are compared with
// what was judged; a difference (another thread rewrote the path or argv
// after the decision, or an exec let through unjudged succeeded after
// all) is judged again, and the process is killed unless that judgement
// is Run.
//
// All ptrace requests and waits of a Session run on one goroutine locked
// to its OS thread (never the main thread, nor one that has children
// already), which also forks the root process. It waits with __WALL|__WNOTHREAD, which limits the wait to
// that thread's own children (the root alone) and its tracees, so it
// never reaps another child of the server, nor an orphan re-parented to
// a subreaper server (those go to the main thread). The reverse does not
// hold: a wait for any child from another thread without __WNOTHREAD
// (proc.TreeKiller's orphan reaper, in subreaper mode) could take the
// root's exit, so a process running Sessions must not run that reaper;
// exec-mcp-server does not (a lost root ends its Session with 255).
package ptrace
