// Package zapslog hands the server's zap logger to code that logs with
// log/slog (package rpc, which the client shares and which therefore does
// not depend on zap): records go to the zap core with their attributes as
// fields, so the server's logs keep one format and one destination.
package zapslog

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a slog.Logger writing to l; a nil l gives a logger that
// writes nothing.
func New(l *zap.Logger) *slog.Logger {
	if l == nil {
		l = zap.NewNop()
	}
	return slog.New(&handler{l: l})
}

// handler is a slog.Handler over a zap logger. Groups prefix the keys of
// the attributes inside them ("group.key").
type handler struct {
	l      *zap.Logger
	prefix string
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l < slog.LevelInfo:
		return zapcore.DebugLevel
	case l < slog.LevelWarn:
		return zapcore.InfoLevel
	case l < slog.LevelError:
		return zapcore.WarnLevel
	default:
		return zapcore.ErrorLevel
	}
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool {
	return h.l.Core().Enabled(zapLevel(l))
}

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	ce := h.l.Check(zapLevel(r.Level), r.Message)
	if ce == nil {
		return nil
	}
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = h.appendAttr(fields, h.prefix, a)
		return true
	})
	if !r.Time.IsZero() {
		ce.Time = r.Time
	}
	ce.Write(fields...)
	return nil
}

func (h *handler) appendAttr(fields []zap.Field, prefix string, a slog.Attr) []zap.Field {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			fields = h.appendAttr(fields, p, g)
		}
		return fields
	}
	if a.Key == "" {
		return fields
	}
	return append(fields, zap.Any(prefix+a.Key, v.Any()))
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var fields []zap.Field
	for _, a := range attrs {
		fields = h.appendAttr(fields, h.prefix, a)
	}
	return &handler{l: h.l.With(fields...), prefix: h.prefix}
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{l: h.l, prefix: h.prefix + name + "."}
}
