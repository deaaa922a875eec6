package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The graceful drain of docs/operations.md §5. Each test sets the grace
// through CODEX_EXEC_SERVER_SHUTDOWN_GRACE, so that a server without the
// flag still starts and the test fails on the behaviour it checks.

// trapScript traps TERM: it writes DIR/term-$1 and "got-term", and exits 0.
// It writes DIR/ready-$1 and says "ready" once the trap is set, then loops
// in sleeps, which the TERM to its process group ends at once.
const trapScript = `trap 'echo got-term; : > "$0/term-$1"; exit 0' TERM; : > "$0/ready-$1"; echo ready; while :; do sleep 1; done`

// trapArgv is the argv of trapped command n; marker names the test's
// commands in the /proc scan.
func trapArgv(dir, marker string, n int) []string {
	return []string{"/bin/sh", "-c", trapScript, dir, fmt.Sprintf("%s-%d", marker, n)}
}

// rawWS is a WebSocket client that reads only when told to: once it stops,
// it is a stalled client, whose socket buffers fill up.
type rawWS struct {
	t  *testing.T
	ws *websocket.Conn
	id int
}

func dialRaw(t *testing.T, url string) *rawWS {
	t.Helper()
	// A small receive buffer: the socket is full soon after the client
	// stops reading.
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	ws, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { _ = ws.CloseNow() })
	r := &rawWS{t: t, ws: ws}
	r.call("initialize", map[string]any{"clientName": "stalled"}, nil)
	r.write(map[string]any{"method": "initialized"})
	return r
}

func (r *rawWS) write(v any) {
	b, _ := json.Marshal(v)
	if err := r.ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		r.t.Fatal(err)
	}
}

// call sends a request and reads until its answer, counting the "ready"
// outputs seen on the way into ready.
func (r *rawWS) call(method string, params any, ready *int) {
	r.t.Helper()
	r.id++
	r.write(map[string]any{"id": r.id, "method": method, "params": params})
	for {
		m := r.read()
		if m["method"] == "process/output" && ready != nil {
			*ready++
		}
		if m["id"] == float64(r.id) {
			if m["error"] != nil {
				r.t.Fatalf("%s: %v", method, m["error"])
			}
			return
		}
	}
}

