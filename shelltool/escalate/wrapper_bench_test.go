package escalate

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// BenchmarkWrapperExec measures one intercepted exec answered Run, from a
// shell loop: the wrapper's start-up, its request and the exec of
// /bin/true, against /bin/true alone and the reference wrapper (both
// served by our server side). ns/op is per exec. Run it with
// `go test -run X -bench WrapperExec -benchtime 200x ./shelltool/escalate/`.
func BenchmarkWrapperExec(b *testing.B) {
	link := b.TempDir() + "/" + WrapperName
	if err := os.Symlink(codexBinary, link); err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, prefix string }{
		{"direct", ""},
		{"ours", link + " "},
		{"reference", refWrapper + " "},
	}
	// Another wrapper build to compare (for instance a minimal binary
	// that only calls WrapperMain), named by the environment.
	if extra := os.Getenv("WRAPPER_BENCH_EXTRA"); extra != "" {
		cases = append(cases, struct{ name, prefix string }{"extra", extra + " "})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.name == "reference" {
				if _, err := os.Stat(refWrapper); err != nil {
					b.Skipf("reference wrapper absent: %v", err)
				}
			}
			server, child, err := NewSocketPair()
			if err != nil {
				b.Fatal(err)
			}
			defer server.Close()
			defer child.Close()
			stop := serveInBackground(b, server, decideFunc(func(context.Context, Request) Decision {
				return Decision{Action: Run}
			}))
			defer stop()
			cmd := exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt $N ]; do `+c.prefix+`/bin/true true; i=$((i+1)); done`)
			cmd.Env = []string{"N=" + strconv.Itoa(b.N), "PATH=/usr/bin:/bin", SocketEnv + "=3"}
			cmd.ExtraFiles = []*os.File{child}
			if c.prefix == "" {
				cmd = exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt $N ]; do /bin/true; i=$((i+1)); done`)
				cmd.Env = []string{"N=" + strconv.Itoa(b.N)}
			}
			b.ResetTimer()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			b.StopTimer()
		})
	}
}

// decideFunc is a Decider made of a func.
type decideFunc func(context.Context, Request) Decision

func (f decideFunc) Decide(ctx context.Context, r Request) Decision { return f(ctx, r) }

// serveInBackground runs Serve on server until the returned func is
// called; that func waits for Serve to return.
func serveInBackground(tb testing.TB, server *os.File, d Decider) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, server, d, NewEscalator(nil), nil) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	}
}
