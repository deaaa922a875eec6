package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcessBasics(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()

	t.Run("stdout stderr exit code", func(t *testing.T) {
		var res map[string]string
		c.ok("process/start", startParams("p1", "/bin/sh", "-c", "printf out; printf err >&2; exit 7"), &res)
		if res["processId"] != "p1" || res["sandboxType"] != "none" {
			t.Fatalf("start result %v", res)
		}
		evs := c.events("p1", 10*time.Second)
		out, code := checkEvents(t, evs)
		if code != 7 || !strings.Contains(out, "out") || !strings.Contains(out, "err") {
			t.Fatalf("out %q code %d", out, code)
		}
		streams := map[string]bool{}
		for _, e := range evs {
			if e.Method == "process/output" {
				streams[e.Params["stream"].(string)] = true
			}
		}
		if !streams["stdout"] || !streams["stderr"] {
			t.Fatalf("streams %v", streams)
		}
		// A finished process: read returns the final state, terminate is false.
		var rd struct {
			Chunks   []map[string]any `json:"chunks"`
			NextSeq  int              `json:"nextSeq"`
			Exited   bool             `json:"exited"`
			ExitCode *int             `json:"exitCode"`
			Closed   bool             `json:"closed"`
		}
		c.ok("process/read", map[string]any{"processId": "p1", "afterSeq": 0}, &rd)
		if !rd.Exited || !rd.Closed || rd.ExitCode == nil || *rd.ExitCode != 7 || rd.NextSeq != len(evs)+1 {
			t.Fatalf("read %+v", rd)
		}
		var term map[string]bool
		c.ok("process/terminate", map[string]any{"processId": "p1"}, &term)
		if term["running"] {
			t.Fatalf("terminate of a finished process: %v", term)
		}
		c.fail("process/start", startParams("p1", "/bin/true"), -32600, "process p1 already exists")
	})

	t.Run("exit codes", func(t *testing.T) {
		for _, want := range []int{0, 1, 4, 5, 44} {
			id := fmt.Sprintf("code-%d", want)
			_, code := c.run(id, startParams(id, "/bin/sh", "-c", fmt.Sprintf("exec >&- 2>&-; exit %d", want)))
			if code != want {
				t.Fatalf("exit %d reported as %d", want, code)
			}
		}
		_, code := c.run("sig", startParams("sig", "/bin/sh", "-c", "kill -TERM $$"))
		if code != 128+int(syscall.SIGTERM) {
			t.Fatalf("signal death reported as %d", code)
		}
	})

	t.Run("errors", func(t *testing.T) {
		c.fail("process/start", startParams("nx", "/no/such/program"), -32603, "No such file or directory (os error 2)")
		p := startParams("nocwd", "/bin/true")
		p["cwd"] = "/no/such/dir"
		c.fail("process/start", p, -32603, "No such file or directory (os error 2)")
		c.fail("process/read", map[string]any{"processId": "unknown"}, -32600, "unknown process id unknown")
		var w map[string]string
		c.ok("process/write", map[string]any{"processId": "unknown", "chunk": "", "writeId": "1"}, &w)
		if w["status"] != "unknownProcess" {
			t.Fatalf("write to unknown: %v", w)
		}
		c.ok("process/signal", map[string]any{"processId": "unknown", "signal": "interrupt"}, nil)
	})

	t.Run("cwd forms and env", func(t *testing.T) {
		dir := t.TempDir()
		p := startParams("cwd1", "/bin/sh", "-c", "pwd; env | sort")
		p["cwd"] = "file://" + strings.ReplaceAll(dir, " ", "%20")
		p["env"] = map[string]string{"PATH": "/usr/bin:/bin", "ONLY": "me"}
		out, _ := c.run("cwd1", p)
		if !strings.HasPrefix(out, dir+"\n") || !strings.Contains(out, "ONLY=me") || strings.Contains(out, "CODEX_E2E_MARKER") || strings.Contains(out, "HOME=") {
			t.Fatalf("output %q", out)
		}
		p = startParams("cwd2", "/bin/sh", "-c", "pwd; env")
		p["cwd"] = dir
		p["envPolicy"] = map[string]any{"inherit": "all", "ignoreDefaultExcludes": false, "exclude": []string{"PATH"}, "set": map[string]string{"SET_ME": "1"}, "includeOnly": []string{}}
		p["env"] = map[string]string{"PATH": "/bin", "NODE_REPL_AUTH_TOKEN": "x"}
		out, _ = c.run("cwd2", p)
		for _, want := range []string{dir + "\n", "CODEX_E2E_MARKER=1", "SET_ME=1", "PATH=/bin\n"} {
			if !strings.Contains(out, want) {
				t.Fatalf("output %q lacks %q", out, want)
			}
		}
		if strings.Contains(out, "NODE_REPL_AUTH_TOKEN") {
			t.Fatalf("non-inheritable variable leaked: %q", out)
		}
	})

	t.Run("only fds 0 1 2", func(t *testing.T) {
		out, _ := c.run("fds", startParams("fds", "/bin/sh", "-c", "ls /proc/$$/fd"))
		if strings.Fields(out)[0] != "0" || len(strings.Fields(out)) != 3 {
			t.Fatalf("child fds: %q", out)
		}
	})
}

