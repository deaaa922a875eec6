package e2e

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// TestCommandExecIDs: ids are per connection, a running id cannot be
// reused, and the follow-ups check the mode of the command.
func TestCommandExecIDs(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		id := c.send("command/exec", execParams(`printf up; sleep 30`, "processId", "shared-process", "streamStdoutStderr", true))
		c.waitDelta("shared-process", "stdout", "up")
		for _, tc := range []struct {
			method string
			params map[string]any
			want   string
		}{
			{"command/exec", execParams("true", "processId", "shared-process"), `-32600 duplicate active command/exec process id: "shared-process"`},
			{"command/exec/write", map[string]any{"processId": "shared-process", "deltaBase64": "eA=="}, "-32600 stdin streaming is not enabled for this command/exec"},
			{"command/exec/write", map[string]any{"processId": "shared-process", "closeStdin": true}, "-32600 stdin streaming is not enabled for this command/exec"},
			{"command/exec/resize", map[string]any{"processId": "shared-process", "size": map[string]any{"rows": 2, "cols": 2}}, "-32600 failed to resize PTY: process is not attached to a PTY"},
		} {
			if got := errorOf(c.call(tc.method, tc.params)); got != tc.want {
				t.Fatalf("%s: got %s, want %s", tc.method, got, tc.want)
			}
		}

		// Another connection neither sees nor disturbs it, and may use the id.
		other := cxStdio(t)
		other.call("initialize", map[string]any{"clientName": "e2e"})
		other.write(`{"method":"initialized","params":{}}`)
		if got := errorOf(other.call("command/exec/terminate", map[string]any{"processId": "shared-process"})); got != `-32600 no active command/exec for process id "shared-process"` {
			t.Fatalf("other connection: %s", got)
		}
		if got := result(t, other.call("command/exec", execParams("printf mine", "processId", "shared-process"))); got != `{"exitCode":0,"stderr":"","stdout":"mine"}` {
			t.Fatalf("other connection's own run: %s", got)
		}
		if got := result(t, c.call("command/exec/terminate", map[string]any{"processId": "shared-process"})); got != `{}` {
			t.Fatalf("terminate: %s", got)
		}
		if got := result(t, c.wait(id, 10*time.Second)); got != `{"exitCode":137,"stderr":"","stdout":""}` {
			t.Fatalf("result %s", got)
		}
	})
}

// TestCommandExecStdinClose: data after closeStdin is refused, a second
// close is fine; on a PTY closeStdin gives an empty line, then EOF.
func TestCommandExecStdinClose(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		id := c.send("command/exec", execParams(`printf ready; cat >/dev/null; sleep 0.5; printf done`, "processId", "w", "streamStdin", true, "streamStdoutStderr", true))
		c.waitDelta("w", "stdout", "ready")
		result(t, c.call("command/exec/write", map[string]any{"processId": "w", "closeStdin": true}))
		if got := errorOf(c.call("command/exec/write", map[string]any{"processId": "w", "deltaBase64": "eA=="})); got != "-32600 stdin is already closed" {
			t.Fatalf("data after close: %s", got)
		}
		result(t, c.call("command/exec/write", map[string]any{"processId": "w", "closeStdin": true, "deltaBase64": ""}))
		result(t, c.wait(id, 10*time.Second))
		if out, _ := c.deltas("w", "stdout"); out != "readydone" {
			t.Fatalf("stdout %q", out)
		}

		id = c.send("command/exec", execParams(`stty -echo; printf ready; n=0; while read l; do n=$((n+1)); printf "[$l]"; done; printf "eof$n"`, "processId", "pt", "tty", true))
		c.waitDelta("pt", "stdout", "ready")
		// Either answer may come first: the child reads to EOF and exits
		// as soon as the write is queued.
		w := c.send("command/exec/write", map[string]any{"processId": "pt", "deltaBase64": base64.StdEncoding.EncodeToString([]byte("a\n")), "closeStdin": true})
		res := c.waitEach(10*time.Second, id, w)
		result(t, res[w])
		result(t, res[id])
		if out, _ := c.deltas("pt", "stdout"); !strings.HasSuffix(strings.ReplaceAll(out, "\r", ""), "[a][]eof2") {
			t.Fatalf("pty stdout %q", out)
		}
	})
}

// TestCommandExecDrain: a background child holding stdout delays the
// response by the 2 s drain; its output within the drain is kept, later
// output is lost, and it is killed.
func TestCommandExecDrain(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		start := time.Now()
		got := result(t, c.call("command/exec", execParams(`(sleep 0.5; printf early; sleep 5; printf late) & printf main`)))
		took := time.Since(start)
		if got != `{"exitCode":0,"stderr":"","stdout":"mainearly"}` || took < 2*time.Second || took > 5*time.Second {
			t.Fatalf("got %s after %v", got, took)
		}
	})
}

// TestCommandExecDefaultTimeout: without timeoutMs a command is killed
// after 10 s with exit code 124.
func TestCommandExecDefaultTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 10 s")
	}
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		start := time.Now()
		got := result(t, c.wait(c.send("command/exec", execParams(`printf slow; exec sleep 60`)), 20*time.Second))
		if took := time.Since(start); got != `{"exitCode":124,"stderr":"","stdout":"slow"}` || took < 10*time.Second || took > 15*time.Second {
			t.Fatalf("got %s after %v", got, took)
		}
	})
}

// TestCommandExecNoLongerRunning: a follow-up that comes while the output
// drains after the exit waits for the command's response, then fails.
func TestCommandExecNoLongerRunning(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, c *cx) {
		id := c.send("command/exec", execParams(`sleep 30 & printf main`, "processId", "d", "streamStdoutStderr", true))
		c.waitDelta("d", "stdout", "main")
		time.Sleep(300 * time.Millisecond) // the shell has exited; sleep holds stdout
		tid := c.send("command/exec/terminate", map[string]any{"processId": "d"})
		if got := result(t, c.wait(id, 10*time.Second)); got != `{"exitCode":0,"stderr":"","stdout":""}` {
			t.Fatalf("result %s", got)
		}
		if got := errorOf(c.wait(tid, 5*time.Second)); got != `-32600 command/exec "d" is no longer running` {
			t.Fatalf("terminate during the drain: %s", got)
		}
	})
}
