package unifiedexec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/codexec/codex/rpc"
)

// genericDecode is the path a frame takes without the fast scanner: the
// rpc envelope, then encoding/json on the params.
func genericDecode(data []byte) (string, procNote, bool) {
	msg, err := rpc.DecodeMessage(data)
	if err != nil {
		return "", procNote{}, false
	}
	req, ok := msg.(*rpc.Request)
	if !ok || !req.IsNotification() {
		return "", procNote{}, false
	}
	n, ok, err := decodeParams(req.Method, req.Params)
	return req.Method, n, ok && err == nil
}

// fastDecode runs predecode and unpacks its answer.
func fastDecode(data []byte) (string, procNote, bool) {
	m, v := predecode(data)
	if v == nil {
		return "", procNote{}, false
	}
	return m, v.(procNote), true
}

// serverOutput is a process/output frame as the server's encoder writes it.
func serverOutput(id string, seq uint64, stream string, data []byte) []byte {
	return fmt.Appendf(nil, `{"method":"process/output","params":{"processId":%q,"seq":%d,"stream":%q,"chunk":%q}}`,
		id, seq, stream, base64.StdEncoding.EncodeToString(data))
}

func TestPredecodeServerShapes(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef\x00\xff"), 20000)
	cases := []struct {
		frame string
		want  procNote
	}{
		{string(serverOutput("1-a", 7, "stdout", big)), procNote{"1-a", Event{Seq: 7, Kind: EventOutput, Stream: "stdout", Data: big}}},
		{string(serverOutput("p", 1, "stderr", []byte("x"))), procNote{"p", Event{Seq: 1, Kind: EventOutput, Stream: "stderr", Data: []byte("x")}}},
		{string(serverOutput("p", 2, "pty", nil)), procNote{"p", Event{Seq: 2, Kind: EventOutput, Stream: "pty", Data: []byte{}}}},
		{`{"method":"process/exited","params":{"processId":"p","seq":3,"exitCode":-9,"sandboxDenied":true}}`,
			procNote{"p", Event{Seq: 3, Kind: EventExited, ExitCode: -9, SandboxDenied: true}}},
		{`{"method":"process/closed","params":{"processId":"p","seq":18446744073709551615}}`,
			procNote{"p", Event{Seq: 18446744073709551615, Kind: EventClosed}}},
	}
	for _, tc := range cases {
		_, got, ok := fastDecode([]byte(tc.frame))
		if !ok {
			t.Fatalf("fast path declined %.120s", tc.frame)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%.120s: got %+v, want %+v", tc.frame, got, tc.want)
		}
		if _, gen, _ := genericDecode([]byte(tc.frame)); !reflect.DeepEqual(gen, got) {
			t.Fatalf("%.120s: generic %+v, fast %+v", tc.frame, gen, got)
		}
	}
}

// TestPredecodeOddJSON: valid JSON the server does not write either takes
// the fast path to the same result or is declined; never a different
// answer.
func TestPredecodeOddJSON(t *testing.T) {
	want := procNote{"p", Event{Seq: 5, Kind: EventOutput, Stream: "stdout", Data: []byte("hi")}}
	fast := []string{
		// member order, whitespace, a jsonrpc member
		`{"params":{"chunk":"aGk=","stream":"stdout","seq":5,"processId":"p"},"method":"process/output"}`,
		" \t\r\n{ \"jsonrpc\" : \"2.0\" ,\n\"method\" :\t\"process/output\" , \"params\" : {\n \"processId\" : \"p\" , \"seq\" : 5 , \"stream\" : \"stdout\" , \"chunk\" : \"aGk=\" } } \n",
	}
	declined := []string{
		// escapes in a string, a key or the chunk
		`{"method":"process/output","params":{"processId":"\u0070","seq":5,"stream":"stdout","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"std\u006fut","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"process\u0049d":"p","seq":5,"stream":"stdout","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aG\u006b="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk\n="}}`,
		`{"method":"process\/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk="}}`,
		// case-insensitive member names, repeats, extras
		`{"method":"process/output","params":{"ProcessId":"p","seq":5,"stream":"stdout","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"processId":"q","processId":"p","seq":5,"stream":"stdout","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk=","extra":[1,{"a":null}]}}`,
		`{"method":"process/output","trace":{},"params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk="}}`,
		// numbers in another form
		`{"method":"process/output","params":{"processId":"p","seq":5.0,"stream":"stdout","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5e0,"stream":"stdout","chunk":"aGk="}}`,
	}
	for _, f := range fast {
		_, got, ok := fastDecode([]byte(f))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast %v %+v, want %+v", f, ok, got, want)
		}
	}
	for _, f := range declined {
		if _, got, ok := fastDecode([]byte(f)); ok {
			t.Fatalf("%q: fast path took it: %+v", f, got)
		}
		if strings.Contains(f, `\u00`) || strings.Contains(f, `\/`) {
			_, got, ok := genericDecode([]byte(f))
			if !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: generic %v %+v, want %+v", f, ok, got, want)
			}
		}
	}
}

