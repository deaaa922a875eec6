package netproxy

// Action is a domain or Unix-socket entry's verdict: "allow" or "deny".
type Action string

// Actions.
const (
	Allow Action = "allow"
	Deny  Action = "deny"
)

// Mode is the proxy's method policy: "full" (the zero value reads as full)
// or "limited" (GET, HEAD and OPTIONS only).
type Mode string

// Modes.
const (
	ModeFull    Mode = "full"
	ModeLimited Mode = "limited"
)

// Settings is one command's network proxy configuration, whichever surface
// it came from: a profile's `[permissions.<name>.network]` table in
// config.toml or process/start's `networkProxy.proxy`. The zero value
// denies every host. Settings is a value: callers copy it freely.
type Settings struct {
	// Domains maps a host pattern (exact host, "*.d", "**.d", "*", a glob
	// inside a label, an IP literal) to its action. Nil or empty denies
	// every host.
	Domains map[string]Action
	// Mode is the method policy.
	Mode Mode
	// AllowLocalBinding lets names resolve to local and private addresses.
	AllowLocalBinding bool
	// EnableSOCKS5 serves a SOCKS5 listener next to the HTTP one.
	EnableSOCKS5 bool
	// EnableSOCKS5UDP asks for SOCKS5 UDP associate (not served).
	EnableSOCKS5UDP bool
	// AllowUpstreamProxy asks to chain allowed traffic through the
	// server's own HTTP(S)_PROXY (not served).
	AllowUpstreamProxy bool
	// DangerouslyAllowAllUnixSockets lets the command connect to any Unix
	// socket it can see.
	DangerouslyAllowAllUnixSockets bool
	// UnixSockets maps an absolute socket path to its action.
	UnixSockets map[string]Action
}
