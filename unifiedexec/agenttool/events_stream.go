package agenttool

import "unicode/utf8"

// deltaStreamer turns a process's output into ExecCommandOutputDelta events
// and records every emitted byte in the call's transcript (docs/client.md §8.2). It is
// owned by one goroutine (the process pump); transcript reads happen after
// the pump signalled "drained".
type deltaStreamer struct {
	callID     string
	sink       EventSink
	maxBytes   int
	maxDeltas  int
	emitted    int
	pending    []byte
	transcript *HeadTailBuffer
}

func newDeltaStreamer(callID string, sink EventSink) *deltaStreamer {
	return &deltaStreamer{
		callID:     callID,
		sink:       sink,
		maxBytes:   OutputDeltaMaxBytes,
		maxDeltas:  MaxOutputDeltasPerCall,
		transcript: NewDefaultHeadTailBuffer(),
	}
}

// add queues output bytes.
func (s *deltaStreamer) add(b []byte) { s.pending = append(s.pending, b...) }

// pump cuts the pending bytes into deltas. With final set, a trailing
// incomplete character is emitted too; otherwise it waits for more bytes.
// When emit is false the bytes only go to the transcript.
func (s *deltaStreamer) pump(emit, final bool) {
	for len(s.pending) > 0 {
		prefix := splitValidUTF8Prefix(&s.pending, s.maxBytes, final)
		if prefix == nil {
			break
		}
		s.transcript.Push(prefix)
		if !emit || s.sink == nil || s.emitted >= s.maxDeltas {
			continue
		}
		s.emitted++
		s.sink(&ExecCommandOutputDeltaEvent{CallID: s.callID, Stream: "stdout", Chunk: prefix})
	}
	if len(s.pending) == 0 {
		s.pending = nil // let the backing array go
	}
}

// splitValidUTF8Prefix removes and returns the longest valid UTF-8 prefix of
// *buf that is at most max bytes. If no valid prefix exists it returns one
// byte, so the stream always makes progress, except that a lone incomplete
// character at the very end of *buf is kept back (nil) unless final is set.
// The returned slice aliases *buf's old contents; *buf is resliced, never
// copied, so draining byte by byte stays linear.
func splitValidUTF8Prefix(buf *[]byte, max int, final bool) []byte {
	b := *buf
	if len(b) == 0 || max <= 0 {
		return nil
	}
	limit := min(len(b), max)
	n := validPrefixLen(b[:limit])
	if n == 0 {
		if !final && incompleteAtEnd(b) {
			return nil
		}
		n = 1
	}
	out := b[:n:n]
	*buf = b[n:]
	return out
}

// validPrefixLen returns the length of the longest valid UTF-8 prefix of b.
func validPrefixLen(b []byte) int {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, w := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && w <= 1 {
			break
		}
		i += w
	}
	return i
}

// incompleteAtEnd reports whether b is nothing but the start of one
// multi-byte character that more bytes could complete.
func incompleteAtEnd(b []byte) bool {
	return len(b) < utf8.UTFMax && b[0] >= 0xC2 && b[0] <= 0xF4 && maximalSubpart(b) == len(b)
}
