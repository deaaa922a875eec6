package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestHTTPRequestResultWriteJSON: the streamed form of the result is the
// JSON encoding/json writes, member for member, for bodies across the
// base64 piece size and for no headers.
func TestHTTPRequestResultWriteJSON(t *testing.T) {
	for _, r := range []HTTPRequestResult{
		{Status: 200, Headers: []HTTPResponseHeader{{"a", "1"}, {"b", "\"q\""}}, BodyBase64: bytes.Repeat([]byte{0, 1, 2, 250}, 30000)},
		{Status: 204, BodyBase64: Bytes{}},
		{Status: 302, Headers: []HTTPResponseHeader{}, BodyBase64: Bytes("moved")},
	} {
		var got bytes.Buffer
		if err := r.WriteJSON(&got); err != nil {
			t.Fatal(err)
		}
		if r.Headers == nil {
			r.Headers = []HTTPResponseHeader{}
		}
		want, _ := json.Marshal(r)
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("WriteJSON %.200s\nwant %.200s", got.Bytes(), want)
		}
	}
}

// TestDecodeHTTPRequestParamsPositional: eight members in the
// reference's order are taken as the object would be.
func TestDecodeHTTPRequestParamsPositional(t *testing.T) {
	p, err := DecodeHTTPRequestParams(json.RawMessage(`["GET","http://x/","r",[{"name":"a","value":"b"}],"aGk=",5,true,"stop"]`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Method != "GET" || p.URL != "http://x/" || p.RequestID != "r" || len(p.Headers) != 1 || string(*p.BodyBase64) != "hi" || *p.TimeoutMs != 5 || !p.StreamResponse || p.RedirectPolicy != "stop" {
		t.Errorf("decoded %+v", p)
	}
}
