// Package agenttool is the agent tool layer on top of the exec-server
// client (package unifiedexec): the exec_command and write_stdin function
// tools a model calls (docs/client.md §4, §5), with their yield windows,
// bounded head-and-tail output, token-based truncation, the
// ExecCommandBegin/OutputDelta/End, TerminalInteraction and warning events
// (§8), and the store of background processes the model addresses by a
// small session id (§9).
//
// Tools reach an exec-server only through a Backend: ClientBackend runs
// them on a *unifiedexec.Client; a test or another transport implements
// Backend and ProcessHandle. The client knows nothing of this package, so
// a program that only runs commands does not compile it.
//
// The example of New runs exec_command on a supervised server end to end.
package agenttool
