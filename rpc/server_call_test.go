package rpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/codexec/codex/rpc"
)

// TestServerCallAnsweredDuringLongPoll: the server's own call to the client
// (the exec-server's network/policyRequest) gets its answer while a
// long-poll of the same connection is parked (a process/read with waitMs)
// and while a slow request holds the handler goroutine: responses are
// delivered by the read loop and never wait behind a handler (the
// reference processes them only after the pending read returns: an answer
// sent at 80 ms took effect at 520 ms behind a 500 ms waitMs). Every
// scheduling mode, both transports. The caller also tells an error answer
// (a *rpc.Error) from a result, whose raw JSON it gets as sent.
func TestServerCallAnsweredDuringLongPoll(t *testing.T) {
	for _, tr := range transports {
		for _, conc := range []int{0, 1, 4} {
			t.Run(fmt.Sprintf("%s/concurrency%d", tr.name, conc), func(t *testing.T) {
				serverCallDuringLongPoll(t, tr, conc)
			})
		}
	}
}

func serverCallDuringLongPoll(t *testing.T, tr transport, conc int) {
	a, b := tr.pair(t)
	parked := make(chan rpc.ID, 1)
	slow := make(chan struct{})
	release := make(chan struct{})
	server := startConn(t, a, rpc.Options{Concurrency: conc, Bind: func(c *rpc.Conn) rpc.Handler {
		return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			switch req.Method {
			case "process/read": // parked until the test answers it
				parked <- req.ID
				return nil, rpc.ErrAsync
			case "slow": // holds the handler goroutine
				close(slow)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return "slow done", nil
			}
			return nil, rpc.Errorf(rpc.CodeMethodNotFound, "no %s", req.Method)
		})
	}})
	answers := map[string]string{"allow": `{"decision":{"type":"allow"}}`, "empty": `{}`}
	client := startConn(t, b, rpc.Options{Bind: func(c *rpc.Conn) rpc.Handler {
		return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
			var p struct{ Answer string }
			_ = json.Unmarshal(req.Params, &p)
			if p.Answer == "error" {
				return nil, rpc.Errorf(rpc.CodeInternalError, "client failed")
			}
			return json.RawMessage(answers[p.Answer]), nil
		})
	}})
	ctx := callCtx(t)
	read, err := client.Start(ctx, "process/read", map[string]any{"processId": "p", "waitMs": 30000})
	if err != nil {
		t.Fatal(err)
	}
	var readID rpc.ID
	select {
	case readID = <-parked:
	case <-ctx.Done():
		t.Fatal("process/read never reached the handler")
	}
	var slowCall *rpc.Pending
	if conc != 1 { // strictly serial: the parked read holds every request
		if slowCall, err = client.Start(ctx, "slow", nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-slow:
		case <-ctx.Done():
			t.Fatal("the slow request never ran")
		}
	}
	for _, answer := range []string{"allow", "empty", "error"} {
		t0 := time.Now()
		var raw json.RawMessage
		err := server.Call(ctx, "network/policyRequest", map[string]any{"answer": answer}, &raw)
		took := time.Since(t0)
		switch answer {
		case "error":
			if we, ok := err.(*rpc.Error); !ok || we.Code != rpc.CodeInternalError || we.Message != "client failed" {
				t.Errorf("error answer: %v, want the *rpc.Error", err)
			}
		default:
			if err != nil || string(raw) != answers[answer] {
				t.Errorf("%s answer: %s %v", answer, raw, err)
			}
		}
		if took > 2*time.Second {
			t.Errorf("%s answer took %v behind the parked read", answer, took)
		}
	}
	// The long poll and the slow request are still pending all along.
	if err := server.Respond(readID, map[string]any{"chunks": []any{}}, nil); err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := read.Await(ctx, &res); err != nil || res["chunks"] == nil {
		t.Errorf("parked read: %v %v", res, err)
	}
	close(release)
	if slowCall != nil {
		var s string
		if err := slowCall.Await(ctx, &s); err != nil || s != "slow done" {
			t.Errorf("slow: %q %v", s, err)
		}
	}
}

// TestLateAnswerToAbandonedCall: a call the caller gave up on (the
// review's timeout passed) may still be answered by the peer; that late
// answer is dropped and the connection goes on, where a response to an id
// never sent still ends it (non-strict mode). Without this, a client that
// answers a review a moment after policyDecisionTimeoutMs would lose its
// connection and every process on it.
func TestLateAnswerToAbandonedCall(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			a, b := tr.pair(t)
			server := startConn(t, a, rpc.Options{})
			answered := make(chan struct{}, 1)
			startConn(t, b, rpc.Options{Bind: func(c *rpc.Conn) rpc.Handler {
				return rpc.HandlerFunc(func(ctx context.Context, req *rpc.Request) (any, error) {
					if req.Method == "slow" {
						c.Go(func(context.Context) {
							time.Sleep(200 * time.Millisecond)
							_ = c.Respond(req.ID, "late", nil)
							answered <- struct{}{}
						})
						return nil, rpc.ErrAsync
					}
					return "now", nil
				})
			}})
			ctx, cancel := context.WithTimeout(callCtx(t), 50*time.Millisecond)
			err := server.Call(ctx, "slow", nil, nil)
			cancel()
			if err != context.DeadlineExceeded {
				t.Fatalf("slow call: %v, want the deadline", err)
			}
			select {
			case <-answered:
			case <-time.After(5 * time.Second):
				t.Fatal("the late answer was never sent")
			}
			var s string
			if err := server.Call(callCtx(t), "fast", nil, &s); err != nil || s != "now" {
				t.Fatalf("a call after the late answer: %q %v", s, err)
			}
		})
	}
}
