package e2e

import (
	"testing"

	"github.com/codexec/codex/internal/testbin"
)

// binary is the codex binary built once for the whole package (with -race).
var binary string

func TestMain(m *testing.M) { testbin.Main(m, &binary, "..", "-race") }
