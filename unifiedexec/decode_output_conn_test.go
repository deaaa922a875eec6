package unifiedexec

import (
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
	"log/slog"
)

// TestClientConnDecodesBothPaths: over a client connection, frames the
// fast scanner takes and frames it leaves to encoding/json (escapes, odd
// member names) are published alike, in seq order.
func TestClientConnDecodesBothPaths(t *testing.T) {
	c := &Client{procs: map[string]*Process{}, log: slog.New(slog.DiscardHandler)}
	var got []string
	p := newProcess(c, "p", StartOptions{OnOutput: func(ch Chunk) {
		got = append(got, fmt.Sprintf("%d %s %q", ch.Seq, ch.Stream, ch.Data))
	}})
	c.procs["p"] = p
	r, w := io.Pipe()
	conn := c.newConn(rpc.NewStdioFramer(r, io.Discard, r, "test", 1<<20), false)
	defer conn.Wait()
	defer conn.Close()
	frames := string(serverOutput("p", 2, "stderr", []byte("fast"))) + "\n" +
		`{"method":"process/output","params":{"processId":"\u0070","seq":1,"stream":"stdout","chunk":"c2xvdw=="}}` + "\n" +
		`{"method":"process/exited","params":{"processId":"p","SEQ":3,"exitCode":7,"sandboxDenied":false}}` + "\n" +
		`{"params":{"seq":4,"processId":"p"},"method":"process/closed"}` + "\n"
	go func() { _, _ = io.WriteString(w, frames) }()
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("process not closed")
	}
	want := []string{`1 stdout "slow"`, `2 stderr "fast"`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks %q, want %q", got, want)
	}
	if st := p.Current(); !st.Exited || st.Status.Code != 7 {
		t.Fatalf("snapshot %+v, want exit code 7", st)
	}
}
