package unifiedexec

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/codexec/codex/wire"
	fastb64 "github.com/segmentio/asm/base64"
)

// Process notifications are the client's hot path: one per output read of
// the server, most of their bytes a base64 chunk. predecode reads the shape
// the server writes (docs/protocol.md §6.10; the hand-built encoder of the
// server) in one pass over the frame and decodes the chunk straight into
// the event's buffer. Anything it is not sure about (escapes, unknown or
// repeated members, numbers in another form, odd base64) it declines, and
// the message takes the generic encoding/json path (decodeParams), which
// stays the reference: the fast path only ever gives the same result
// sooner (FuzzPredecode).

// procNote is one process notification decoded into its event.
type procNote struct {
	processID string
	ev        Event
}

// predecode is the client's rpc.Options.Predecode: it returns the method
// and a procNote for a process notification of the expected shape, or
// ("", nil) to leave the frame to the generic decoding.
func predecode(data []byte) (string, any) {
	method, n, ok := scanFrame(data)
	if !ok {
		return "", nil
	}
	return method, n
}

// decodeParams is the generic decoding of the params of a process
// notification. ok is false for a method that is not one; err reports
// params that do not decode.
func decodeParams(method string, params json.RawMessage) (procNote, bool, error) {
	var n procNote
	var err error
	switch method {
	case wire.MethodProcessOutput:
		var p wire.OutputParams
		err = json.Unmarshal(params, &p)
		n = procNote{p.ProcessID, Event{Kind: EventOutput, Seq: p.Seq, Stream: p.Stream, Data: p.Chunk}}
	case wire.MethodProcessExited:
		var p wire.ExitedParams
		err = json.Unmarshal(params, &p)
		n = procNote{p.ProcessID, Event{Kind: EventExited, Seq: p.Seq, ExitCode: p.ExitCode, SandboxDenied: p.SandboxDenied}}
	case wire.MethodProcessClosed:
		var p wire.ClosedParams
		err = json.Unmarshal(params, &p)
		n = procNote{p.ProcessID, Event{Kind: EventClosed, Seq: p.Seq}}
	default:
		return procNote{}, false, nil
	}
	if err != nil {
		return procNote{}, false, err
	}
	return n, true, nil
}

// The members of the params object the scanner knows, as bits.
const (
	mProcessID = 1 << iota
	mSeq
	mStream
	mChunk
	mExitCode
	mSandboxDenied
)

// wantMembers is the exact member set of each notification's params.
var wantMembers = map[string]int{
	wire.MethodProcessOutput: mProcessID | mSeq | mStream | mChunk,
	wire.MethodProcessExited: mProcessID | mSeq | mExitCode | mSandboxDenied,
	wire.MethodProcessClosed: mProcessID | mSeq,
}

var kinds = map[string]EventKind{
	wire.MethodProcessOutput: EventOutput,
	wire.MethodProcessExited: EventExited,
	wire.MethodProcessClosed: EventClosed,
}

// scanFrame reads a whole notification frame: an object with "method",
// "params" and optionally "jsonrpc" (a plain string), in any order, and
// nothing else.
func scanFrame(data []byte) (method string, n procNote, ok bool) {
	s := scanner{b: data}
	var seen, members int
	for key, more := s.open(); more; key, more = s.next() {
		var bit int
		switch key {
		case "method":
			bit = 1
			method, ok = s.str()
		case "params":
			bit = 2
			members, ok = s.params(&n)
		case "jsonrpc":
			bit = 4
			_, ok = s.str()
		}
		if bit == 0 || !ok || seen&bit != 0 {
			return "", procNote{}, false
		}
		seen |= bit
	}
	s.ws()
	want, known := wantMembers[method]
	if s.bad || s.i != len(s.b) || seen&3 != 3 || !known || members != want {
		return "", procNote{}, false
	}
	n.ev.Kind = kinds[method]
	return method, n, true
}

