package e2e

import (
	"os"
	"testing"

	"github.com/codexec/codex/internal/testbin"
)

// binary is the codex binary built once for the whole package (with -race).
var binary string

// raceEnv goes into the environment of every binary a test starts: the
// race-detector build otherwise sleeps one second at each process exit.
const raceEnv = "GORACE=atexit_sleep_ms=0"

func TestMain(m *testing.M) {
	if os.Getenv(bedEnv) != "" {
		os.Exit(bedMain()) // the network test bed (netbed_test.go)
	}
	testbin.Main(m, &binary, "..", "-race")
}
