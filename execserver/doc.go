// Package execserver is the server side of the exec-server protocol: the
// sessions and their Registry, the per-process event log, the process/*
// and environment/* bindings behind the handshake gate (Binder), and Run,
// which serves them over a WebSocket listener or stdio. The OS mechanics of
// the processes are package proc's.
//
// # Sessions and bindings
//
// A Registry holds the Sessions; a session holds processes and outlives its
// connection. A dropped connection detaches the session: its processes keep
// running, their output keeps being retained, and notifications are not
// queued. initialize {resumeSessionId} re-attaches it within the TTL; at
// expiry, at the close with TTL 0, at session/end and at shutdown, every
// process tree is SIGKILLed (docs/protocol.md §5.2, §7.8, §10.5). A tree
// outlives its process when the process closes with a background job still
// running: the session adopts it (proc.Leftovers) and kills it at its end.
//
// Each process has one seq counter from 1, shared by output chunks, the exit
// and the close, so a run is output…, exited(n), closed(n+1). Seq assignment
// and the hand-off to the attached connection happen under one per-process
// lock, so notifications leave in seq order with no gap, and a connection
// that does not read blocks the producer (and so the child) instead of
// growing memory. The newest 1 MiB (configurable) and at most 50 000 chunks
// are retained for process/read; evictions are counted and reported with
// includeTruncation. A closed process stays readable for 80 s (docs/protocol.md §7.5, §7.6).
//
// Binder puts the handshake gate in front of every method (params are
// decoded first, then the handshake is checked, docs/protocol.md §5.1); control requests
// (terminate, signal, resize, environment/*) are answered at once, even
// while a long-poll process/read is parked (docs/protocol.md §1.5). The process/start answer
// is written before the process's first notification.
//
// # command/exec
//
// The one-shot family of docs/protocol.md §12 (command/exec, its write,
// resize and terminate follow-ups, and outputDelta notifications) belongs
// to the connection, not to the session: its process ids are the
// connection's, and closing the connection kills its commands. Each run is
// a goroutine owned by the connection that waits for the exit, a timeout or
// a terminate, gives the output 2 s to drain, and answers. The sandbox is
// resolved as for process/start (a sandboxPolicy at the server's cwd, a
// permissionProfile at the request's, :read-only by default).
package execserver
