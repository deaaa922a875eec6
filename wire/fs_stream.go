package wire

import (
	"bytes"
	"encoding/base64"
	"io"
)

// base64Piece is how much of Data Base64Result encodes at a time: 48 KiB,
// 64 KiB of base64, the size of the pieces rpc writes a streamed message in.
const base64Piece = 48 << 10

// Base64Result is an rpc.StreamedResult of the form {"<Field>":"<base64 of
// Data>"}: the base64 text is encoded piecewise into the message, so
// answering with it costs one piece (64 KiB of base64) beyond Data itself. Its
// MarshalJSON gives the same JSON, for callers that need it in memory.
type Base64Result struct {
	Field string // a JSON member name needing no escaping, e.g. "dataBase64"
	Data  []byte
}

// WriteJSON implements rpc.StreamedResult.
func (b Base64Result) WriteJSON(w io.Writer) error {
	if _, err := io.WriteString(w, "{"); err != nil {
		return err
	}
	return b.writeMember(w)
}

// writeMember writes `"<Field>":"<base64>"}`: the member and the end of
// the object it closes.
func (b Base64Result) writeMember(w io.Writer) error {
	if err := writeBase64Member(w, b.Field, b.Data); err != nil {
		return err
	}
	_, err := io.WriteString(w, `"}`)
	return err
}

// writeBase64Open writes {"<field>":"<base64 of data>, leaving the string
// and the object open.
func writeBase64Open(w io.Writer, field string, data []byte) error {
	if _, err := io.WriteString(w, "{"); err != nil {
		return err
	}
	return writeBase64Member(w, field, data)
}

// writeBase64Member writes "<field>":"<base64 of data>, leaving the string
// open.
func writeBase64Member(w io.Writer, field string, data []byte) error {
	if _, err := io.WriteString(w, `"`+field+`":"`); err != nil {
		return err
	}
	enc := base64.NewEncoder(base64.StdEncoding, w)
	for p := data; len(p) > 0; {
		n := min(len(p), base64Piece)
		if _, err := enc.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return enc.Close()
}

// MarshalJSON implements json.Marshaler.
func (b Base64Result) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(base64.StdEncoding.EncodedLen(len(b.Data)) + len(b.Field) + 8)
	err := b.WriteJSON(&buf)
	return buf.Bytes(), err
}
