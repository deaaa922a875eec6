package rpc

import (
	"bytes"
	"io"
	"slices"
)

// Lent messages: a Conn with Options.Predecode asks the framers of this
// package to lend what Read returns (valid until the next Read) instead of
// giving each message fresh memory. A stream of large notifications then
// goes through one buffer that stays mapped and warm, instead of one new
// allocation per message that the garbage collector frees and the kernel
// maps again (page faults were a third of the client's CPU time at 500
// MiB/s). A message Predecode declines is safe too: DecodeMessage copies
// what it keeps (encoding/json copies a json.RawMessage).
type lender interface {
	// lend makes Read lend its messages from now on. It is called before
	// the first Read.
	lend()
}

// Sizing of a lineBuf: reads ask for at least minLineRead bytes, and the
// buffer holds about lineBufLines lines of the recent largest size, so that
// the tail of a line is moved to the front only every few lines.
const (
	minLineRead  = 64 << 10
	lineBufLines = 4
)

// lineBuf reads newline-terminated lines from r into one buffer it reuses:
// a line it returns is valid until the next call. Reads go straight into
// the buffer, as large as its free space. The zero value (with r set) is
// ready to use; it is owned by the reading goroutine.
type lineBuf struct {
	r          io.Reader
	buf        []byte
	start, end int   // buf[start:end] is read and not yet returned
	scanned    int   // buf[start:start+scanned] holds no '\n'
	hint       int   // the recent largest line, decaying
	err        error // the read error, reported once the buffer is empty
}

// line returns the next line with its "\n" (without one for a last line
// cut by EOF), or ErrTooLarge once more than limit bytes hold no newline.
func (b *lineBuf) line(limit int64) ([]byte, error) {
	for {
		if i := bytes.IndexByte(b.buf[b.start+b.scanned:b.end], '\n'); i >= 0 {
			return b.take(b.scanned + i + 1), nil
		}
		b.scanned = b.end - b.start
		if int64(b.scanned) > limit {
			return nil, ErrTooLarge
		}
		if b.err != nil {
			if b.scanned > 0 && b.err == io.EOF {
				return b.take(b.scanned), nil
			}
			return nil, b.err
		}
		b.fill()
	}
}

// take returns the next n unread bytes as a line.
func (b *lineBuf) take(n int) []byte {
	line := b.buf[b.start : b.start+n : b.start+n]
	b.start += n
	b.scanned = 0
	b.hint = max(n, b.hint-b.hint/8)
	return line
}

// fill reads once into the free space, first making room: the unread bytes
// move to the front (the line returned last is no longer lent), or to a
// new buffer when they fill more than half of this one or when the lines
// grew. An empty buffer much larger than the recent lines is dropped.
func (b *lineBuf) fill() {
	pending := b.end - b.start
	want := max(minLineRead, lineBufLines*b.hint)
	if pending == 0 {
		b.start, b.end, b.scanned = 0, 0, 0
		if len(b.buf) > 4*want {
			b.buf = nil
		}
	}
	if free := len(b.buf) - b.end; free < minLineRead || free < b.hint-pending {
		if pending > len(b.buf)/2 || len(b.buf) < want {
			nb := make([]byte, max(want, 2*pending+minLineRead))
			copy(nb, b.buf[b.start:b.end])
			b.buf = nb
		} else {
			copy(b.buf, b.buf[b.start:b.end])
		}
		b.start, b.end = 0, pending
	}
	n, err := b.r.Read(b.buf[b.end:])
	b.end += n
	if err != nil {
		b.err = err
	}
}

// readMessage reads r to its end into buf, reused from its start, and
// returns the message, or ErrTooLarge past limit bytes. The buffer grows
// as needed and is the one to pass next time.
func readMessage(r io.Reader, buf []byte, limit int64) ([]byte, error) {
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(bytes.MinRead, cap(buf)))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, ErrTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func (f *stdioFramer) lend() { f.lb = &lineBuf{r: f.r} }

func (f *wsFramer) lend() { f.lent = true }
