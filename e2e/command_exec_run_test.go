package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCommandExecBuffered(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		got := result(t, c.call("command/exec", execParams(`printf legacy-out; printf legacy-err >&2; exit 3`)))
		if want := `{"exitCode":3,"stderr":"legacy-err","stdout":"legacy-out"}`; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		got = result(t, c.call("command/exec", execParams(`printf "$A/${HOME-unset}"`, "env", map[string]any{"A": "x", "HOME": nil})))
		if !strings.Contains(got, `"stdout":"x/unset"`) {
			t.Fatalf("env overlay: %s", got)
		}
		wd, _ := os.Getwd() // the server's cwd
		got = result(t, c.call("command/exec", execParams(`pwd`, "cwd", "../e2e/..")))
		if want := `"stdout":"` + filepath.Dir(wd) + `\n"`; !strings.Contains(got, want) {
			t.Fatalf("relative cwd: %s, want %s", got, want)
		}
	})
}

func TestCommandExecCap(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		got := result(t, c.call("command/exec", execParams(`printf abcdef; printf uvwxyz >&2`, "outputBytesCap", 5)))
		if want := `{"exitCode":0,"stderr":"uvwxy","stdout":"abcde"}`; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		for _, script := range []string{`printf abcdef`, `printf abcde`} {
			got = result(t, c.call("command/exec", execParams(script, "outputBytesCap", 5, "processId", "s", "streamStdoutStderr", true)))
			if want := `{"exitCode":0,"stderr":"","stdout":""}`; got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
			out, reached := c.deltas("s", "stdout")
			if out != "abcde" || !reached {
				t.Fatalf("%s: deltas %q capReached %v", script, out, reached)
			}
			c.notifs = nil
		}
	})
}

func TestCommandExecTimeout(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		start := time.Now()
		got := result(t, c.call("command/exec", execParams(`printf before; trap '' TERM; sleep 30`, "timeoutMs", 3000)))
		if want := `{"exitCode":124,"stderr":"","stdout":"before"}`; got != want || time.Since(start) > 15*time.Second {
			t.Fatalf("got %s after %v, want %s", got, time.Since(start), want)
		}
		got = result(t, c.call("command/exec", execParams(`sleep 30`, "timeoutMs", 0)))
		if !strings.Contains(got, `"exitCode":124`) {
			t.Fatalf("timeoutMs 0: %s", got)
		}
	})
}

func TestCommandExecStreamingStdin(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		id := c.send("command/exec", execParams(`printf out-start; printf err-start >&2; read l; printf "out:$l"; printf "err:$l" >&2`,
			"processId", "p", "streamStdin", true, "streamStdoutStderr", true))
		c.waitDelta("p", "stdout", "out-start")
		c.waitDelta("p", "stderr", "err-start")
		// The command may read the line, exit and be answered before the
		// write's own answer goes out: the two answers come in either order.
		wid := c.send("command/exec/write", map[string]any{"processId": "p", "deltaBase64": base64.StdEncoding.EncodeToString([]byte("hello\n")), "closeStdin": true})
		answers := c.waitEach(10*time.Second, wid, id)
		if got := result(t, answers[wid]); got != `{}` {
			t.Fatalf("write: %s", got)
		}
		if got := result(t, answers[id]); got != `{"exitCode":0,"stderr":"","stdout":""}` {
			t.Fatalf("result %s", got)
		}
		if out, _ := c.deltas("p", "stdout"); out != "out-startout:hello" {
			t.Fatalf("stdout deltas %q", out)
		}
		if e := errorOf(c.call("command/exec/write", map[string]any{"processId": "p", "closeStdin": true})); e != `-32600 no active command/exec for process id "p"` {
			t.Fatalf("write after end: %s", e)
		}
	})
}

func TestCommandExecTerminate(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		for _, tty := range []bool{false, true} {
			id := c.send("command/exec", execParams(`printf started; sleep 30`, "processId", "k", "tty", tty, "streamStdoutStderr", true))
			c.waitDelta("k", "stdout", "started")
			if got := result(t, c.call("command/exec/terminate", map[string]any{"processId": "k"})); got != `{}` {
				t.Fatalf("terminate: %s", got)
			}
			if got := result(t, c.wait(id, 10*time.Second)); got != `{"exitCode":137,"stderr":"","stdout":""}` {
				t.Fatalf("tty %v: %s", tty, got)
			}
			c.notifs = nil
		}
	})
}

func TestCommandExecPTYResize(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		id := c.send("command/exec", execParams(`[ -t 0 ] && printf tty; stty size; read l; stty size; printf "got:$l"`,
			"processId", "t", "tty", true, "size", map[string]any{"rows": 31, "cols": 101}))
		c.waitDelta("t", "stdout", "31 101")
		if got := result(t, c.call("command/exec/resize", map[string]any{"processId": "t", "size": map[string]any{"rows": 45, "cols": 132}})); got != `{}` {
			t.Fatalf("resize: %s", got)
		}
		// The write's answer and the run's may come in either order: the
		// child can read the line and exit before the write is answered.
		w := c.send("command/exec/write", map[string]any{"processId": "t", "deltaBase64": base64.StdEncoding.EncodeToString([]byte("echoed\n"))})
		res := c.waitEach(10*time.Second, id, w)
		result(t, res[w])
		if got := result(t, res[id]); got != `{"exitCode":0,"stderr":"","stdout":""}` {
			t.Fatalf("result %s", got)
		}
		out, _ := c.deltas("t", "stdout")
		if !strings.HasPrefix(out, "tty31 101") || !strings.Contains(out, "45 132") || !strings.Contains(out, "got:echoed") {
			t.Fatalf("pty output %q", out)
		}
	})
}

func TestCommandExecCloseKills(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		c.send("command/exec", execParams(`echo $$; exec sleep 60`, "processId", "bg", "streamStdoutStderr", true))
		c.waitDelta("bg", "stdout", "\n")
		out, _ := c.deltas("bg", "stdout")
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatal(err)
		}
		c.close()
		deadline := time.Now().Add(10 * time.Second)
		for syscall.Kill(pid, 0) == nil {
			if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(stat), ") Z ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d still alive after the connection closed", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
