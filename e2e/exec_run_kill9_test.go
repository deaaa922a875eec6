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
// outlives the run when it dies without a word: its private exec-server
// runs in the exec run process (cli/cmd_exec_private.go), so client and
// server die together and the server's watchdog, a process of its own,
// kills what the command started. Before, the server was a child and
// this test also killed the client alone (the child then read the end of
// its input and killed) and the client with the child; both are now the
// first case. Cases: SIGKILL; SIGKILL with the command sandboxed (through
// the re-executed helper); and a crash (SIGQUIT, which exec run does not
// catch, takes the Go runtime's crash path, the one an unrecovered panic
// in a server goroutine takes: no deferred function runs, exit 2). 1 s
// later none of the command's processes runs (background, setsid and
// foreground jobs); no exec-server child ran below exec run.
func TestExecRunKill9NoSurvivors(t *testing.T) {
	cases := []struct {
		name  string
		sig   syscall.Signal
		flags []string
	}{
		{"kill-9", syscall.SIGKILL, nil},
		{"kill-9-sandboxed", syscall.SIGKILL, []string{"--sandbox", "read-only"}},
		{"crash", syscall.SIGQUIT, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script, marks := kill9Script()
			defer killMarked(t, marks...)
			args := append(append([]string{"exec", "run", "-n"}, tc.flags...), "--", "/bin/sh", "-c", script)
			cmd := exec.Command(binary, args...)
			cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitAllMarked(t, marks)
			for _, pid := range ourDescendants(t, cmd.Process.Pid) {
				if argv, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.Contains(string(argv), "\x00exec-server\x00") {
					t.Errorf("an exec-server child below exec run: %d %q", pid, argv)
				}
			}
			_ = syscall.Kill(cmd.Process.Pid, tc.sig)
			err := cmd.Wait()
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			switch {
			case tc.sig == syscall.SIGKILL && (!ok || ws.Signal() != syscall.SIGKILL):
				t.Fatalf("exec run: %v, want killed by SIGKILL", err)
			case tc.sig == syscall.SIGQUIT && (!ok || ws.ExitStatus() != 2 || !strings.Contains(stderr.String(), "SIGQUIT")):
				t.Fatalf("exec run: %v, stderr %q; want Go's crash: exit 2 and a goroutine dump", err, stderr.String())
			}
			if left := survivors(marks, time.Second); len(left) > 0 {
				t.Errorf("1 s after %v of exec run, still running: %v", tc.sig, left)
			}
		})
	}
}

// ourDescendants returns the processes below pid that run our binary,
// except the watchdog (sandbox helpers included).
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
