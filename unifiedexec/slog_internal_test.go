package unifiedexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"go.uber.org/zap"
)

// The zap logs of the rpc layer reach the caller's slog.Logger with their
// level, message and fields; the handler's level filters them.
func TestZapToSlog(t *testing.T) {
	var buf bytes.Buffer
	log := zapToSlog(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	log.Debug("hidden")
	log.With(zap.String("label", "ws")).Warn("lost", zap.Int("n", 3), zap.Error(errors.New("boom")))
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("one JSON record expected: %q", buf.String())
	}
	if rec["level"] != "WARN" || rec["msg"] != "lost" || rec["label"] != "ws" || rec["n"] != float64(3) || rec["error"] != "boom" {
		t.Fatalf("record %v", rec)
	}
	zapToSlog(nil).Error("nowhere") // a nil logger is a no-op
}