func (r *rawWS) read() map[string]any {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, b, err := r.ws.Read(ctx)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// procsWith lists the pids whose command line contains marker.
func procsWith(marker string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// waitExit waits up to limit for the server to exit and returns how long
// it took from t0: until its process ended (a zombie, or reaped), which
// may be before Wait returns (that also waits for every holder of its
// stderr pipe).
func (s *server) waitExit(t0 time.Time, limit time.Duration) time.Duration {
	s.t.Helper()
	pid := s.cmd.Process.Pid
	var took time.Duration
	deadline := time.After(limit)
	for took == 0 {
		select {
		case <-s.done:
			took = time.Since(t0)
		case <-deadline:
			s.t.Fatalf("server still running %v after SIGTERM", limit)
		case <-time.After(2 * time.Millisecond):
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || strings.Contains(string(b), ") Z ") {
				took = time.Since(t0)
			}
		}
	}
	select {
	case <-s.done:
	case <-time.After(limit):
		s.t.Fatalf("server's Wait did not return %v after its exit", limit)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		s.t.Fatalf("exit status %d after the drain, want 0", code)
	}
	return took
}

// The acceptance test of the drain: 100 commands that trap TERM, half of
// them on a client that stops reading its socket while another command
// floods it. SIGTERM: every command runs its trap, the healthy client gets
// exited and closed for each of its commands and then the close 1001, no
// process is left, and the server exits 0 within the grace plus 100 ms.
// Before, every command was SIGKILLed at once (no trap ran).
func TestDrainTrappedCommandsStalledClient(t *testing.T) {
	const grace = 2 * time.Second
	dir := t.TempDir()
	marker := fmt.Sprintf("drain-marker-%d", os.Getpid())
	s := startServerWith(t, binary, func(c *exec.Cmd) {
		c.Env = append(c.Env, "CODEX_EXEC_SERVER_SHUTDOWN_GRACE="+grace.String())
	})
	healthy := dial(t, s.URL, nil)
	healthy.handshake()
	stalled := dialRaw(t, s.URL)
	ready := 0
	for i := range 100 {
		p := startParams(fmt.Sprint("t", i), trapArgv(dir, marker, i)...)
		if i%2 == 0 {
			healthy.ok("process/start", p, nil)
		} else {
			stalled.call("process/start", p, &ready)
		}
	}
	stalled.call("process/start", startParams("flood", "/usr/bin/yes", marker), nil)
	// The stalled client reads no more from here on.
	deadline := time.Now().Add(30 * time.Second)
	for healthy.countOutputs() < 50 || !allReady(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("commands not ready: %d healthy outputs", healthy.countOutputs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the flood fills the stalled socket
	t0 := time.Now()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var allTermAt time.Duration
	for allTermAt == 0 && time.Since(t0) < grace+5*time.Second {
		if n, _ := filepath.Glob(filepath.Join(dir, "term-*")); len(n) == 100 {
			allTermAt = time.Since(t0)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := s.waitExit(t0, grace+10*time.Second)
	terms, _ := filepath.Glob(filepath.Join(dir, "term-*"))
	t.Logf("exit %v after SIGTERM (grace %v); %d of 100 commands saw TERM (all by %v)", took.Round(time.Millisecond), grace, len(terms), allTermAt.Round(time.Millisecond))
	if len(terms) != 100 {
		t.Errorf("%d of 100 commands saw TERM", len(terms))
	}
	if slack := exitSlack(); took > grace+slack {
		t.Errorf("exit %v after SIGTERM, want within grace %v + %v", took, grace, slack)
	}
	if left := procsWith(marker); len(left) > 0 {
		t.Errorf("processes left after the drain: %v", left)
	}
	healthy.checkDrained(t, 50)
}

// exitSlack is what the exit may take beyond the grace: 100 ms with
// CODEX_E2E_STRICT_TIMING=1 (the bound, met by an idle machine),
// 1 s otherwise: the race-built server spends 70-100 ms after the grace
// when this test runs alone on a two-core machine, but 437 ms in a
// fresh-clone make test, where every package runs at once; a normal build
// spends 36-50 ms (docs/operations.md §5). A drain that waited for the
// stalled client would take seconds more, which 1 s still catches.
func exitSlack() time.Duration {
	if os.Getenv("CODEX_E2E_STRICT_TIMING") == "1" {
		return 100 * time.Millisecond
	}
	return time.Second
}

// allReady reports whether every trapped command has set its trap.
func allReady(dir string) bool {
	n, _ := filepath.Glob(filepath.Join(dir, "ready-*"))
	return len(n) == 100
}

// countOutputs counts the process/output notifications received so far.
func (c *client) countOutputs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.notifs {
		if m.Method == "process/output" {
			n++
		}
	}
	return n
}

// checkDrained checks that the connection got exited 0 and closed for
// each of its n commands, then a close with status 1001 (going away).
func (c *client) checkDrained(t *testing.T, n int) {
	t.Helper()
	var err error
	select {
	case err = <-c.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("connection not closed after the drain")
	}
	if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway {
		t.Errorf("close status %v (%v), want 1001 going away", st, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	exited, closed := map[any]bool{}, map[any]bool{}
	for _, m := range c.notifs {
		switch m.Method {
		case "process/exited":
			if m.Params["exitCode"] != float64(0) {
				t.Errorf("%v exited %v, want 0 (its TERM trap)", m.Params["processId"], m.Params["exitCode"])
			}
			exited[m.Params["processId"]] = true
		case "process/closed":
			closed[m.Params["processId"]] = true
		}
	}
	if len(exited) != n || len(closed) != n {
		t.Errorf("got exited for %d and closed for %d of %d commands before the close", len(exited), len(closed), n)
	}
}

// httpStatus GETs url and returns the status, or -1 if the request failed.
func httpStatus(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b := make([]byte, 256)
	n, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:n])
}

// During the drain the server says it is not ready but alive, refuses new
// connections and new processes with a clear reason, kills a command that
// ignores TERM when the grace ends, tells its client, and exits 0. Before,
// the listener closed at once (no 503) and the command was SIGKILLed.
func TestDrainProbesAndRefusals(t *testing.T) {
	const grace = 3 * time.Second
	s := startServerWith(t, binary, func(c *exec.Cmd) {
		c.Env = append(c.Env, "CODEX_EXEC_SERVER_SHUTDOWN_GRACE="+grace.String())
	})
	base := httpURL(s.URL)
	if code, _ := httpStatus(base + "/livez"); code != 200 {
		t.Fatalf("/livez before the drain: %d, want 200", code)
	}
	c := dial(t, s.URL, nil)
	c.handshake()
	c.ok("process/start", startParams("stubborn", "/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done"), nil)
	for c.countOutputs() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	if code, body := httpStatus(base + "/readyz"); code != 503 {
		t.Errorf("/readyz during the drain: %d %q, want 503", code, body)
	}
	if code, body := httpStatus(base + "/livez"); code != 200 {
		t.Errorf("/livez during the drain: %d %q, want 200", code, body)
	}
	_, resp, err := websocket.Dial(context.Background(), s.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != 503 {
		t.Errorf("new connection during the drain: %v %v, want 503", resp, err)
	}
	c.fail("process/start", startParams("late", "/bin/true"), -32600, "server is shutting down")
	if _, code := checkEvents(t, c.events("stubborn", grace+5*time.Second)); code != 137 {
		t.Errorf("TERM-ignoring command: exit %d, want 137 (SIGKILL at the grace's end)", code)
	}
	killedAt := time.Since(t0)
	took := s.waitExit(t0, grace+10*time.Second)
	t.Logf("killed after %v, exit after %v (grace %v)", killedAt.Round(time.Millisecond), took.Round(time.Millisecond), grace)
	if killedAt < grace-100*time.Millisecond {
		t.Errorf("TERM-ignoring command killed %v after SIGTERM, before the grace %v", killedAt, grace)
	}
	if err := <-c.closed; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("close %v, want 1001 going away", err)
	}
}

// A second SIGTERM or SIGINT during the drain skips the rest of the grace.
func TestDrainSecondSignalSkipsGrace(t *testing.T) {
	s := startServerWith(t, binary, func(c *exec.Cmd) {
		c.Env = append(c.Env, "CODEX_EXEC_SERVER_SHUTDOWN_GRACE=60s")
	})
	c := dial(t, s.URL, nil)
	c.handshake()
	c.ok("process/start", startParams("stubborn", "/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done"), nil)
	for c.countOutputs() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(500 * time.Millisecond)
	select {
	case <-s.done:
		t.Fatal("the server exited at the first SIGTERM, with the grace not spent")
	default:
	}
	t0 := time.Now()
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	took := s.waitExit(t0, 5*time.Second)
	t.Logf("exit %v after the second signal", took.Round(time.Millisecond))
	if _, code := checkEvents(t, c.events("stubborn", 5*time.Second)); code != 137 {
		t.Errorf("exit %d, want 137", code)
	}
}

// `codex exec run --server` whose server drains: the command's TERM trap
// runs, and exec run exits at once with the command's status. Before, the
// command was SIGKILLed unseen and exec run waited out its 5 s of
// recovery and exited 255.
func TestExecRunServerDrain(t *testing.T) {
	s := startServerWith(t, binary, func(c *exec.Cmd) {
		c.Env = append(c.Env, "CODEX_EXEC_SERVER_SHUTDOWN_GRACE=5s")
	})
	cmd := exec.Command(binary, "exec", "run", "--server", s.URL, "--", "sh", "-c", `trap "echo trapped; exit 7" TERM; echo ready; while :; do sleep 0.1; done`)
	cmd.Env = []string{raceEnv, "PATH=/usr/bin:/bin"}
	out, started := ownStdout(t, cmd)
	defer out.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started()
	lines := make(chan string, 16)
	go readLines(out, lines)
	waitLine(t, lines, "ready")
	t0 := time.Now()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var rest []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		for l := range lines {
			rest = append(rest, l)
		}
	}()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("exec run still running 10 s after its server's SIGTERM")
	}
	took := time.Since(t0)
	t.Logf("exec run exited %d after %v", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))
	if code := cmd.ProcessState.ExitCode(); code != 7 || took > 2*time.Second {
		t.Errorf("exec run exit %d after %v, want 7 (the TERM trap's) at once", code, took)
	}
	select { // every line exec run wrote, up to the EOF of its exit
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("exec run's stdout still open 10 s after its exit")
	}
	if !strings.Contains(strings.Join(rest, "\n"), "trapped") {
		t.Errorf("the trap's output did not reach exec run: %q", rest)
	}
}

// What a finished command left running (`job &`) belongs to its session's
// trees, so the drain treats it as one: it gets SIGTERM and the grace, not
// only the SIGKILL of the session's end. The job traps TERM and writes a
// file; before, the drain signalled only live processes and the job died
// unseen at the end of the session.
func TestDrainTermsLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, binary, func(c *exec.Cmd) {
		c.Env = append(c.Env, "CODEX_EXEC_SERVER_SHUTDOWN_GRACE=10s")
	})
	c := dial(t, s.URL, nil)
	c.handshake()
	m := marker(t)
	job := `(trap ': > "$0/term-job"; exit 0' TERM; : > "$0/ready-job"; while :; do sleep 0.05; done; sleep ` + m + `) >/dev/null 2>&1 & exit 0`
	c.run("parent", startParams("parent", "/bin/sh", "-c", job, dir))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "ready-job")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background job never started")
		}
	}
	t0 := time.Now()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	took := s.waitExit(t0, 15*time.Second)
	if _, err := os.Stat(filepath.Join(dir, "term-job")); err != nil {
		t.Fatalf("the job left by a finished command got no SIGTERM from the drain (exit after %v)", took)
	}
	if took > 5*time.Second {
		t.Errorf("the drain took %v: it should end once the job is gone, not at the 10 s grace", took)
	}
}