func TestPTY(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	p := startParams("tty1", "/bin/sh", "-c", "tty; stty size; read line; echo got:$line; exit 4")
	p["tty"] = true
	c.ok("process/start", p, nil)
	waitOutput(t, c, "tty1", "24 80")
	var w map[string]string
	c.ok("process/write", map[string]any{"processId": "tty1", "chunk": base64.StdEncoding.EncodeToString([]byte("ping\n")), "writeId": "1"}, &w)
	if w["status"] != "accepted" {
		t.Fatal(w)
	}
	// A retried writeId is accepted without writing again.
	c.ok("process/write", map[string]any{"processId": "tty1", "chunk": base64.StdEncoding.EncodeToString([]byte("ping\n")), "writeId": "1"}, &w)
	evs := c.events("tty1", 10*time.Second)
	out, code := checkEvents(t, evs)
	if code != 4 || !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "ping\r\ngot:ping\r\n") {
		t.Fatalf("code %d output %q", code, out)
	}
	for _, e := range evs {
		if e.Method == "process/output" && e.Params["stream"] != "pty" {
			t.Fatalf("pty output labelled %v", e.Params["stream"])
		}
	}

	t.Run("resize and size", func(t *testing.T) {
		p := startParams("tty2", "/bin/sh", "-c", "stty size; read x; stty size")
		p["tty"] = true
		p["size"] = map[string]int{"rows": 30, "cols": 100}
		c.ok("process/start", p, nil)
		waitOutput(t, c, "tty2", "30 100")
		c.ok("process/resize", map[string]any{"processId": "tty2", "size": map[string]int{"rows": 40, "cols": 120}}, nil)
		c.fail("process/resize", map[string]any{"processId": "tty2", "size": map[string]int{"rows": 0, "cols": 120}}, -32602, "size rows and cols must be greater than 0")
		c.ok("process/write", map[string]any{"processId": "tty2", "chunk": base64.StdEncoding.EncodeToString([]byte("\n")), "writeId": "a"}, nil)
		out, _ := checkEvents(t, c.events("tty2", 10*time.Second))
		if !strings.Contains(out, "40 120") {
			t.Fatalf("after resize: %q", out)
		}
		c.ok("process/resize", map[string]any{"processId": "tty2", "size": map[string]int{"rows": 10, "cols": 10}}, nil)
		c.fail("process/write", map[string]any{"processId": "tty2", "chunk": "", "closeStdin": true}, -32600, "closeStdin is not supported for PTY processes")
		c.run("notty", startParams("notty", "/bin/true"))
		c.fail("process/resize", map[string]any{"processId": "notty", "size": map[string]int{"rows": 1, "cols": 1}}, -32600, "process notty is not a PTY")
		p = startParams("badsize", "/bin/true")
		p["size"] = map[string]int{"rows": 1, "cols": 1}
		c.fail("process/start", p, -32602, "size requires tty: true")
	})
}

