// Package netproxy is the managed network proxy of a sandboxed command
// (docs/sandbox.md, "Network"): an HTTP proxy (absolute-form and CONNECT)
// and a SOCKS5 proxy that serve listeners made inside the command's own
// network namespace, and allow a connection only when its host passes the
// profile's domain policy and every address it resolves to passes the
// local-address rule. It imports nothing of ours.
//
// Compile turns a Settings into a Policy (or a SettingsError with the
// reference's text); New makes a Proxy from it, ServeHTTP and ServeSOCKS5
// hand it listeners, and Close ends everything it started.
//
// A request is decided in this order, and each decision is reported to
// Options.OnDecision and logged:
//
//  1. the baseline policy on the host's text: a deny pattern wins; an IP
//     literal listed exactly is allowed even when local; a local literal
//     not listed is not_allowed_local (not_allowed with
//     AllowLocalBinding);
//  2. limited mode's method guard (GET, HEAD, OPTIONS of plain HTTP);
//  3. a host that is only not_allowed goes to Options.Review, if any;
//  4. an allowed name is looked up once; every address must pass the
//     local rule unless AllowLocalBinding, and only those addresses are
//     dialled (no second lookup, so no rebinding window).
//
// Where we differ from the reference on purpose ([ours]):
//   - CONNECT answers "200 OK" only once the upstream connection is up; a
//     refused connect is 502 and a timed-out one 504, each with a text.
//   - In limited mode CONNECT is refused (the reference's answer when it
//     has no interception CA: 403 blocked-by-mitm-required): the proxy
//     never terminates TLS, so an HTTPS request's method cannot be
//     checked. The reference intercepts with a CA it generates.
//   - The local rule covers every non-global range of both families,
//     IPv6 forms that embed a local IPv4 address included.
//   - A name the reviewer allowed still passes the local rule.
//   - With AllowLocalBinding, an allowed name with no address is an
//     upstream failure (502, SOCKS5 reply 4), not a policy refusal.
//   - An established tunnel has no idle limit; it ends with either side
//     or with Close. Request heads have a size limit and a deadline,
//     kept-alive connections an idle limit, and a Proxy a connection cap.
package netproxy
