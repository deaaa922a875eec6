package e2e

import (
	"os"
	"testing"

	"github.com/codexec/codex/internal/testbin"
)

// Parallel tests: a top-level test marked t.Parallel() runs beside the
// other marked ones, after every unmarked test has finished (so never
// beside an unmarked one). Mark a test only when everything it looks at is
// its own: its servers, temporary folders, ports chosen by the kernel and
// its own processes (by PID or a marker of its own). Tests that look at
// host-wide state stay unmarked: scans of /proc for stray processes or
// leftovers, placeholders (.git, .agents, .codex in /tmp or elsewhere)
// and `codex sandbox` runs whose writable roots hold them, cgroups and
// the state directory, mounts, kernel keyrings, fixed ports; and so do
// the racing attack tests (swaps against opens), whose strength is the
// number of rounds they get through in their time.

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
