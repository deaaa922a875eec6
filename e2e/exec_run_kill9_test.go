package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `codex exec run` without --server keeps its promise that no process
// outlives the run when the processes of our binary in the run are killed
// with SIGKILL: the client alone (its exec-server child reads the end of
// its input and, with no grace, kills at once; with the 5 s grace of a
// stdio server they ran on for 5 s), and all of them but the watchdog at
// once (the client and its child; the watchdog kills). 1 s later none of
// the command's processes runs (background, setsid and foreground jobs).
func TestExecRunKill9NoSurvivors(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(map[bool]string{false: "client", true: "all-but-watchdog"}[all], func(t *testing.T) {
			script, marks := kill9Script()
			defer killMarked(t, marks...)
			cmd := exec.Command(binary, "exec", "run", "-n", "--", "/bin/sh", "-c", script)
			cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitAllMarked(t, marks)
			victims := []int{cmd.Process.Pid}
			if all {
				victims = append(victims, ourDescendants(t, cmd.Process.Pid)...)
			}
			for _, pid := range victims {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			err := cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("exec run: %v, want killed by SIGKILL", err)
			}
			if left := survivors(marks, time.Second); len(left) > 0 {
				t.Errorf("1 s after kill -9 of %v, still running: %v", victims, left)
			}
		})
	}
}

// ourDescendants returns the processes below pid that run our binary,
// except the watchdog.
func ourDescendants(t *testing.T, pid int) []int {
	t.Helper()
	want, err := filepath.EvalSymlinks(binary)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for p := range parent {
		q := parent[p]
		for q > 1 && q != pid {
			q = parent[q]
		}
		if q != pid {
			continue
		}
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(p) + "/exe")
		argv, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if exe == want && !strings.HasPrefix(string(argv), "codex-exec-watchdog\x00") {
			out = append(out, p)
		}
	}
	return out
}