// params reads the params object into n and returns the set of members
// seen; a repeated or unknown member fails.
func (s *scanner) params(n *procNote) (int, bool) {
	seen := 0
	for key, more := s.open(); more; key, more = s.next() {
		bit, ok := 0, false
		switch key {
		case "processId":
			bit = mProcessID
			n.processID, ok = s.str()
		case "seq":
			bit = mSeq
			n.ev.Seq, ok = s.uint()
		case "stream":
			bit = mStream
			n.ev.Stream, ok = s.str()
		case "chunk":
			bit = mChunk
			n.ev.Data, ok = s.base64()
		case "exitCode":
			bit = mExitCode
			n.ev.ExitCode, ok = s.int()
		case "sandboxDenied":
			bit = mSandboxDenied
			n.ev.SandboxDenied, ok = s.bool()
		}
		if bit == 0 || !ok || seen&bit != 0 {
			return 0, false
		}
		seen |= bit
	}
	return seen, !s.bad
}

// scanner is a cursor over one frame. bad is set by the first thing it
// does not accept; every later step then fails too.
type scanner struct {
	b   []byte
	i   int
	bad bool
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat consumes c after whitespace.
func (s *scanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// open consumes "{" and the first key with its colon. more is false for
// an empty object or a failure (then bad is set).
func (s *scanner) open() (key string, more bool) {
	if !s.eat('{') {
		s.bad = true
		return "", false
	}
	if s.eat('}') {
		return "", false
	}
	return s.key()
}

// next consumes "," and the next key, or the closing "}".
func (s *scanner) next() (key string, more bool) {
	if s.bad {
		return "", false
	}
	if s.eat('}') {
		return "", false
	}
	if !s.eat(',') {
		s.bad = true
		return "", false
	}
	return s.key()
}

func (s *scanner) key() (string, bool) {
	s.ws()
	k, ok := s.str()
	if !ok || !s.eat(':') {
		s.bad = true
		return "", false
	}
	s.ws()
	return k, true
}

// raw returns the contents of a string at the cursor, which must hold no
// escape and no control character (checked by the caller).
func (s *scanner) raw() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	end := bytes.IndexByte(s.b[s.i+1:], '"')
	if end < 0 {
		return nil, false
	}
	v := s.b[s.i+1 : s.i+1+end]
	s.i += end + 2
	return v, true
}

// str reads a string without escapes or control characters, in valid
// UTF-8 (encoding/json would rewrite invalid bytes).
func (s *scanner) str() (string, bool) {
	v, ok := s.raw()
	if !ok || !utf8.Valid(v) {
		return "", false
	}
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return "", false
		}
	}
	return string(v), true
}

// base64 decodes a string of padded standard base64 into a buffer from
// getChunk. The decoder rejects every byte outside the alphabet except CR
// and LF, which encoding/base64 skips but JSON forbids raw in a string:
// rather than look for them in another pass over the text, base64 checks
// that nothing was skipped, since then the text is whole quanta of four
// and the output three bytes per quantum less the padding.
func (s *scanner) base64() ([]byte, bool) {
	v, ok := s.raw()
	if !ok || len(v)%4 != 0 {
		return nil, false
	}
	out := getChunk(fastb64.StdEncoding.DecodedLen(len(v)))
	n, err := fastb64.StdEncoding.Decode(out, v)
	pad := 0
	for i := len(v) - 1; i >= 0 && i >= len(v)-2 && v[i] == '='; i-- {
		pad++
	}
	if err != nil || n != len(v)/4*3-pad {
		putChunk(out)
		return nil, false
	}
	return out[:n], true
}

// digits returns the integer literal at the cursor: an optional minus
// sign (when signed) and digits without a leading zero, not followed by a
// fraction or an exponent.
func (s *scanner) digits(signed bool) []byte {
	start := s.i
	if signed && s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	d := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == d || (s.b[d] == '0' && s.i-d > 1) {
		return nil
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return nil
	}
	return s.b[start:s.i]
}

func (s *scanner) uint() (uint64, bool) {
	d := s.digits(false)
	if d == nil {
		return 0, false
	}
	v, err := strconv.ParseUint(string(d), 10, 64)
	return v, err == nil
}

func (s *scanner) int() (int, bool) {
	d := s.digits(true)
	if d == nil {
		return 0, false
	}
	v, err := strconv.ParseInt(string(d), 10, strconv.IntSize)
	return int(v), err == nil
}

func (s *scanner) bool() (bool, bool) {
	for _, lit := range []string{"true", "false"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return lit == "true", true
		}
	}
	return false, false
}
