package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/codexec/codex/internal/testbin"
)

// binary is the codex binary built once for the whole package (with -race).
var binary string

// raceEnv goes into the environment of every binary a test starts: the
// race-detector build otherwise sleeps one second at each process exit.
const raceEnv = "GORACE=atexit_sleep_ms=0"

// shardEnv picks one half of the package's tests: "methods" runs those of
// methodTests, "rest" the others; unset or empty, every test runs. `make
// test` runs the two halves as two test processes side by side: most of
// these tests wait on processes, timers and sockets rather than compute,
// so the halves overlap on two cores. A -run or -skip given on the
// command line replaces the half's.
const shardEnv = "CODEX_E2E_SHARD"

// methodTests is the "methods" half: the tests of the protocol's methods
// (command/exec, fs/*, http/request, the globs of their sandboxes) and of
// the MCP shell tool, about half of the package's time.
const methodTests = `^Test(CommandExec|FS|File|HTTP|Glob|Watch|MCP)`

func TestMain(m *testing.M) {
	if os.Getenv(bedEnv) != "" {
		os.Exit(bedMain()) // the network test bed (netbed_test.go)
	}
	switch shard := os.Getenv(shardEnv); shard {
	case "":
	case "methods":
		_ = flag.Set("test.run", methodTests)
	case "rest":
		_ = flag.Set("test.skip", methodTests)
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want methods, rest or nothing\n", shardEnv, shard)
		os.Exit(2)
	}
	testbin.Main(m, &binary, "..", "-race")
}
