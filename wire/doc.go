// Package wire is the exec-server protocol (docs/protocol.md) as Go: every
// method name, params, result and notification type, the error codes
// beyond JSON-RPC's, the client-visible message texts, the transport labels,
// the codecs of paths (Path: a file:// URI or an absolute path, remembering
// the form) and base64 bytes (Bytes), and the hand-written encoders of the
// process notifications. The server
// (proc, fshelper, cli) and the client (unifiedexec, cmd/codex-bench) both use it,
// so neither defines its own copy of a shape.
//
// It imports only package rpc and the standard library, so a client that
// uses it pulls in nothing of the server.
//
// Errors are matched by code, never by text: an *rpc.Error compares codes
// in errors.Is, the sentinels (ErrNotFound, ErrSessionAttached) and the
// Is… helpers build on that, and InitializeError classifies the one answer
// whose meaning depends on the request (an unknown resumed session).
//
// The golden fixtures in testdata hold both directions: encoding/json and
// the hand encoders must write their bytes, and decoding them must give the
// values they were written from.
package wire
