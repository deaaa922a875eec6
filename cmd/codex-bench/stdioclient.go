// A JSON-RPC client over a child's stdin and stdout (one JSON message per
// line): our `exec-server --listen stdio` and the reference `app-server`,
// for the command/exec rows.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// StdioClient runs one server process and talks to it over its stdio.
// Requests may be sent from any goroutine; one reader goroutine routes
// responses by id and drops notifications.
type StdioClient struct {
	Label string
	Pid   int

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	wmu    sync.Mutex // serialises writes to stdin
	nextID atomic.Int64
	done   chan struct{} // closed when the reader has returned and the process was reaped

	onNotify atomic.Pointer[func(line []byte)] // sees every notification line, when set

	mu      sync.Mutex
	pending map[int64]chan *Response // guarded by mu
	readErr error                    // guarded by mu
}

// StartStdio starts bin with args, a clean environment and a private
// CODEX_HOME under scratch, and its stderr in scratch/<label>.stderr.
func StartStdio(label, bin string, args []string, scratch string) (*StdioClient, error) {
	home, _ := os.UserHomeDir()
	codexHome := filepath.Join(scratch, label+"-codex-home")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = serverEnv(home, codexHome)
	return startStdioCmd(label, cmd, scratch)
}

// startStdioCmd starts cmd (its environment set by the caller) in scratch
// with its stderr in scratch/<label>.stderr.
func startStdioCmd(label string, cmd *exec.Cmd, scratch string) (*StdioClient, error) {
	errFile, err := os.Create(filepath.Join(scratch, label+".stderr"))
	if err != nil {
		return nil, err
	}
	defer errFile.Close()
	cmd.Dir = scratch
	cmd.Stderr = errFile
	stdin, stdout, err := startPiped(cmd)
	if err != nil {
		return nil, err
	}
	c := &StdioClient{Label: label, Pid: cmd.Process.Pid, cmd: cmd, stdin: stdin, done: make(chan struct{}), pending: map[int64]chan *Response{}}
	go func() {
		c.readLoop(stdout)
		_ = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Close ends the server: stdin closed (both servers exit at EOF), then
// SIGTERM after 5 s and SIGKILL after 10 s.
func (c *StdioClient) Close() {
	_ = c.stdin.Close()
	for _, step := range []struct {
		wait time.Duration
		sig  syscall.Signal
	}{{5 * time.Second, syscall.SIGTERM}, {5 * time.Second, syscall.SIGKILL}} {
		select {
		case <-c.done:
			return
		case <-time.After(step.wait):
			_ = c.cmd.Process.Signal(step.sig)
		}
	}
	<-c.done
}

// readLoop reads one message per line until EOF. Lines of any length are
// accepted (a buffered 64 MiB result is one line).
func (c *StdioClient) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	var line []byte
	for {
		line = line[:0]
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			line = append(line, part...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil {
			c.fail(err)
			return
		}
		c.handle(line, time.Now())
	}
}

// fail records the read error and releases every waiter.
func (c *StdioClient) fail(err error) {
	if errors.Is(err, io.EOF) {
		err = errors.New("the server closed its stdout")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr == nil {
		c.readErr = err
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// handle routes one line. Small messages are decoded with encoding/json;
// a large one is a command/exec result, kept raw, its id found at either
// end (servers order the members differently).
func (c *StdioClient) handle(line []byte, now time.Time) {
	if f := c.onNotify.Load(); f != nil && bytes.HasPrefix(line, []byte(`{"method":`)) {
		(*f)(line)
		return
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if len(line) < 64<<10 {
		if json.Unmarshal(line, &env) != nil || env.Method != "" {
			return
		}
	} else {
		env.ID = bigLineID(line)
		env.Result = append(json.RawMessage(nil), line...)
	}
	id, err := strconv.ParseInt(string(env.ID), 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- &Response{Result: env.Result, Err: env.Error, At: now}
	}
}

// bigLineID finds a numeric top-level id in `{"id":N,…` or `…,"id":N}`.
func bigLineID(line []byte) []byte {
	line = bytes.TrimRight(line, "\r\n ")
	if v, ok := bytes.CutPrefix(line, []byte(`{"id":`)); ok {
		if i := bytes.IndexByte(v, ','); i > 0 {
			return v[:i]
		}
	}
	if i := bytes.LastIndex(line, []byte(`"id":`)); i >= 0 && bytes.HasSuffix(line, []byte("}")) {
		return line[i+len(`"id":`) : len(line)-1]
	}
	return nil
}

// Send writes a request and returns its response channel and the time the
// line was written.
func (c *StdioClient) Send(method string, params any) (<-chan *Response, time.Time, error) {
	id := c.nextID.Add(1)
	data, err := json.Marshal(request{ID: id, Method: method, Params: params})
	if err != nil {
		return nil, time.Time{}, err
	}
	data = append(data, '\n')
	ch := make(chan *Response, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return nil, time.Time{}, fatal(fmt.Errorf("%s: connection is down: %w", c.Label, err))
	}
	c.pending[id] = ch
	c.mu.Unlock()
	c.wmu.Lock()
	sent := time.Now()
	_, err = c.stdin.Write(data)
	c.wmu.Unlock()
	if err != nil {
		return nil, sent, fatal(fmt.Errorf("%s: write %s: %w", c.Label, method, err))
	}
	return ch, sent, nil
}

// Call sends a request and waits for its response; an error response
// becomes an *RPCError.
func (c *StdioClient) Call(ctx context.Context, method string, params any) (*Response, time.Time, error) {
	ch, sent, err := c.Send(method, params)
	if err != nil {
		return nil, sent, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, sent, fatal(fmt.Errorf("%s: connection lost", c.Label))
		}
		if r.Err != nil {
			return r, sent, r.Err
		}
		return r, sent, nil
	case <-ctx.Done():
		return nil, sent, ctx.Err()
	}
}

// Notify sends a notification; nil params are left out (the app-server's
// `initialized` has none).
func (c *StdioClient) Notify(method string, params any) error {
	data, err := json.Marshal(notification{Method: method, Params: params})
	if params == nil {
		data, err = json.Marshal(struct {
			Method string `json:"method"`
		}{method})
	}
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.stdin.Write(append(data, '\n'))
	return err
}
