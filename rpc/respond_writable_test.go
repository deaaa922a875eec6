package rpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// TestRespondWhenWritableBuildsOnceWritable: an answer given with
// RespondWhenWritable while another message waits for a peer that does not
// read is built only once that message is written (a parked read woken by
// output holds no copy of it meanwhile), and then sent. Both transports.
func TestRespondWhenWritableBuildsOnceWritable(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			a, peer := tr.pair(t)
			parked := make(chan rpc.ID, 1)
			server := startConn(t, a, rpc.Options{Bind: func(c *rpc.Conn) rpc.Handler {
				return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
					parked <- req.ID
					return nil, rpc.ErrAsync
				})
			}})
			ctx := callCtx(t)
			if err := peer.Write(ctx, []byte(`{"id":7,"method":"process/read"}`)); err != nil {
				t.Fatal(err)
			}
			id := <-parked
			// The peer reads nothing yet: the notification holds the
			// right to write.
			notified := make(chan error, 1)
			go func() { notified <- server.Notify(ctx, "process/output", map[string]int{"seq": 1}) }()
			time.Sleep(50 * time.Millisecond) // the notification takes the right to write first
			built := make(chan struct{})
			answered := make(chan error, 1)
			go func() {
				answered <- server.RespondWhenWritable(id, func() (any, error) {
					close(built)
					return map[string]string{"chunk": "late"}, nil
				})
			}()
			select {
			case <-built:
				t.Fatal("the answer was built while the notification before it waited for the peer")
			case <-time.After(100 * time.Millisecond):
			}
			for i, want := range []string{`"method":"process/output"`, `"result":{"chunk":"late"}`} {
				msg, err := peer.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(msg), want) {
					t.Fatalf("message %d is %s, want it to hold %s", i, msg, want)
				}
			}
			if err := <-notified; err != nil {
				t.Fatal(err)
			}
			if err := <-answered; err != nil {
				t.Fatal(err)
			}
			// The peer reads on, so that the close handshake completes.
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				for {
					if _, err := peer.Read(ctx); err != nil {
						return
					}
				}
			}()
			_ = server.Close()
			server.Wait()
			_ = peer.Close(false)
			<-drained
		})
	}
}
