// Package netproxy is the managed network proxy of a sandboxed command
// (docs/sandbox.md, "Network"): an HTTP proxy (absolute-form and CONNECT)
// and a SOCKS5 proxy that serve listeners made inside the command's own
// network namespace, and allow a connection only when its host passes the
// profile's domain policy and every address it resolves to passes the
// local-address rule. It imports nothing of ours.
package netproxy
