package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/codexec/codex/execserver"
	"github.com/codexec/codex/fshelper"
	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func execServerCommand() *cli.Command {
	return &cli.Command{
		Name:  "exec-server",
		Usage: "serve the exec-server JSON-RPC protocol over WebSocket or stdio",
		Description: `Runs processes (pipes or a PTY) and filesystem calls for a client such as the
Codex CLI. With a ws:// URL it prints the bound URL as the only line on stdout
(use port 0 for an ephemeral port); logs go to stderr. Point the Codex CLI at it
with CODEX_EXEC_SERVER_URL=ws://127.0.0.1:PORT.

A dropped connection detaches its session; the client may resume it with
initialize {resumeSessionId} within --session-ttl. SIGINT/SIGTERM kill every
child process tree and exit 0.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "ws://127.0.0.1:0", Usage: "`URL` to serve: ws://IP:PORT, or stdio (also stdio://)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log `LEVEL`: debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "console", Usage: "log `FORMAT`: console or json (stderr)"},
			&cli.DurationFlag{Name: "session-ttl", Value: 80 * time.Second, Usage: "how long a detached session's processes survive; 0 kills them when the connection drops"},
			&cli.DurationFlag{Name: "exited-retention", Value: 80 * time.Second, Usage: "how long a finished process stays readable"},
			&cli.IntFlag{Name: "retained-output-bytes", Value: execserver.DefaultRetainedBytes, Usage: "output `BYTES` retained per process for process/read (newest kept)"},
			&cli.IntFlag{Name: "max-processes", Value: 1024, Usage: "live processes allowed per session"},
			&cli.Int64Flag{Name: "max-message-bytes", Value: 64 << 20, Usage: "largest inbound message; a larger one ends the connection"},
			&cli.Int64Flag{Name: "max-parked-stdin-bytes", Value: execserver.DefaultParkedStdinBytes, Usage: "`BYTES` of a connection's process/write calls that may wait for a full stdin queue; beyond, a write is refused"},
			&cli.IntFlag{Name: "concurrent-requests", Value: 0, Usage: "0: in order, with long polls parked and control requests answered at once; 1: strictly serial; N: up to N at once"},
			&cli.Int64Flag{Name: "max-pids-per-process", Value: 4096, Usage: "tasks (processes and threads) one command and its descendants may have at once, through its cgroup's pids.max; stops fork bombs; 0: no limit"},
			&cli.StringFlag{Name: "max-memory-per-process", Value: "50%", Usage: "memory.max of each command's cgroup: `SIZE` in bytes, with a K, M or G suffix, or a percentage of physical memory; 0: no limit"},
			&cli.StringFlag{Name: "ws-auth", Usage: "WebSocket authentication `MODE`: capability-token (needs --ws-token-file or --ws-token-sha256)"},
			&cli.StringFlag{Name: "ws-token-file", Usage: "`FILE` holding the bearer token (surrounding whitespace trimmed)"},
			&cli.StringFlag{Name: "ws-token-sha256", Usage: "SHA-256 `HEX` of the bearer token"},
			pprofFlag,
			initFlag,
		},
		Subcommands: []*cli.Command{generateSchemaCommand()},
		Action:      runExecServer,
	}
}

// listenTarget is a parsed --listen value.
type listenTarget struct {
	stdio bool
	addr  netip.AddrPort
}

// parseListen validates --listen with the reference's error texts.
func parseListen(s string) (listenTarget, error) {
	if s == "stdio" || s == "stdio://" {
		return listenTarget{stdio: true}, nil
	}
	if !strings.HasPrefix(s, "ws://") {
		return listenTarget{}, fmt.Errorf("unsupported --listen URL `%s`; expected `ws://IP:PORT` or `stdio`", s)
	}
	bad := fmt.Errorf("invalid websocket --listen URL `%s`; expected `ws://IP:PORT`", s)
	u, err := url.Parse(s)
	if err != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return listenTarget{}, bad
	}
	ap, err := netip.ParseAddrPort(u.Host)
	if err != nil {
		return listenTarget{}, bad
	}
	return listenTarget{addr: ap}, nil
}

func newLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("invalid --log-level %q", level)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		return nil, fmt.Errorf("invalid --log-format %q", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), lvl)), nil
}

