// Package e2e holds the integration tests of the codex binary: they build
// the real binary, start `codex exec-server`, and speak the protocol over a
// real WebSocket (or stdio), asserting what a client sees on the wire.
package e2e
