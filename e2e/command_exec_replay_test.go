package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"
)

// replayCase is one request sent to the official app-server 0.169.0 and
// the messages it answered (notifications, then the response), with ids
// and emittedAtMs stripped. testdata/command_exec_replay.jsonl holds them.
type replayCase struct {
	Name    string           `json:"name"`
	Request json.RawMessage  `json:"request"` // raw: member order matters
	Expect  []map[string]any `json:"expect"`
}

// TestCommandExecReplay sends the recorded requests to our server, in
// order on one connection, and expects the reference's answers.
func TestCommandExecReplay(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/command_exec_replay.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []replayCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rc replayCase
		if err := json.Unmarshal(sc.Bytes(), &rc); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		cases = append(cases, rc)
	}
	if len(cases) < 30 {
		t.Fatalf("only %d recorded cases", len(cases))
	}
	forEachTransport(t, func(t *testing.T, c *cx) {
		for _, rc := range cases {
			id := c.nextID
			c.nextID++
			c.requests.sent(fmt.Sprint(id), rc.Request)
			c.write(fmt.Sprintf(`{"id":%d,%s`, id, bytes.TrimPrefix(bytes.TrimSpace(rc.Request), []byte("{"))))
			res := c.wait(id, 15*time.Second)
			delete(res, "id")
			got := append(c.notifs, res)
			c.notifs = nil
			if !reflect.DeepEqual(normalize(got), normalize(rc.Expect)) {
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(rc.Expect)
				t.Errorf("%s:\n got %s\nwant %s", rc.Name, gb, wb)
			}
		}
	})
}

// normalize round-trips messages through JSON so that both sides compare
// as the same generic values.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