func tokenHash(c *cli.Context) ([]byte, error) {
	mode := c.String("ws-auth")
	file, hexSum := c.String("ws-token-file"), c.String("ws-token-sha256")
	switch mode {
	case "":
		if file != "" || hexSum != "" {
			return nil, fmt.Errorf("--ws-token-file and --ws-token-sha256 need --ws-auth capability-token")
		}
		return nil, nil
	case "capability-token":
	default:
		return nil, fmt.Errorf("unsupported --ws-auth mode %q; expected capability-token", mode)
	}
	switch {
	case file != "" && hexSum != "":
		return nil, fmt.Errorf("give either --ws-token-file or --ws-token-sha256, not both")
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading --ws-token-file: %w", err)
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return nil, fmt.Errorf("--ws-token-file %s is empty", file)
		}
		sum := sha256.Sum256([]byte(tok))
		return sum[:], nil
	case hexSum != "":
		sum, err := hex.DecodeString(hexSum)
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("--ws-token-sha256 must be 64 hex digits")
		}
		return sum, nil
	}
	return nil, fmt.Errorf("--ws-auth capability-token needs --ws-token-file or --ws-token-sha256")
}

// processLimits reads --max-pids-per-process and --max-memory-per-process.
// The memory default, half of physical memory, lets one large build run
// while a runaway command cannot push the host into its own OOM killer:
// the leaf's memory.max reclaims and then kills inside that command only.
func processLimits(c *cli.Context) (proc.Limits, error) {
	pids := c.Int64("max-pids-per-process")
	if pids < 0 {
		return proc.Limits{}, fmt.Errorf("--max-pids-per-process must not be negative")
	}
	mem, err := parseMemory(c.String("max-memory-per-process"), proc.PhysicalMemory)
	if err != nil {
		return proc.Limits{}, fmt.Errorf("invalid --max-memory-per-process: %w", err)
	}
	return proc.Limits{MaxPids: pids, MaxMemory: mem}, nil
}

// parseMemory parses "N", "N[KMG]" (binary units) or "P%" of physical
// memory (from total). 0 means no limit.
func parseMemory(s string, total func() (int64, error)) (int64, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		pct, err := strconv.ParseFloat(p, 64)
		if err != nil || pct < 0 || pct > 100 {
			return 0, fmt.Errorf("%q: want a percentage from 0 to 100", s)
		}
		if pct == 0 {
			return 0, nil
		}
		t, err := total()
		if err != nil {
			return 0, fmt.Errorf("physical memory: %w", err)
		}
		return int64(float64(t) * pct / 100), nil
	}
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want bytes, with an optional K, M or G suffix, or a percentage", s)
	}
	return n * mult, nil
}

func runExecServer(c *cli.Context) error {
	target, err := parseListen(c.String("listen"))
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	logger, err := newLogger(c.String("log-level"), c.String("log-format"))
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	defer func() { _ = logger.Sync() }()
	tokenSum, err := tokenHash(c)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	if f := c.String("ws-token-file"); f != "" {
		sandbox.MaskSecrets(f) // no sandboxed command may read the token
	}
	maxMsg := c.Int64("max-message-bytes")
	if maxMsg <= 0 {
		return cli.Exit("--max-message-bytes must be positive", 2)
	}
	limits, err := processLimits(c)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	ttl := c.Duration("session-ttl")
	if ttl == 0 {
		ttl = -1 // the registry reads 0 as "default"; negative means none
	}
	cfg := execserver.Config{
		Stdio: target.stdio,
		Addr:  target.addr,
		Sessions: execserver.SessionConfig{
			SessionTTL:      ttl,
			ExitedRetention: c.Duration("exited-retention"),
			RetainedBytes:   c.Int("retained-output-bytes"),
			StdinParkBytes:  c.Int64("max-parked-stdin-bytes"),
			MaxProcesses:    c.Int("max-processes"),
			BaseEnv:         os.Environ(),
			Limits:          limits,
		},
		Extra:       fshelper.Handlers(),
		Concurrency: c.Int("concurrent-requests"),
		MaxMessage:  maxMsg,
		TokenSHA256: tokenSum,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		URLOut:      os.Stdout,
	}
	stopReaper, err := startReaper(c, logger)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	defer stopReaper()
	stopPprof, err := startPprof(c.Context, c.String(pprofFlag.Name), logger)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	defer stopPprof()
	return execserver.Run(c.Context, cfg, logger)
}
