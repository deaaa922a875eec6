package fshelper

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// A sandboxed fs/readFile of a large file passes its content through the
// helper's response line. Built in memory at each step (the helper's
// json.Marshal calls, the server's growing stdout buffer, two json.Unmarshal
// copies and the frame), it cost the server about 8× the file. Instead the
// helper streams a rpc.StreamedResult into its response line, the server
// keeps the line in fixed-size pieces (helperOutput), and when the line is
// the exact shape our helper writes for a base64 result, the server
// forwards the response member's bytes from those pieces into the frame
// without joining or decoding them (rawPieces): about 1.3× the file.

// okPrefix is how the helper's response line starts for a successful
// operation op, up to the response member's value.
func okPrefix(op string) []byte {
	q, _ := json.Marshal(op)
	b := append([]byte(`{"status":"ok","payload":{"operation":`), q...)
	return append(b, `,"response":`...)
}

// okSuffix ends a successful response line.
const okSuffix = "}}\n"

// writeStreamedOK writes the success line for a streamed result to out.
func writeStreamedOK(out io.Writer, op string, res rpc.StreamedResult) error {
	bw := bufio.NewWriterSize(out, 64<<10)
	if _, err := bw.Write(okPrefix(op)); err != nil {
		return err
	}
	if err := res.WriteJSON(bw); err != nil {
		return err
	}
	if _, err := bw.WriteString(okSuffix); err != nil {
		return err
	}
	return bw.Flush()
}

// helperOutput collects the helper's stdout in pieces that are never
// copied to grow. The zero value is empty.
type helperOutput struct {
	pieces [][]byte
	n      int
}

const (
	minPiece = 4 << 10
	maxPiece = 1 << 20
)

// Write implements io.Writer.
func (o *helperOutput) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := len(o.pieces)
		if k == 0 || len(o.pieces[k-1]) == cap(o.pieces[k-1]) {
			size := minPiece
			if k > 0 {
				size = min(2*cap(o.pieces[k-1]), maxPiece)
			}
			o.pieces = append(o.pieces, make([]byte, 0, size))
			k++
		}
		last := &o.pieces[k-1]
		m := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:m]...)
		p = p[m:]
	}
	o.n += n
	return n, nil
}

// Bytes joins the pieces.
func (o *helperOutput) Bytes() []byte {
	if len(o.pieces) == 1 {
		return o.pieces[0]
	}
	b := make([]byte, 0, o.n)
	for _, p := range o.pieces {
		b = append(b, p...)
	}
	return b
}

// base64Response returns the response member of a success line of the form
// okPrefix(op) + {"<field>":"<base64>"} + okSuffix, as pieces of o, or
// false when the line has any other shape (then it is decoded as usual).
// Every byte of the base64 text is checked, so what is forwarded is valid
// JSON whatever the helper wrote.
func (o *helperOutput) base64Response(op, field string) (rawPieces, bool) {
	head := append(okPrefix(op), `{"`+field+`":"`...)
	tail := []byte(`"}` + okSuffix)
	if o.n < len(head)+len(tail) || len(o.pieces) == 0 || len(o.pieces[0]) < len(head) || !bytes.HasPrefix(o.pieces[0], head) {
		return nil, false
	}
	if !bytes.Equal(o.lastBytes(len(tail)), tail) {
		return nil, false
	}
	// The response value: from after okPrefix to before okSuffix.
	start, end := len(okPrefix(op)), o.n-len(okSuffix)
	var out rawPieces
	off := 0
	for _, p := range o.pieces {
		lo, hi := max(start-off, 0), min(end-off, len(p))
		if lo < hi {
			out = append(out, p[lo:hi])
		}
		off += len(p)
	}
	// Check the base64 text between the quotes.
	bstart, bend := len(head), o.n-len(tail)
	off = 0
	for _, p := range o.pieces {
		lo, hi := max(bstart-off, 0), min(bend-off, len(p))
		for i := lo; i < hi; i++ {
			if !isBase64Byte(p[i]) {
				return nil, false
			}
		}
		off += len(p)
	}
	return out, true
}

// lastBytes returns a copy of the last n bytes (n <= o.n).
func (o *helperOutput) lastBytes(n int) []byte {
	b := make([]byte, n)
	for i := len(o.pieces) - 1; i >= 0 && n > 0; i-- {
		p := o.pieces[i]
		m := min(n, len(p))
		copy(b[n-m:n], p[len(p)-m:])
		n -= m
	}
	return b
}

func isBase64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// rawPieces is a JSON value held in pieces, written into the response frame
// as is.
type rawPieces [][]byte

// WriteJSON implements rpc.StreamedResult.
func (r rawPieces) WriteJSON(w io.Writer) error {
	for _, p := range r {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// MarshalJSON joins the pieces.
func (r rawPieces) MarshalJSON() ([]byte, error) { return bytes.Join(r, nil), nil }

// decodeHelperStream turns the helper's output into the method's result:
// forwarded in pieces for a base64 fs/readFile result, decoded as usual
// otherwise.
func decodeHelperStream(method string, o *helperOutput) (any, error) {
	if method == wire.MethodFSReadFile {
		if raw, ok := o.base64Response(method, "dataBase64"); ok {
			return raw, nil
		}
	}
	return decodeHelperOutput(method, bytes.TrimSpace(o.Bytes()))
}
