// The bench Client's reader: routes responses by id and notifications by
// processId, scans process/output without a JSON decoder, and counts protocol anomalies.

package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codexec/codex/wire"
)

// Violations counts protocol anomalies seen by a Client's reader.
type Violations struct {
	OutputAfterClosed atomic.Int64 // process/output after process/closed
	SeqDisorder       atomic.Int64 // a notification seq not above the previous one
	ExitedAfterClosed atomic.Int64 // process/exited after process/closed
	MissingExited     atomic.Int64 // process/closed without an earlier process/exited
	Stray             atomic.Int64 // notifications for unknown process ids

	mu    sync.Mutex
	Notes []string // the first few anomalies, described
}

// note records a description of an anomaly (the first 20 are kept).
func (v *Violations) note(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.Notes) < 20 {
		v.Notes = append(v.Notes, fmt.Sprintf(format, args...))
	}
}

// readLoop reads frames until the connection ends, honouring Pause.
func (c *Client) readLoop() {
	defer close(c.done)
	var buf bytes.Buffer
	buf.Grow(256 << 10)
	var scratch []byte
	for {
		c.mu.Lock()
		gate := c.gate
		c.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-c.ctx.Done():
				c.fail(c.ctx.Err())
				return
			}
		}
		_, r, err := c.conn.Reader(c.ctx)
		if err != nil {
			c.fail(err)
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			c.fail(err)
			return
		}
		now := time.Now()
		scratch = c.handle(buf.Bytes(), now, scratch)
	}
}