// TestPredecodeInvalid: what encoding/json refuses, the fast path refuses.
func TestPredecodeInvalid(t *testing.T) {
	for _, f := range []string{
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk="}}x`,
		`{"method":"process/output","params":{"processId":"p","seq":05,"stream":"stdout","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":-5,"stream":"stdout","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":18446744073709551616,"stream":"stdout","chunk":"aGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk"}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk=",}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"a` + "\r" + `Gk="}}`,
		// CR and LF the decoder would skip, four of them so that the
		// text still looks like whole quanta
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGlp` + "\n\n\n\n" + `aGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aG` + "\r\n\r\n" + `lpaGk="}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGlpaGk=` + "\r\r\r\r" + `"}}`,
		`{"method":"process/exited","params":{"processId":"p","seq":5,"exitCode":1,"sandboxDenied":tru}}`,
		`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk="}`,
		`{"id":1,"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGk="}}`,
	} {
		if _, got, ok := fastDecode([]byte(f)); ok {
			t.Fatalf("%q: fast path took it: %+v", f, got)
		}
	}
}

// FuzzPredecode: whenever the fast path answers, encoding/json gives the
// same answer.
func FuzzPredecode(f *testing.F) {
	f.Add(serverOutput("1-x", 1, "stdout", []byte("hello\n")))
	f.Add(serverOutput("p", 9, "stderr", bytes.Repeat([]byte{0, 1, 2, 250}, 40)))
	f.Add([]byte(`{"method":"process/exited","params":{"processId":"p","seq":3,"exitCode":0,"sandboxDenied":false}}`))
	f.Add([]byte(`{"params":{"seq":3,"processId":"p"},"jsonrpc":"2.0","method":"process/closed"}`))
	f.Add([]byte(`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"AB=="}}`))
	f.Add([]byte(`{"method":"process/output","params":{"processId":"p","seq":5,"stream":"stdout","chunk":"aGlp` + "\r\n\r\n" + `aGk="}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, got, ok := fastDecode(data)
		if !ok {
			return
		}
		gm, gen, gok := genericDecode(data)
		if !gok || gm != m || !reflect.DeepEqual(got, gen) {
			t.Fatalf("%q: fast %q %+v; generic %v %q %+v", data, m, got, gok, gm, gen)
		}
	})
}

func benchDecode(b *testing.B, decode func([]byte) (string, procNote, bool)) {
	frame := serverOutput("1-0123", 42, "stdout", make([]byte, 256<<10))
	b.SetBytes(256 << 10)
	for b.Loop() {
		if _, _, ok := decode(frame); !ok {
			b.Fatal("not decoded")
		}
	}
}

func BenchmarkDecodeOutputFast(b *testing.B) { benchDecode(b, fastDecode) }

// BenchmarkDecodeOutputPooled is the fast path as a process whose output
// goes to a writer runs it: each chunk goes back to the pool once used.
func BenchmarkDecodeOutputPooled(b *testing.B) {
	benchDecode(b, func(frame []byte) (string, procNote, bool) {
		m, n, ok := fastDecode(frame)
		putChunk(n.ev.Data)
		return m, n, ok
	})
}

func BenchmarkDecodeOutputGeneric(b *testing.B) { benchDecode(b, genericDecode) }
