package unifiedexec_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

var markerSeq atomic.Int64

// sleepMarker returns a sleep duration no other process has as argument
// (300.<pid><n>); what still runs with it is killed at the end of the test.
func sleepMarker(t *testing.T) string {
	m := fmt.Sprintf("300.%d%04d", os.Getpid(), markerSeq.Add(1))
	t.Cleanup(func() {
		for _, pid := range sleepPids(m) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return m
}

// sleepPids returns the running (not zombie) processes with argument m.
func sleepPids(m string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if !slices.Contains(strings.Split(string(cl), "\x00"), m) {
			continue
		}
		st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(st), ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// waitSleeps waits up to 10 s until one sleep per marker runs.
func waitSleeps(t *testing.T, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, m := range markers {
		for len(sleepPids(m)) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("sleep %s is not running", m)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// renamingProxy is a WebSocket proxy to an exec-server that renames one
// method in the client's requests, so that the server answers -32601 for
// it: a stand-in for a server without that extension (the reference).
type renamingProxy struct {
	url     string
	renamed atomic.Int64
}

func newRenamingProxy(t *testing.T, target, from, to string) *renamingProxy {
	px := &renamingProxy{}
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		in.SetReadLimit(-1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out, _, err := websocket.Dial(ctx, target, nil)
		if err != nil {
			in.CloseNow()
			return
		}
		out.SetReadLimit(-1)
		pipe := func(dst, src *websocket.Conn, rename bool) {
			defer wg.Done()
			defer cancel()
			for {
				typ, b, err := src.Read(ctx)
				if err != nil {
					return
				}
				if rename && strings.Contains(string(b), `"method":"`+from+`"`) {
					b = []byte(strings.Replace(string(b), `"method":"`+from+`"`, `"method":"`+to+`"`, 1))
					px.renamed.Add(1)
				}
				if dst.Write(ctx, typ, b) != nil {
					return
				}
			}
		}
		wg.Add(2)
		go pipe(out, in, true)
		go pipe(in, out, false)
		<-ctx.Done()
		in.CloseNow()
		out.CloseNow()
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		wg.Wait()
	})
	px.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return px
}
