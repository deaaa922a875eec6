// Package rpc is a JSON-RPC layer for both ends of a connection, in the
// manner of x/tools' jsonrpc2_v2: the message envelope (with or without
// "jsonrpc"), wire errors whose Is compares codes, params decoding, framers
// for WebSocket messages and newline-delimited stdio, and the symmetric
// Conn. It knows nothing of the exec-server: its methods, codes, texts,
// transport labels and path codecs live in package wire, and the server
// passes them in (Options.ParseError, the framer labels). The WebSocket
// listener and its bearer-token checks are the server's, in package wsserve;
// NewHijackedWebSocketFramer is the one seam it needs here.
//
// # Ordering
//
// With Options.Concurrency 0 (the default) requests run one at a time in
// arrival order on the connection's handler goroutine, so answers before
// the handshake come back in wire order. Two things step out of that line:
// a Preempter answers control requests at once on the reading goroutine,
// and a handler may return ErrAsync and answer later with Respond (a parked
// long poll), letting the next request run. With Concurrency 1 every
// request, asynchronous ones included, is answered before the next starts;
// with N ≥ 2 up to N run at once.
//
// # Writing and backpressure
//
// Messages are written by the goroutine that sends them, one at a time (a
// 1-token channel hands the right to write around), so frames never
// interleave and a peer that stops reading blocks its senders rather than
// growing a queue. Unparseable input is answered with id -1 (worded by
// Options.ParseError) and the
// connection stays open; an oversize message gets that answer and then the
// connection ends (WebSocket close 1009).
package rpc
