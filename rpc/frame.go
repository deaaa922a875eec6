package rpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// ErrTooLarge is returned by a Reader when an inbound message exceeds its
// size limit. The connection answers it with an id -1 error and then ends.
var ErrTooLarge = errors.New("message exceeds the size limit")

// Reader reads whole messages. It is used by one goroutine at a time.
type Reader interface {
	// Read returns the next message. io.EOF means the peer went away cleanly.
	Read(ctx context.Context) ([]byte, error)
}

// Writer writes whole messages. It is used by one goroutine at a time.
type Writer interface {
	Write(ctx context.Context, msg []byte) error
	// Close ends the transport. tooLarge asks for the WebSocket close code
	// 1009 (message too big) instead of a normal closure.
	Close(tooLarge bool) error
}

// Framer is a transport: a Reader, a Writer and a label naming it in logs
// and in the text Options.ParseError builds. The label is opaque to rpc.
type Framer interface {
	Reader
	Writer
	Label() string
}

// NewStdioFramer frames newline-delimited JSON over r and w (docs/protocol.md §1.4).
// Lines may end in "\n" or "\r\n"; blank lines are skipped; a line above
// maxSize bytes gives ErrTooLarge.
func NewStdioFramer(r io.Reader, w io.Writer, closer io.Closer, label string, maxSize int64) Framer {
	return &stdioFramer{r: bufio.NewReaderSize(r, 64<<10), w: bufio.NewWriterSize(w, 64<<10), closer: closer, label: label, max: maxSize}
}

type stdioFramer struct {
	r      *bufio.Reader // owned by the reading goroutine
	w      *bufio.Writer // owned by the writing goroutine
	closer io.Closer
	label  string
	max    int64
	hint   int      // length of the last line read, owned by the reader
	lb     *lineBuf // lent lines (see lender); nil: each line is copied
	once   sync.Once
}

func (f *stdioFramer) Label() string { return f.label }

