package zapslog_test

import (
	"errors"
	"log/slog"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/codexec/codex/internal/zapslog"
)

// TestRecordsReachZap: levels, attributes, With and groups arrive as zap
// entries and fields; what zap's level drops is not enabled.
func TestRecordsReachZap(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	l := zapslog.New(zap.New(core)).With("peer", "1.2.3.4:5")
	if l.Enabled(t.Context(), slog.LevelDebug) {
		t.Error("debug enabled on an info core")
	}
	l.Debug("dropped")
	l.Error("handler panic", "method", "m", slog.Any("error", errors.New("boom")), slog.Group("g", "k", 1))
	l.WithGroup("w").Warn("warned", "x", true)
	all := logs.AllUntimed()
	if len(all) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(all), all)
	}
	e := all[0]
	ctx := e.ContextMap()
	if e.Level != zapcore.ErrorLevel || e.Message != "handler panic" || ctx["peer"] != "1.2.3.4:5" || ctx["method"] != "m" || ctx["error"] != "boom" || ctx["g.k"] != int64(1) {
		t.Errorf("entry %v %q %v", e.Level, e.Message, ctx)
	}
	if w := all[1]; w.Level != zapcore.WarnLevel || w.ContextMap()["w.x"] != true {
		t.Errorf("entry %v %v", w.Level, w.ContextMap())
	}
}

func TestNilLogger(t *testing.T) {
	zapslog.New(nil).Error("nothing")
}
