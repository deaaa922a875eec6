package wire_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/codexec/codex/wire"
)

// envelope is a notification as encoding/json writes it.
type envelope[P any] struct {
	Method string `json:"method"`
	Params P      `json:"params"`
}

// notificationFixture encodes one notification three ways: by hand (our
// fast encoder), through encoding/json (want), and back (decode).
type notificationFixture struct {
	hand   func(b []byte) []byte
	value  any // *envelope[...] written and expected by decoding
	decode func(b []byte) (any, error)
}

func decodeInto[P any](b []byte) (any, error) {
	v := new(envelope[P])
	return v, json.Unmarshal(b, v)
}

const escapedID = "id \"<&>\u2028é"

var notificationFixtures = map[string]*notificationFixture{
	"output_notification.json": {
		hand: func(b []byte) []byte {
			return wire.AppendOutputNotification(b, wire.QuoteID("p1"), 1, wire.StreamStdout, []byte("out\n"), nil)
		},
		value:  &envelope[wire.OutputParams]{wire.MethodProcessOutput, wire.OutputParams{ProcessID: "p1", Seq: 1, Stream: "stdout", Chunk: wire.Bytes("out\n")}},
		decode: decodeInto[wire.OutputParams],
	},
	"output_notification_escaped.json": {
		hand: func(b []byte) []byte {
			return wire.AppendOutputNotification(b, wire.QuoteID(escapedID), 1<<64-1, wire.StreamPTY, nil, wire.AppendBase64)
		},
		value:  &envelope[wire.OutputParams]{wire.MethodProcessOutput, wire.OutputParams{ProcessID: escapedID, Seq: 1<<64 - 1, Stream: "pty", Chunk: wire.Bytes{}}},
		decode: decodeInto[wire.OutputParams],
	},
	"exited_notification.json": {
		hand:   func(b []byte) []byte { return wire.AppendExitedNotification(b, wire.QuoteID("p1"), 3, 3, false) },
		value:  &envelope[wire.ExitedParams]{wire.MethodProcessExited, wire.ExitedParams{ProcessID: "p1", Seq: 3, ExitCode: 3}},
		decode: decodeInto[wire.ExitedParams],
	},
	"exited_notification_denied.json": {
		hand:   func(b []byte) []byte { return wire.AppendExitedNotification(b, wire.QuoteID("p2"), 2, -1, true) },
		value:  &envelope[wire.ExitedParams]{wire.MethodProcessExited, wire.ExitedParams{ProcessID: "p2", Seq: 2, ExitCode: -1, SandboxDenied: true}},
		decode: decodeInto[wire.ExitedParams],
	},
	"closed_notification.json": {
		hand:   func(b []byte) []byte { return wire.AppendClosedNotification(b, wire.QuoteID("p1"), 4) },
		value:  &envelope[wire.ClosedParams]{wire.MethodProcessClosed, wire.ClosedParams{ProcessID: "p1", Seq: 4}},
		decode: decodeInto[wire.ClosedParams],
	},
}

// TestNotificationGolden holds the hand-written encoders and encoding/json
// to the same fixture bytes, and decodes the fixtures back.
func TestNotificationGolden(t *testing.T) {
	for name, f := range notificationFixtures {
		want := golden(t, name)
		prefix := []byte("keep")
		if got := f.hand(append([]byte(nil), prefix...)); !bytes.Equal(got, append(prefix, want...)) {
			t.Errorf("%s: hand encoder\n got %s\nwant keep%s", name, got, want)
		}
		std, err := json.Marshal(f.value)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(std, want) {
			t.Errorf("%s: encoding/json\n got %s\nwant %s", name, std, want)
		}
		got, err := f.decode(want)
		if err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if !reflect.DeepEqual(got, f.value) {
			t.Errorf("%s: decode\n got %+v\nwant %+v", name, got, f.value)
		}
	}
}

// TestOutputNotificationMatchesEncodingJSON compares the hand encoder with
// encoding/json over payload sizes around the base64 block boundaries and a
// custom Base64Appender.
func TestOutputNotificationMatchesEncodingJSON(t *testing.T) {
	data := make([]byte, 70)
	for i := range data {
		data[i] = byte(i * 37)
	}
	custom := func(dst, src []byte) []byte { return wire.AppendBase64(dst, src) }
	for n := 0; n <= len(data); n++ {
		want, _ := json.Marshal(envelope[wire.OutputParams]{wire.MethodProcessOutput, wire.OutputParams{ProcessID: "x", Seq: uint64(n), Stream: wire.StreamStderr, Chunk: data[:n]}})
		b := make([]byte, 0, wire.OutputFrameSize(n))
		got := wire.AppendOutputNotification(b, wire.QuoteID("x"), uint64(n), wire.StreamStderr, data[:n], custom)
		if !bytes.Equal(got, want) {
			t.Fatalf("n=%d:\n got %s\nwant %s", n, got, want)
		}
		if cap(got) != cap(b) {
			t.Fatalf("n=%d: OutputFrameSize(%d)=%d too small, buffer grew to %d", n, n, cap(b), cap(got))
		}
	}
}
