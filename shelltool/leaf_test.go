package shelltool

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/codexec/codex/proc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/shelltool/escalate"
)

// limitedTree is a cgroup tree for the calls' leaves; the test skips
// where there is none.
func limitedTree(t *testing.T) *proc.TreeKiller {
	t.Helper()
	tree, err := proc.NewCgroupTreeKiller(zaptest.NewLogger(t), proc.Limits{MaxPids: 50})
	if err != nil {
		t.Skipf("no cgroup v2 leaves here: %v", err)
	}
	t.Cleanup(func() {
		if err := tree.Close(); err != nil {
			t.Error(err)
		}
	})
	return tree
}

// setsidDecider escalates setsid -f and runs everything else in place.
type setsidDecider struct{}

func (setsidDecider) Decide(_ context.Context, r escalate.Request) escalate.Decision {
	if filepath.Base(r.File) == "setsid" && len(r.Argv) > 1 && r.Argv[1] == "-f" {
		return escalateFile(r)
	}
	return escalate.Decision{Action: escalate.Run}
}

// leafScript prints the call's cgroup and leaves three sleeps behind: a
// background job, a setsid job, and the daemon of an escalated setsid -f
// (outside the escalated program's process group).
const leafScript = "sed -n 's/^0:://p' /proc/self/cgroup; sleep 30.0601 & /bin/sh -c 'exec setsid sleep 30.0602' & setsid -f sleep 30.0603; echo end"

// checkLeafRun checks a leafScript result: the call ran in a leaf of the
// tree, and nothing it left runs once Run has returned.
func checkLeafRun(t *testing.T, res Result) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if res.ExitCode != 0 || len(lines) != 2 || lines[1] != "end" {
		t.Fatalf("%+v", res)
	}
	if dir := filepath.Base(filepath.Dir(lines[0])); !strings.HasPrefix(dir, "codex-exec-") {
		t.Errorf("the call ran in cgroup %s, not in a leaf of the tree", lines[0])
	}
	waitGone(t, "sleep 30.060")
}

// TestTracedRunLeaf: with a Tree, a traced call runs in a leaf of its own,
// and the escalated daemon it left dies with the call.
func TestTracedRunLeaf(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("sandbox not available: %v", err)
	}
	tree := limitedTree(t)
	expired := make(chan struct{})
	c := &Call{Command: leafScript, Workdir: t.TempDir(), Decider: setsidDecider{}, Expired: expired,
		Stopwatch: NewStopwatch(nil, 10*time.Second, func() { close(expired) })}
	r := &TracedRunner{Bash: DefaultTracedBash, Env: []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}, Tree: tree, Logger: zaptest.NewLogger(t)}
	start := time.Now()
	res, err := r.Run(context.Background(), c)
	t.Logf("call took %v", time.Since(start))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkLeafRun(t, res)
}

// TestBashRunLeaf: the same in wrapper mode, without a sandbox (no PID
// namespace ends the jobs there): all three die with the call.
func TestBashRunLeaf(t *testing.T) {
	r := testRunner(t, requirePatchedBash(t))
	r.Tree = limitedTree(t)
	checkLeafRun(t, runCall(t, r, leafScript, t.TempDir(), nil, setsidDecider{}, 10*time.Second))
}
