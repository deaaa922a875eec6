package wire_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/codexec/codex/wire"
)

// TestWalkResultWriteJSON holds the hand-written encoder of fs/walk's
// answer to encoding/json's reading of the same value: URI and plain
// paths with characters that need percent-encoding or JSON escaping,
// errors, and the empty result.
func TestWalkResultWriteJSON(t *testing.T) {
	uri := func(s string) wire.Path { return wire.Path{Native: s, URI: true} }
	plain := func(s string) wire.Path { return wire.Path{Native: s} }
	for _, r := range []wire.WalkResult{
		{Entries: []wire.WalkEntry{}, Errors: []wire.WalkError{}},
		{
			Entries: []wire.WalkEntry{
				{Path: uri("/a/sp ace/q?\"#\\%é\x01\x7f&<>"), Kind: wire.WalkKindFile},
				{Path: uri("/a/b"), Kind: wire.WalkKindDirectory},
				{Path: plain("/a/\"quote\\ \x01 <&> é"), Kind: wire.WalkKindFile},
			},
			Errors:    []wire.WalkError{{Path: uri("/x"), Message: "Permission denied (os error 13)"}, {Path: plain("/y\n"), Message: "a \"b\" <c>"}},
			Truncated: true,
		},
	} {
		var got bytes.Buffer
		if err := r.WriteJSON(&got); err != nil {
			t.Fatal(err)
		}
		type plainResult struct { // the same fields, without WriteJSON
			Entries   []wire.WalkEntry `json:"entries"`
			Errors    []wire.WalkError `json:"errors"`
			Truncated bool             `json:"truncated"`
		}
		want, _ := json.Marshal(plainResult(r))
		var g, w any
		if err := json.Unmarshal(got.Bytes(), &g); err != nil {
			t.Fatalf("%s: %v", got.Bytes(), err)
		}
		_ = json.Unmarshal(want, &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if !bytes.Equal(gb, wb) {
			t.Errorf("WriteJSON %s\nencoding/json %s", got.Bytes(), want)
		}
	}
}
