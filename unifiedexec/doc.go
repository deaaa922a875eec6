// Package unifiedexec is the client side of the exec-server protocol
// (docs/protocol.md, docs/client.md): a Client that connects to a server over
// WebSocket (Dial), supervises a `codex exec-server --listen stdio` child
// (Supervise) or speaks the stdio transport to a server its caller runs
// (Attach), typed calls for every server method, and Process handles in
// the style of os/exec.
//
// # Connections
//
// A Client is built on rpc.Conn. Dial, Supervise and Attach perform the handshake
// (initialize {clientName:"codex-go-unifiedexec", capabilities:
// {experimentalApi:true}}, then initialized) before
// they return. Every method of Client and Process is safe for concurrent use.
// Close kills the processes the client started (unless
// DialOptions.KeepSession), ends the connection, stops a supervised child
// and waits for every goroutine the Client started; DialOptions.
// ResumeSessionID reattaches to a kept session. Logs go to the
// *slog.Logger of the options.
//
// # Embedding
//
// The zero values never leak or surprise: Supervise without a Path runs
// the codex of $PATH only once its --version line says it is ours (the
// Codex CLI is also called codex; docs/client.md §3.1), and a start
// without Env or EnvPolicy gives the child the server's environment, as
// CommandExec and Run do, and never the caller's (StartOptions.InheritEnv
// opts in to it; docs/client.md §3.6). OnOutput, OnEvent and the
// Stdout/Stderr writers of a process run on that process's own goroutine,
// so a slow consumer never delays other processes, other calls or Close. Server errors are
// *WireError values, matched with errors.Is (fs.ErrNotExist, ErrNotFound,
// fs.ErrPermission, the rpc code sentinels) or errors.As, never by text;
// Communicate reports a truncated capture as *TruncatedError. A sandbox
// is the wire object of docs/protocol.md §8.1: ReadOnly, WorkspaceWrite
// and DangerFullAccess build it for the three modes, raw JSON states any
// other policy, nil means none. Terminal sizes are wire.Size.
//
// # Event ordering
//
// process/output, process/exited and process/closed notifications are
// routed by processId to the Process handle and published strictly in seq
// order: an out-of-order notification is parked until every lower seq has
// been published, duplicates are dropped, notifications for unknown ids are
// ignored, and closed is always the last event (docs/client.md §3.2).
// Callbacks see the same order, on the process's own goroutine.
//
// # Recovery
//
// When a WebSocket connection drops, the Client reconnects with
// resumeSessionId for up to 25 s (100 ms between attempts), then catches up
// every live process with process/read from its last published seq, so no
// output is lost or duplicated (docs/client.md §11). Calls made while
// recovering wait for the outcome. In-flight process/start, process/signal,
// process/terminate and fs writes are never replayed; they fail with an
// error wrapping ErrTransport. process/write always carries a writeId, so
// Process.Write retries once after a recovery without risk of a double
// write. A supervised child that dies ends its processes with an error
// wrapping ErrTransport and is restarted (SuperviseOptions.MaxRestarts) with
// a fresh session.
//
// # One-shot commands
//
// CommandExec runs one argv with command/exec (docs/protocol.md §12) and
// returns its buffered result; StartCommandExec returns a CommandExecHandle
// for streamed output (OnOutput), stdin (Write, CloseStdin), a PTY (Resize)
// and Terminate. Deltas are routed by processId on the connection's reading
// goroutine, so every delta sent before the answer has reached OnOutput
// when Wait returns. command/exec commands belong to the connection that
// started them: the server kills them when it ends, and they are not
// resumed. A lost connection therefore fails every running command/exec at
// once with ErrCommandExecLost (which wraps ErrTransport), while the
// processes of process/start recover; a later CommandExec runs on the
// recovered connection.
//
// # The agent tool layer
//
// Package unifiedexec/agenttool builds the exec_command and write_stdin
// tools of a coding agent (docs/client.md §4) on top of this client,
// through its Backend seam; this package does not depend on it.
package unifiedexec