// waitOutput waits until the process's output contains want.
func waitOutput(t *testing.T, c *client, id, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		var out bytes.Buffer
		for _, n := range c.notifs {
			if n.Params["processId"] == id && n.Method == "process/output" {
				b, _ := base64.StdEncoding.DecodeString(n.Params["chunk"].(string))
				out.Write(b)
			}
		}
		c.mu.Unlock()
		if strings.Contains(out.String(), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("output of %s never contained %q", id, want)
}

func TestStdinPipe(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	data := make([]byte, 300_000)
	_, _ = rand.Read(data)
	p := startParams("cat", "/bin/cat")
	p["pipeStdin"] = true
	c.ok("process/start", p, nil)
	for i := 0; i < len(data); i += 64 << 10 {
		end := min(i+64<<10, len(data))
		c.ok("process/write", map[string]any{"processId": "cat", "chunk": base64.StdEncoding.EncodeToString(data[i:end]), "writeId": strconv.Itoa(i)}, nil)
	}
	var w map[string]string
	c.ok("process/closeStdin", map[string]any{"processId": "cat"}, &w)
	if w["status"] != "accepted" {
		t.Fatal(w)
	}
	out, code := checkEvents(t, c.events("cat", 20*time.Second))
	if code != 0 || out != string(data) {
		t.Fatalf("cat returned %d bytes (code %d), want %d identical bytes", len(out), code, len(data))
	}
	// Without pipeStdin, writes are refused with a status.
	c.ok("process/start", startParams("nostdin", "/bin/sleep", "5"), nil)
	c.ok("process/write", map[string]any{"processId": "nostdin", "chunk": "eA==", "writeId": "1"}, &w)
	if w["status"] != "stdinClosed" {
		t.Fatal(w)
	}
	c.ok("process/terminate", map[string]any{"processId": "nostdin"}, nil)
	c.events("nostdin", 10*time.Second)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startEscapee starts `sh` that launches a setsid'd sleep and prints its
// pid; it returns that pid.
func startEscapee(t *testing.T, c *client, id string) int {
	t.Helper()
	c.ok("process/start", startParams(id, "/bin/sh", "-c", "setsid sleep 1000 >/dev/null 2>&1 & echo pid=$!; exec sleep 1000"), nil)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, n := range c.notifs {
			if n.Params["processId"] == id && n.Method == "process/output" {
				b, _ := base64.StdEncoding.DecodeString(n.Params["chunk"].(string))
				if s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "pid="); ok {
					c.mu.Unlock()
					pid, _ := strconv.Atoi(s)
					if !alive(pid) {
						t.Fatalf("escapee %d not running", pid)
					}
					return pid
				}
			}
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no pid printed")
	return 0
}

func TestTerminateKillsWholeTree(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	pid := startEscapee(t, c, "tree")
	var term map[string]bool
	c.ok("process/terminate", map[string]any{"processId": "tree"}, &term)
	if !term["running"] {
		t.Fatalf("terminate of a running process: %v", term)
	}
	_, code := checkEvents(t, c.events("tree", 10*time.Second))
	if code != 137 {
		t.Fatalf("exit code %d after terminate, want 137", code)
	}
	waitGone(t, pid)

	t.Run("graceful", func(t *testing.T) {
		c.ok("process/start", startParams("g", "/bin/sleep", "1000"), nil)
		c.ok("process/terminate", map[string]any{"processId": "g", "mode": map[string]any{"type": "graceful", "timeoutMs": 2000}}, &term)
		_, code := checkEvents(t, c.events("g", 10*time.Second))
		if code != 143 {
			t.Fatalf("graceful terminate: code %d, want 143", code)
		}
		c.ok("process/start", startParams("g2", "/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"), nil)
		waitOutput(t, c, "g2", "ready")
		c.ok("process/terminate", map[string]any{"processId": "g2", "mode": map[string]any{"type": "graceful", "timeoutMs": 200}}, &term)
		if _, code := checkEvents(t, c.events("g2", 10*time.Second)); code != 137 {
			t.Fatalf("graceful terminate of a TERM-ignoring process: %d, want 137", code)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		c.ok("process/start", startParams("int", "/bin/sleep", "1000"), nil)
		c.ok("process/signal", map[string]any{"processId": "int", "signal": "interrupt"}, nil)
		if _, code := checkEvents(t, c.events("int", 10*time.Second)); code != 130 {
			t.Fatalf("interrupt: code %d, want 130", code)
		}
	})
}

func TestShutdownKillsEverything(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	pid := startEscapee(t, c, "tree")
	s.stop()
	waitGone(t, pid)
}

// children lists the direct children of pid (any thread), zombies included.
func children(pid int) []string {
	var out []string
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// assertNoChildren fails unless the server has no child processes left
// (running or zombie) within a few seconds, but its watchdog.
func assertNoChildren(t *testing.T, s *server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		kids := slices.DeleteFunc(children(s.cmd.Process.Pid), func(pid string) bool {
			return pid == strconv.Itoa(watchdogOf(s.cmd.Process.Pid))
		})
		if len(kids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server still has children %v", kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNoZombiesAfterTerminate(t *testing.T) {
	s := startServer(t)
	c := dial(t, s.URL, nil)
	c.handshake()
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("z%d", i)
		p := startParams(id, "/bin/sh", "-c", "sleep 1000 & sleep 1000")
		p["tty"] = i%2 == 0
		c.ok("process/start", p, nil)
		c.ok("process/terminate", map[string]any{"processId": id}, nil)
		if _, code := checkEvents(t, c.events(id, 10*time.Second)); code != 137 {
			t.Fatalf("%s: exit %d", id, code)
		}
	}
	for i := 0; i < 20; i++ {
		c.run(fmt.Sprintf("t%d", i), startParams(fmt.Sprintf("t%d", i), "/bin/true"))
	}
	assertNoChildren(t, s)
}
