package rpc

import (
	"bufio"
	"bytes"
	"context"
	"io"

	"github.com/coder/websocket"
)

// StreamedResult is a result too large to build in memory more than once
// (fs/readFile of a large file). Respond writes its JSON straight into the
// outgoing message, in pieces, instead of marshalling it into a buffer and
// copying that into a frame. WriteJSON must write one complete JSON value
// and must not fail except when w fails: a message cut short cannot be
// repaired, so the connection ends.
type StreamedResult interface {
	WriteJSON(w io.Writer) error
}

// streamChunk is the size of the pieces a streamed message is written in.
const streamChunk = 64 << 10

// streamWriter is implemented by framers that can write one message in
// pieces. fill writes the message body; the framer adds its delimiter.
type streamWriter interface {
	writeStream(ctx context.Context, fill func(w io.Writer) error) error
}

// writeStream writes one newline-terminated line through the buffered
// writer, which flushes every 64 KiB.
func (f *stdioFramer) writeStream(_ context.Context, fill func(w io.Writer) error) error {
	if err := fill(f.w); err != nil {
		return err
	}
	if err := f.w.WriteByte('\n'); err != nil {
		return err
	}
	return f.w.Flush()
}

// writeStream writes one text message as a sequence of WebSocket frames of
// up to streamChunk bytes.
func (f *wsFramer) writeStream(ctx context.Context, fill func(w io.Writer) error) error {
	mw, err := f.c.Writer(ctx, websocket.MessageText)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(mw, streamChunk)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := mw.Close(); err == nil {
		err = cerr
	}
	return err
}

// respondStream answers id with a streamed result. It holds the write token
// for the whole message, as Send does for a frame. A framer that cannot
// stream gets the message built in memory.
func (c *Conn) respondStream(id ID, r StreamedResult) error {
	fill := func(w io.Writer) error {
		head := c.prefix(make([]byte, 0, 48))
		head = append(head, `"id":`...)
		head = id.AppendJSON(head)
		head = append(head, `,"result":`...)
		if _, err := w.Write(head); err != nil {
			return err
		}
		if err := r.WriteJSON(w); err != nil {
			return err
		}
		_, err := w.Write([]byte{'}'})
		return err
	}
	sw, ok := c.f.(streamWriter)
	if !ok {
		var buf bytes.Buffer
		var frame []byte
		if err := fill(&buf); err != nil {
			frame = c.errorFrame(id, Errorf(CodeInternalError, "failed to encode result: %v", err))
		} else {
			frame = buf.Bytes()
		}
		if !c.sendFrame(frame) {
			return ErrClosed
		}
		return nil
	}
	select {
	case <-c.wtok:
	case <-c.stopWrite:
		return ErrClosed
	case <-c.ctx.Done():
		return ErrClosed
	}
	select {
	case <-c.stopWrite:
		c.wtok <- struct{}{}
		return ErrClosed
	default:
	}
	err := sw.writeStream(c.ctx, fill)
	c.wtok <- struct{}{}
	if err != nil {
		// A message cut short leaves the transport unusable.
		// The closer goroutine runs the shutdown.
		c.log.Debug("streamed write failed", "error", err)
		c.cancel()
		return ErrClosed
	}
	return nil
}
