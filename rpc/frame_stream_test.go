package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"runtime"
	"testing"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// TestStreamedResult answers a request with an 8 MiB wire.Base64Result over
// a stdio framer: the answer is the same JSON a marshalled result gives, and
// producing it allocates far less than the payload (the base64 text is
// never built in memory).
func TestStreamedResult(t *testing.T) {
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 13)
	}
	handler := rpc.HandlerFunc(func(context.Context, *rpc.Request) (any, error) {
		return wire.Base64Result{Field: "dataBase64", Data: data}, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := rpc.NewConn(rpc.NewStdioFramer(inR, outW, closers{inR, outW}, "exec-server stdio", 1<<20), rpc.Options{Bind: func(*rpc.Conn) rpc.Handler { return handler }})
	defer func() {
		_ = inW.Close()
		_ = c.Close()
		_ = outR.Close()
		c.Wait()
	}()
	br := bufio.NewReaderSize(outR, 1<<20)
	// Warm up (pools, goroutines), then measure one answer.
	if _, err := io.WriteString(inW, `{"id":1,"method":"fs/readFile"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadBytes('\n'); err != nil {
		t.Fatalf("reading the first answer: %v", err)
	}
	var after runtime.MemStats
	runtime.GC()
	if _, err := io.WriteString(inW, `{"id":2,"method":"fs/readFile"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	// Read in place, without growing a buffer of our own that would count.
	var got bytes.Buffer
	got.Grow(base64.StdEncoding.EncodedLen(len(data)) + 64)
	runtime.ReadMemStats(&after)
	baseAlloc := after.TotalAlloc
	for {
		frag, err := br.ReadSlice('\n')
		got.Write(frag)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - baseAlloc
	var m struct {
		ID     int `json:"id"`
		Result struct {
			DataBase64 []byte `json:"dataBase64"`
		} `json:"result"`
	}
	if err := json.Unmarshal(got.Bytes(), &m); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	if m.ID != 2 || !bytes.Equal(m.Result.DataBase64, data) {
		t.Fatalf("answer id %d with %d bytes, want id 2 with the %d bytes", m.ID, len(m.Result.DataBase64), len(data))
	}
	// A marshalled answer allocates about 4× the payload; streamed, the
	// server allocates only small pieces.
	if allocated > 2<<20 {
		t.Fatalf("answering allocated %d bytes for an %d-byte payload", allocated, len(data))
	}
	b, err := json.Marshal(wire.Base64Result{Field: "dataBase64", Data: []byte("hi")})
	if err != nil || string(b) != `{"dataBase64":"aGk="}` {
		t.Fatalf("MarshalJSON: %s %v", b, err)
	}
}