// fail records the read error and releases every waiter.
func (c *Client) fail(err error) {
	if err == nil {
		err = errors.New("reader stopped")
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

var (
	keyOutput    = []byte(`"method":"` + wire.MethodProcessOutput + `"`)
	keyProcessID = []byte(`"processId":"`)
	keyChunk     = []byte(`"chunk":"`)
	keySeq       = []byte(`"seq":`)
)

// handle processes one frame. process/output is scanned without a JSON
// decoder; everything else is small and decoded with encoding/json.
func (c *Client) handle(frame []byte, now time.Time, scratch []byte) []byte {
	if bytes.Contains(frame, keyOutput) {
		return c.handleOutput(frame, now, scratch)
	}
	if len(frame) > bigFrame {
		if id, res, ok := bigResult(frame); ok {
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- &Response{Result: append(json.RawMessage(nil), res...), At: now}
			}
			return scratch
		}
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(frame, &env); err != nil {
		return scratch
	}
	if env.Method != "" {
		c.handleNotification(env.Method, env.Params, now)
		return scratch
	}
	id, err := strconv.ParseInt(string(env.ID), 10, 64)
	if err != nil {
		return scratch
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil { // env.Result is a copy: json.RawMessage copies on decode
		ch <- &Response{Result: env.Result, Err: env.Error, At: now}
	}
	return scratch
}

// bigFrame is the size from which a response is scanned, not decoded.
const bigFrame = 256 << 10

var (
	keyID     = []byte(`"id":`)
	keyResult = []byte(`"result":{`)
)

// bigResult takes a large result apart without a JSON decoder: a flat
// result object whose only large value is a base64 string (fs/readBlock,
// fs/readFile), which holds no quote or brace. ok is false for anything
// else (then it is decoded as usual).
func bigResult(frame []byte) (id int64, result []byte, ok bool) {
	i := bytes.Index(frame, keyResult)
	if i < 0 || bytes.Contains(frame[i:], []byte(`"error"`)) {
		return 0, nil, false
	}
	res := frame[i+len(keyResult)-1:]
	end := bytes.IndexByte(res, '}')
	if end < 0 || bytes.IndexByte(res[1:end], '{') >= 0 {
		return 0, nil, false
	}
	j := bytes.Index(frame, keyID)
	if j < 0 {
		return 0, nil, false
	}
	digits := frame[j+len(keyID):]
	n := 0
	for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
		n++
	}
	id, err := strconv.ParseInt(string(digits[:n]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return id, res[:end+1], true
}

// stringAfter returns the JSON string value that follows key (which ends in
// the opening quote). Values here never contain escapes.
func stringAfter(frame, key []byte) []byte {
	i := bytes.Index(frame, key)
	if i < 0 {
		return nil
	}
	rest := frame[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil
	}
	return rest[:j]
}

// uintAfter parses the unsigned integer that follows key.
func uintAfter(frame, key []byte) (uint64, bool) {
	i := bytes.Index(frame, key)
	if i < 0 {
		return 0, false
	}
	rest := frame[i+len(key):]
	for len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	var v uint64
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		v = v*10 + uint64(rest[n]-'0')
		n++
	}
	return v, n > 0
}

// base64Len is the decoded length of padded standard base64 text.
func base64Len(b []byte) int64 {
	n := int64(len(b)) / 4 * 3
	if len(b) > 0 && b[len(b)-1] == '=' {
		n--
		if len(b) > 1 && b[len(b)-2] == '=' {
			n--
		}
	}
	return n
}

func (c *Client) lookup(id []byte) *Proc {
	c.mu.Lock()
	p := c.procs[string(id)]
	c.mu.Unlock()
	return p
}

// checkSeq records a notification seq and counts disorder.
func (c *Client) checkSeq(p *Proc, seq uint64, ok bool, method string) {
	if !ok {
		return
	}
	if seq <= p.lastSeq {
		c.viol.SeqDisorder.Add(1)
		c.viol.note("%s of %s has seq %d after %s seq %d", method, p.ID, seq, p.lastKind, p.lastSeq)
	}
	p.lastSeq, p.lastKind = seq, method
}

func (c *Client) handleOutput(frame []byte, now time.Time, scratch []byte) []byte {
	p := c.lookup(stringAfter(frame, keyProcessID))
	if p == nil {
		c.viol.Stray.Add(1)
		return scratch
	}
	if !p.ClosedAt.IsZero() {
		c.viol.OutputAfterClosed.Add(1)
		c.viol.note("process/output of %s after process/closed", p.ID)
	}
	seq, ok := uintAfter(frame, keySeq)
	c.checkSeq(p, seq, ok, "process/output")
	chunk := stringAfter(frame, keyChunk)
	if bytes.IndexByte(chunk, '\\') >= 0 { // escaped JSON: take the slow path
		var n struct {
			Params struct {
				Chunk []byte `json:"chunk"`
			} `json:"params"`
		}
		if err := json.Unmarshal(frame, &n); err == nil {
			chunk = []byte(base64.StdEncoding.EncodeToString(n.Params.Chunk))
		}
	}
	if p.FirstOutput.IsZero() {
		p.FirstOutput = now
	}
	p.Chunks++
	if p.Decode {
		need := base64.StdEncoding.DecodedLen(len(chunk))
		if cap(scratch) < need {
			scratch = make([]byte, need)
		}
		n, err := base64.StdEncoding.Decode(scratch[:need], chunk)
		if err != nil {
			p.NonZero = true
		}
		for _, b := range scratch[:n] {
			if b != 0 {
				p.NonZero = true
				break
			}
		}
		p.Bytes += int64(n)
	} else {
		p.Bytes += base64Len(chunk)
	}
	return scratch
}

func (c *Client) handleNotification(method string, params json.RawMessage, now time.Time) {
	var n struct {
		ProcessID string  `json:"processId"`
		Seq       *uint64 `json:"seq"`
		ExitCode  *int    `json:"exitCode"`
		Chunk     []byte  `json:"chunk"`
	}
	if err := json.Unmarshal(params, &n); err != nil {
		return
	}
	p := c.lookup([]byte(n.ProcessID))
	if p == nil {
		if method == wire.MethodProcessOutput || method == wire.MethodProcessExited || method == wire.MethodProcessClosed {
			c.viol.Stray.Add(1)
		}
		return
	}
	if n.Seq != nil {
		c.checkSeq(p, *n.Seq, true, method)
	}
	switch method {
	case wire.MethodProcessOutput: // only reached if the fast path missed it
		if !p.ClosedAt.IsZero() {
			c.viol.OutputAfterClosed.Add(1)
		}
		if p.FirstOutput.IsZero() {
			p.FirstOutput = now
		}
		p.Chunks++
		p.Bytes += int64(len(n.Chunk))
	case wire.MethodProcessExited:
		if !p.ClosedAt.IsZero() {
			c.viol.ExitedAfterClosed.Add(1)
			c.viol.note("process/exited of %s after process/closed", p.ID)
			return
		}
		if p.ExitedAt.IsZero() {
			p.ExitedAt = now
			p.ExitCode = n.ExitCode
			close(p.exited)
		}
	case wire.MethodProcessClosed:
		if !p.ClosedAt.IsZero() {
			return
		}
		if p.ExitedAt.IsZero() {
			c.viol.MissingExited.Add(1)
			c.viol.note("process/closed of %s without process/exited", p.ID)
		}
		p.ClosedAt = now
		close(p.closed)
	}
}
