package agenttool

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/codexec/codex/wire"
)

// Yield windows and limits of the tools (docs/client.md §2).
const (
	MinYieldTime                        = 250 * time.Millisecond
	MinEmptyYieldTime                   = 5 * time.Second
	MaxYieldTime                        = 30 * time.Second
	DefaultMaxBackgroundTerminalTimeout = 300 * time.Second
	DefaultExecYieldTime                = 10 * time.Second
	DefaultWriteYieldTime               = 250 * time.Millisecond
	DefaultMaxOutputTokens              = 10000
	EarlyExitGrace                      = 150 * time.Millisecond
	PostExitCloseWaitCap                = 50 * time.Millisecond
	PostWriteSettle                     = 100 * time.Millisecond
	TrailingOutputGrace                 = 100 * time.Millisecond
	OutputDeltaMaxBytes                 = 8192
	MaxOutputDeltasPerCall              = 10000
)

// ExecCommandParams is the JSON arguments of the exec_command tool (docs/client.md §4.1).
// Optional numbers are pointers so that an absent value takes its default.
type ExecCommandParams struct {
	Cmd                   string          `json:"cmd"`
	Workdir               string          `json:"workdir,omitempty"`
	Shell                 string          `json:"shell,omitempty"`
	Login                 *bool           `json:"login,omitempty"`
	TTY                   bool            `json:"tty,omitempty"`
	YieldTimeMs           *int64          `json:"yield_time_ms,omitempty"`
	MaxOutputTokens       *int64          `json:"max_output_tokens,omitempty"`
	SandboxPermissions    string          `json:"sandbox_permissions,omitempty"`
	Justification         string          `json:"justification,omitempty"`
	PrefixRule            []string        `json:"prefix_rule,omitempty"`
	AdditionalPermissions json.RawMessage `json:"additional_permissions,omitempty"`
}

// WriteStdinParams is the JSON arguments of the write_stdin tool (docs/client.md §4.2).
type WriteStdinParams struct {
	SessionID       int32  `json:"session_id"`
	Chars           string `json:"chars,omitempty"`
	YieldTimeMs     *int64 `json:"yield_time_ms,omitempty"`
	MaxOutputTokens *int64 `json:"max_output_tokens,omitempty"`
}

// ExecYield returns the yield window of exec_command: the default 10 s,
// clamped to [250 ms, 30 s].
func ExecYield(ms *int64) time.Duration {
	d := DefaultExecYieldTime
	if ms != nil {
		d = msDuration(*ms)
	}
	return min(max(d, MinYieldTime), MaxYieldTime)
}

// WriteYield returns the yield window of write_stdin. A non-empty write
// clamps to [250 ms, 30 s]; an empty poll clamps max(v, 250 ms) to
// [5 s, maxBackground], so the default 250 ms becomes 5 s. maxBackground
// below 5 s counts as 5 s.
func WriteYield(ms *int64, empty bool, maxBackground time.Duration) time.Duration {
	d := DefaultWriteYieldTime
	if ms != nil {
		d = msDuration(*ms)
	}
	d = max(d, MinYieldTime)
	if !empty {
		return min(d, MaxYieldTime)
	}
	maxBackground = max(maxBackground, MinEmptyYieldTime)
	return min(max(d, MinEmptyYieldTime), maxBackground)
}

func msDuration(ms int64) time.Duration {
	const limit = int64(time.Duration(1<<63-1) / time.Millisecond)
	return time.Duration(min(max(ms, 0), limit)) * time.Millisecond
}

// maxOutputTokens returns the token budget: the default 10 000 when absent,
// 0 for a negative value.
func maxOutputTokens(v *int64) int {
	if v == nil {
		return DefaultMaxOutputTokens
	}
	return int(min(max(*v, 0), 1<<31-1))
}

// ShellArgv builds the argv for cmd run by shell (docs/client.md §4.3): POSIX shells get
// [shell, "-lc"|"-c", cmd]; PowerShell gets [shell, "-NoProfile"?,
// "-Command", cmd] (-NoProfile unless login); cmd.exe gets [shell, "/c", cmd].
func ShellArgv(shell, cmd string, login bool) []string {
	base := strings.ToLower(filepath.Base(strings.ReplaceAll(shell, `\`, "/")))
	base = strings.TrimSuffix(base, ".exe")
	switch base {
	case "pwsh", "powershell":
		if login {
			return []string{shell, "-Command", cmd}
		}
		return []string{shell, "-NoProfile", "-Command", cmd}
	case "cmd":
		return []string{shell, "/c", cmd}
	}
	if login {
		return []string{shell, "-lc", cmd}
	}
	return []string{shell, "-c", cmd}
}

// ApplyForcedEnv sets the ten variables forced on every unified-exec child
// (docs/client.md §2), overriding inherited values and keeping every other variable.
func ApplyForcedEnv(env map[string]string) {
	env["NO_COLOR"] = "1"
	env["TERM"] = "dumb"
	env["LANG"] = "C.UTF-8"
	env["LC_CTYPE"] = "C.UTF-8"
	env["LC_ALL"] = "C.UTF-8"
	env["COLORTERM"] = ""
	env["PAGER"] = "cat"
	env["GIT_PAGER"] = "cat"
	env["GH_PAGER"] = "cat"
	env["CODEX_CI"] = "1"
}

// WireEnv splits the desired child environment into what process/start
// sends (docs/client.md §5.1): env holds only the variables that are missing from the
// server-side base or differ from it, and the policy inherits everything
// else, excluding (with glob characters escaped) the base variables that the
// child must not see.
func WireEnv(serverBase, desired map[string]string) (map[string]string, *wire.EnvPolicy) {
	env := map[string]string{}
	for k, v := range desired {
		if bv, ok := serverBase[k]; !ok || bv != v {
			env[k] = v
		}
	}
	exclude := []string{}
	for k := range serverBase {
		if _, ok := desired[k]; !ok {
			exclude = append(exclude, escapeGlob(k))
		}
	}
	slices.Sort(exclude)
	return env, &wire.EnvPolicy{
		Inherit:               "all",
		IgnoreDefaultExcludes: true,
		Exclude:               exclude,
		Set:                   map[string]string{},
		IncludeOnly:           []string{},
	}
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
