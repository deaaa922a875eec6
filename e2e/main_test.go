package e2e

import (
	"testing"

	"github.com/codexec/codex/internal/testbin"
)

// binary is the codex binary built once for the whole package (with -race).
var binary string

// raceEnv goes into the environment of every binary a test starts: the
// race-detector build otherwise sleeps one second at each process exit.
const raceEnv = "GORACE=atexit_sleep_ms=0"

func TestMain(m *testing.M) { testbin.Main(m, &binary, "..", "-race") }
