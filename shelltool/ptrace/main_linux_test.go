//go:build linux && (amd64 || arm64)

package ptrace_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
	"github.com/codexec/codex/shelltool/ptrace"
)

// init makes the test binary the sandbox helper when run under its name,
// as the codex binary is.
func init() {
	switch filepath.Base(os.Args[0]) {
	case sandbox.HelperName:
		os.Exit(sandbox.ChildMain(sandbox.ChildOptions{}))
	case progArg0:
		os.Exit(runProg(os.Args[1:]))
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// decider is a test Decider: fn decides (nil: Run), and every request is
// recorded.
type decider struct {
	mu   sync.Mutex
	fn   func(escalate.Request) escalate.Decision
	seen []escalate.Request
}

func (d *decider) Decide(ctx context.Context, r escalate.Request) escalate.Decision {
	d.mu.Lock()
	d.seen = append(d.seen, r)
	fn := d.fn
	d.mu.Unlock()
	if fn == nil {
		return escalate.Decision{Action: escalate.Run}
	}
	return withProgram(fn(r), r)
}

// withProgram gives an Escalate decision of a fake decider the file the
// request names, as the server's view opens it.
func withProgram(dec escalate.Decision, r escalate.Request) escalate.Decision {
	if dec.Action != escalate.Escalate || dec.Program != nil {
		return dec
	}
	p, err := escalate.OpenProgram(r.File)
	if err != nil {
		reason := err.Error()
		return escalate.Decision{Action: escalate.Deny, Reason: &reason}
	}
	dec.Program = p
	return dec
}

// files returns the File of every request seen so far.
func (d *decider) files() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, r := range d.seen {
		out = append(out, r.File)
	}
	return out
}

// byName decides by the base name of File: names maps to an action, others Run.
func byName(names map[string]escalate.Action) func(escalate.Request) escalate.Decision {
	reason := "Execution forbidden by policy"
	return func(r escalate.Request) escalate.Decision {
		a, ok := names[filepath.Base(r.File)]
		if !ok {
			return escalate.Decision{Action: escalate.Run}
		}
		if a == escalate.Deny {
			return escalate.Decision{Action: a, Reason: &reason}
		}
		return escalate.Decision{Action: a}
	}
}

// testEnv is the environment of traced commands.
var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}

// plans are the two ways the helper runs a command: exec in place (a
// call without a sandbox, Plan.Unsandboxed) and fork as PID 1 of
// namespaces with a read-only root.
func plans(t *testing.T) map[string]sandbox.Plan {
	root := testDir(t)
	pid1 := sandbox.Plan{
		Env: testEnv, Dir: root, NewMountNS: true, NewPIDNS: true, NewNetNS: true,
		ReadOnlyRoot:  true,
		WritableRoots: []sandbox.WritableRoot{{Path: root}},
		Seccomp:       sandbox.SeccompRestricted, NetworkDisabled: true,
	}
	pid1.RecordIdentities()
	return map[string]sandbox.Plan{
		"exec": {Env: testEnv, Dir: root, Unsandboxed: true},
		"pid1": pid1,
	}
}

// testDir returns a fresh canonical temporary directory.
func testDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// quietLogs drops the sessions' logs (timing tests).
var quietLogs bool

// traced is the outcome of one traced run.
type traced struct {
	out  string
	code int
}

// runTraced runs argv under plan with exec traced by a Session judging
// with d, stdout and stderr on one pipe, and waits for everything.
func runTraced(t *testing.T, plan sandbox.Plan, d escalate.Decider, argv ...string) traced {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		t.Skipf("sandbox not available: %v", err)
	}
	plan.Argv = argv
	plan.TraceExecFD = sandbox.KeepFDFor(&plan)
	w, err := sandbox.Wrap(plan)
	if err != nil {
		t.Fatal(err)
	}
	syncR, syncW := mustPipe(t)
	outR, outW := mustPipe(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	attr := &syscall.ProcAttr{Files: []uintptr{null.Fd(), outW.Fd(), outW.Fd()}, Sys: &syscall.SysProcAttr{Setsid: true}}
	path, hargv := w.ApplyTo(attr)
	attr.Files = append(attr.Files, syncR.Fd())
	log := zaptest.NewLogger(t)
	if quietLogs {
		log = zap.NewNop()
	}
	esc := escalate.NewEscalator(log)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sess, err := ptrace.Start(ctx, ptrace.Config{Decider: d, Escalator: esc, Logger: log},
		func() (int, error) { return syscall.ForkExec(path, hargv, attr) }, syncW)
	for _, f := range append(slices.Clone(w.ExtraFiles), syncR, outW, null) {
		f.Close()
	}
	if err != nil {
		outR.Close()
		t.Fatalf("Start: %v", err)
	}
	out, _ := io.ReadAll(outR)
	outR.Close()
	code := sess.ExitCode()
	sess.Close()
	esc.KillAll()
	return traced{out: string(out), code: code}
}

func mustPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}
