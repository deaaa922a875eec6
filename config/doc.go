// Package config reads the permission settings of the Codex configuration
// file, $CODEX_HOME/config.toml (CODEX_HOME defaults to ~/.codex), and
// compiles its named permission profiles into sandbox profiles.
//
// Only the keys an executor needs are read: `default_permissions` and the
// `[permissions.<name>]` tables (`extends`, `workspace_roots`, `filesystem`
// with its special paths and `glob_scan_max_depth`, `network.enabled`).
// Every other key of the file belongs to the Codex CLI and is ignored.
//
// Unlike the Codex CLI, which falls back to its defaults when the file is
// invalid, Load fails: a syntax error names the file and line, a semantic
// error the file and the key. An executor that silently ran with other
// permissions than its operator wrote would be worse than one that does
// not start.
package config
