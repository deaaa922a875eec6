// Package config reads the permission settings of the Codex configuration
// file, $CODEX_HOME/config.toml (CODEX_HOME defaults to ~/.codex), with the
// command line's `-c key=value` overrides, and compiles its named
// permission profiles into sandbox profiles.
//
// Only the keys an executor needs are read: `default_permissions`, the
// `[permissions.<name>]` tables (`extends`, `workspace_roots`, `filesystem`
// with its special paths and `glob_scan_max_depth`, and `network` with
// every key of the Codex CLI's, network.go) and the `network_proxy`
// feature, which runs an enabled network through a proxy of its own.
// Every other key of the file belongs to the Codex CLI and is ignored;
// with Options.Strict a key the Codex CLI 0.169.0 does not know is an
// error (known.go holds the names probed on its binary).
//
// The file is shared with the Codex CLI, so Load draws the line where the
// CLI does: what the CLI refuses (a syntax error, a wrong type, an error
// in the default profile) fails, naming the file and line or key; what it
// accepts loads. A profile the CLI accepts but this executor cannot use (a
// non-default profile that does not compile, a network narrowed without
// the network_proxy feature, a proxy setting this executor does not serve,
// a deny that cannot be enforced), and a wrong network value, which the
// CLI's app-server also loads and refuses only on the requests that use
// it, are warnings, and Resolve refuses the profile with the same error:
// an executor must neither stop on a file the CLI runs with nor run a
// command with other permissions than its operator wrote.
package config