func (f *stdioFramer) Read(ctx context.Context) ([]byte, error) {
	for {
		var line []byte
		var err error
		if f.lb != nil {
			line, err = f.lb.line(f.max + 2)
		} else {
			line, err = f.copyLine()
		}
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if int64(len(line)) > f.max {
			return nil, ErrTooLarge
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

// copyLine reads the next line into new memory, with its "\n" (without
// one for a last line cut by EOF).
func (f *stdioFramer) copyLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := f.r.ReadSlice('\n')
		if line == nil && err == bufio.ErrBufferFull {
			// A long line: size it like the last one, so that a stream
			// of big messages costs one copy each, not a chain of
			// growths.
			line = make([]byte, 0, max(f.hint, 2*len(frag)))
		}
		line = append(line, frag...)
		if int64(len(line)) > f.max+2 {
			return nil, ErrTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && !(err == io.EOF && len(bytes.TrimSpace(line)) > 0) {
			return nil, err
		}
		f.hint = len(line)
		return line, nil
	}
}

func (f *stdioFramer) Write(ctx context.Context, msg []byte) error {
	if _, err := f.w.Write(msg); err != nil {
		return err
	}
	if err := f.w.WriteByte('\n'); err != nil {
		return err
	}
	return f.w.Flush()
}

// WriteBatch writes msgs, one line each, and flushes once.
func (f *stdioFramer) WriteBatch(ctx context.Context, msgs [][]byte) error {
	for _, m := range msgs {
		if _, err := f.w.Write(m); err != nil {
			return err
		}
		if err := f.w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return f.w.Flush()
}

func (f *stdioFramer) Close(bool) error {
	var err error
	f.once.Do(func() {
		if f.closer != nil {
			err = f.closer.Close()
		}
	})
	return err
}

// NewWebSocketFramer frames one JSON message per WebSocket message over c
// (docs/protocol.md §1.2). Text and binary frames are both read as JSON; the
// server always writes text frames. The library's own read limit is disabled
// so that an oversize message can be answered before the close.
func NewWebSocketFramer(c *websocket.Conn, label string, maxSize int64) Framer {
	c.SetReadLimit(-1)
	return &wsFramer{c: c, label: label, max: maxSize}
}

// NewHijackedWebSocketFramer is NewWebSocketFramer for a server
// connection: raw is the hijacked connection under c, whose deadline a
// shutdown sets so that a peer which does not read cannot hold up the close
// (Conn.CloseGoingAway). When raw is a *CorkConn (the connection c writes
// to), a batch of messages (Conn.SendBatch) leaves in one write.
func NewHijackedWebSocketFramer(c *websocket.Conn, raw net.Conn, label string, maxSize int64) Framer {
	f := NewWebSocketFramer(c, label, maxSize).(*wsFramer)
	f.raw = raw
	f.cork, _ = raw.(*CorkConn)
	return f
}

type wsFramer struct {
	c     *websocket.Conn
	raw   net.Conn  // the hijacked connection under c, or nil (see bound)
	cork  *CorkConn // raw if c writes through a CorkConn, else nil
	label string
	max   int64
	away  atomic.Bool // the peer closed with 1001 (going away)
	hint  int         // the last message's length (lent: the recent largest), owned by the reader
	lent  bool        // messages are read into buf and lent (see lender)
	buf   []byte      // the buffer of lent messages
}

func (f *wsFramer) Label() string { return f.label }

func (f *wsFramer) Read(ctx context.Context) ([]byte, error) {
	_, r, err := f.c.Reader(ctx)
	if err != nil {
		if st := websocket.CloseStatus(err); st != -1 {
			f.away.Store(st == websocket.StatusGoingAway)
			return nil, io.EOF
		}
		return nil, err
	}
	// Sized like the recent messages, so that a stream of big messages
	// costs no chain of growths; a lent buffer much larger than them is
	// dropped.
	buf := f.buf
	if !f.lent || cap(buf) > 4*max(f.hint, minLineRead) {
		buf = nil
	}
	if buf == nil {
		buf = make([]byte, 0, f.hint+bytes.MinRead)
	}
	msg, err := readMessage(r, buf, f.max)
	n := min(len(msg), int(f.max))
	if f.lent {
		f.buf, f.hint = msg, max(n, f.hint-f.hint/8)
	} else {
		f.hint = n
	}
	if err != nil {
		return nil, err
	}
	return msg, nil
}

func (f *wsFramer) Write(ctx context.Context, msg []byte) error {
	return f.c.Write(ctx, websocket.MessageText, msg)
}

// WriteBatch writes msgs as one WebSocket message each; under a CorkConn
// they leave in one write.
func (f *wsFramer) WriteBatch(ctx context.Context, msgs [][]byte) error {
	if f.cork == nil {
		for _, m := range msgs {
			if err := f.Write(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}
	f.cork.Cork()
	var err error
	for _, m := range msgs {
		if err = f.Write(ctx, m); err != nil {
			break
		}
	}
	if uerr := f.cork.Uncork(); err == nil {
		err = uerr
	}
	return err
}

func (f *wsFramer) Close(tooLarge bool) error {
	if tooLarge {
		return f.c.Close(websocket.StatusMessageTooBig, fmt.Sprintf("message exceeds %d bytes", f.max))
	}
	return f.c.Close(websocket.StatusNormalClosure, "")
}

// closeGoingAway closes with 1001: the server is shutting down.
func (f *wsFramer) closeGoingAway() error {
	return f.c.Close(websocket.StatusGoingAway, "server shutting down")
}

// bound makes the connection's writes and the close handshake give up on a
// peer that does not read (a shutdown it must not hold up): reads fail
// from now + within; under a CorkConn a write fails once the peer has
// taken nothing of it for within, or at the latest at limit (the peer that
// reads gets what is written and the close), and without one every write
// fails from now + within too. It reports whether writes are bounded by
// stalls (CorkConn) rather than by that one deadline.
func (f *wsFramer) bound(within time.Duration, limit time.Time) bool {
	if f.raw == nil {
		return false
	}
	_ = f.raw.SetReadDeadline(time.Now().Add(within))
	if f.cork != nil {
		f.cork.BoundStalls(within, limit)
		return true
	}
	_ = f.raw.SetWriteDeadline(time.Now().Add(within))
	return false
}

func (f *wsFramer) peerGoingAway() bool { return f.away.Load() }
