//go:build linux

package proc_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/codexec/codex/proc"
)

// benchTrue starts /bin/true as command/exec does (pipes, the server's
// environment, a tree killer with the server's default limits) and waits
// for the exit, the end of output and Close.
func benchTrue(b *testing.B, tree *proc.TreeKiller) {
	b.Helper()
	dir, _ := os.Getwd()
	env := os.Environ()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := proc.Start(proc.Spec{Argv: []string{"/bin/true"}, Dir: dir, Env: env}, nil, proc.Options{Tree: tree})
		if err != nil {
			b.Fatal(err)
		}
		<-p.Exited()
		<-p.OutputDone()
		p.Close()
		if p.ExitCode() != 0 {
			b.Fatalf("exit %d", p.ExitCode())
		}
	}
}

// BenchmarkStartTrueLimited is the spawn path of command/exec with the
// server's default per-process limits.
func BenchmarkStartTrueLimited(b *testing.B) {
	mem, err := proc.PhysicalMemory()
	if err != nil {
		b.Fatal(err)
	}
	tree, err := proc.NewLimitedTreeKiller(nil, proc.Limits{MaxPids: 4096, MaxMemory: mem / 2})
	if err != nil {
		b.Fatal(err)
	}
	defer tree.Close()
	benchTrue(b, tree)
}

// BenchmarkStartTrueNoLimits is the same without per-process limits.
func BenchmarkStartTrueNoLimits(b *testing.B) {
	tree, err := proc.NewTreeKiller(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tree.Close()
	benchTrue(b, tree)
}

// BenchmarkStartTrueNoTree is the same without a tree killer.
func BenchmarkStartTrueNoTree(b *testing.B) { benchTrue(b, nil) }

// BenchmarkOSExecTrue is the os/exec floor.
func BenchmarkOSExecTrue(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartTrueFdTable is BenchmarkStartTrueLimited with the server's
// fd table holding fds extra open descriptors, each its own open file (one
// end of a pipe), as the read ends of live processes are: what a fork
// copies (dup_fd) and the child closes again at exec grows with them.
func BenchmarkStartTrueFdTable(b *testing.B) {
	mem, err := proc.PhysicalMemory()
	if err != nil {
		b.Fatal(err)
	}
	tree, err := proc.NewLimitedTreeKiller(nil, proc.Limits{MaxPids: 4096, MaxMemory: mem / 2})
	if err != nil {
		b.Fatal(err)
	}
	defer tree.Close()
	for _, fds := range []int{0, 4000, 8000} {
		for _, on := range []string{"direct", "forker"} {
			b.Run(strconv.Itoa(fds)+"/"+on, func(b *testing.B) {
				minFD := ^uintptr(0)
				if on == "forker" {
					minFD = 0
				}
				proc.SetForkerMinFD(tree, minFD)
				holdFDs(b, fds)
				benchTrue(b, tree)
			})
		}
	}
}
