// Package wsserve is the exec-server's WebSocket listener (docs/protocol.md
// §1.2): WebSocketServer serves one rpc.Conn per upgrade on "/", answers the
// readiness and liveness probes, refuses any request with an Origin header,
// bounds the connections open at once and drains at shutdown. It checks the
// bearer token of each upgrade (docs/protocol.md §1.3): a fixed token's
// SHA-256, or an HS256-signed token checked by JWTVerifier, whose shared
// secret ReadSharedSecret reads and refuses when it is a placeholder.
// PeerGate and PeerCheck keep sandboxed commands off the server's HTTP
// listeners.
//
// It is server code: a client (package unifiedexec) dials with package rpc
// and mints its tokens itself, and never imports this package.
package wsserve
