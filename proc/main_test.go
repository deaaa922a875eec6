//go:build linux

package proc_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/proc"
)

// helperEnv selects a helper program when the test binary is re-executed,
// as os/exec's tests do. Children get an exact environment, so every
// helper spec carries it explicitly.
const helperEnv = "PROC_TEST_HELPER"

// TestMain runs helper programs for re-executed children, and otherwise the
// tests, followed by a goroutine leak check and a check that no child of
// the test binary is left running or unreaped.
func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		os.Exit(runHelper(name, os.Args[1:]))
	}
	// As the server's main does: children start with default dispositions
	// whatever the test runner left ignored.
	proc.ClaimIgnoredSignals()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if left := leftoverChildren(); code == 0 && left != "" {
			fmt.Fprintf(os.Stderr, "children left behind: %s\n", left)
			code = 1
		}
		os.Exit(code)
	}))
}

// helpers are the programs the test binary can play. Each gets the
// arguments after argv[0] and returns the exit code.
var helpers = map[string]func(args []string) int{
	"exit":              helperExit,
	"print":             helperPrint,
	"both":              helperBoth,
	"sleep":             func([]string) int { time.Sleep(time.Hour); return 0 },
	"ignoreterm":        helperIgnoreTerm,
	"grandchild":        helperGrandchild,
	"late":              helperLate,
	"setsid-grandchild": func([]string) int { return helperSetsid(true) },
	"setsid-orphan":     func([]string) int { return helperSetsid(false) },
	"fds":               helperFDs,
	"args":              helperArgs,
	"sigign":            helperSigIgn,
	"pdeath":            helperPdeath,
}

func runHelper(name string, args []string) int {
	h, ok := helpers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
		return 2
	}
	return h(args)
}

// helperExit exits with args[0]; with "closed" as args[1] it first closes
// stdout and stderr.
func helperExit(args []string) int {
	code, _ := strconv.Atoi(args[0])
	if len(args) > 1 && args[1] == "closed" {
		os.Stdout.Close()
		os.Stderr.Close()
	}
	return code
}

// helperPrint writes args[0] bytes of burstPattern to stdout.
func helperPrint(args []string) int {
	n, _ := strconv.Atoi(args[0])
	buf := burst(n)
	if _, err := os.Stdout.Write(buf); err != nil {
		return 3
	}
	return 0
}

// burst returns n bytes of a pattern without bytes a terminal translates.
func burst(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

func helperBoth([]string) int {
	fmt.Fprint(os.Stdout, "to-stdout\n")
	fmt.Fprint(os.Stderr, "to-stderr\n")
	return 0
}

func helperIgnoreTerm([]string) int {
	signal.Ignore(syscall.SIGTERM)
	fmt.Println("ready")
	time.Sleep(time.Hour)
	return 0
}

// helperGrandchild starts a "late" grandchild that inherits stdout, prints
// its pid and exits without waiting for it.
func helperGrandchild([]string) int {
	cmd := exec.Command(selfExe(), strconv.Itoa(os.Getpid()))
	cmd.Env = []string{helperEnv + "=late", noRaceExitSleep}
	cmd.Stdout = os.Stdout
	if err := cmd.Start(); err != nil {
		return 3
	}
	fmt.Printf("gc:%d\n", cmd.Process.Pid)
	return 0
}

// helperLate waits until its parent (pid args[0]) is gone, then writes
// "late" to the stdout it inherited and exits.
func helperLate(args []string) int {
	parent, _ := strconv.Atoi(args[0])
	for os.Getppid() == parent {
		time.Sleep(2 * time.Millisecond)
	}
	fmt.Println("late")
	return 0
}

// helperSetsid starts a sleeping grandchild in a new session, holding
// stdout, prints its pid and then waits for it (wait) or exits (!wait).
func helperSetsid(wait bool) int {
	cmd := exec.Command(selfExe())
	cmd.Env = []string{helperEnv + "=sleep", noRaceExitSleep}
	cmd.Stdout = os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 3
	}
	fmt.Printf("gc:%d\n", cmd.Process.Pid)
	if wait {
		_ = cmd.Wait()
	}
	return 0
}

// helperFDs lists its open fds with raw syscalls (so that the Go runtime
// opens no epoll fd), leaving out the directory fd used for the listing.
func helperFDs([]string) int {
	dfd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 3
	}
	buf := make([]byte, 4096)
	var names []string
	for {
		n, err := unix.ReadDirent(dfd, buf)
		if err != nil {
			return 3
		}
		if n == 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	var out []string
	for _, name := range names {
		if name == strconv.Itoa(dfd) {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + name)
		out = append(out, name+"="+target)
	}
	fmt.Println(strings.Join(out, " "))
	return 0
}

// helperArgs prints argv[0], the working directory and the environment.
func helperArgs([]string) int {
	wd, _ := os.Getwd()
	fmt.Printf("arg0=%s\nwd=%s\n", os.Args[0], wd)
	for _, kv := range os.Environ() {
		fmt.Printf("env=%s\n", kv)
	}
	return 0
}

func selfExe() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}

// leftoverChildren describes the children of the test binary that still
// exist, running or zombie; "" if there are none.
func leftoverChildren() string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		var left []string
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, task := range tasks {
			data, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
			for _, pid := range strings.Fields(string(data)) {
				stat, _ := os.ReadFile("/proc/" + pid + "/stat")
				left = append(left, string(bytes.TrimSpace(stat)))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "; ")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// helperSigIgn starts `cat /proc/self/status` through proc.Start, after
// proc.ClaimIgnoredSignals if args[0] is "claim", and prints the child's
// SigIgn line. It is run with SIGHUP and SIGINT inherited as ignored.
func helperSigIgn(args []string) int {
	if len(args) > 0 && args[0] == "claim" {
		defer proc.ClaimIgnoredSignals()()
	}
	var out []byte
	var mu sync.Mutex
	p, err := proc.Start(proc.Spec{Argv: []string{"/bin/cat", "/proc/self/status"}}, func(_ proc.Stream, b []byte) {
		mu.Lock()
		out = append(out, b...)
		mu.Unlock()
	}, proc.Options{})
	if err != nil {
		fmt.Println(err)
		return 3
	}
	<-p.OutputDone()
	p.Close()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "SigIgn:") {
			fmt.Println(line)
		}
	}
	return 0
}

// helperPdeath starts `sleep 1000` through proc.Start, prints its pid and
// sleeps until it is killed.
func helperPdeath([]string) int {
	p, err := proc.Start(proc.Spec{Argv: []string{"/bin/sleep", "1000"}}, nil, proc.Options{})
	if err != nil {
		fmt.Println(err)
		return 3
	}
	fmt.Printf("gc:%d\n", p.Pid())
	time.Sleep(time.Hour)
	return 0
}
