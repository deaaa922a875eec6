package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fastCases are objects the fast split must take apart exactly as the
// token decoder does, or leave to it.
var fastCases = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":-1.5e3,"b":true,"c":false,"d":null}`,
	`{"command":["/bin/true"],"sandboxPolicy":{"type":"dangerFullAccess"}}`,
	"{\n\t\"a\" : [ 1 , [2,{\"x\":\"]}\"}] ] ,\r\n\"b\":{\"c\":{}} }",
	`{"a":"q\"uote\\","b":"\u00e9","c":"é"}`, `{"a\"b":1}`, `{"é":1}`, `{"a":1,"a":2}`,
	`{"a":{}}`, `{"a":[]}`, `{"a":0}`, `{"a":"}"}`, `{"a":1}x`, `{"a":}`, `{"a" 1}`, `{"a":1,}`,
}

// TestFastMembersMatchTokens checks the fast split against tokenMembers.
func TestFastMembersMatchTokens(t *testing.T) {
	for _, in := range fastCases {
		keys, vals, ok := fastMembers([]byte(in))
		wk, wv, werr := tokenMembers(json.RawMessage(in))
		if !ok {
			if json.Valid([]byte(in)) && in != `{"a\"b":1}` && in != `{"é":1}` {
				t.Errorf("%q: valid object left to the token decoder", in)
			}
			continue
		}
		if werr != nil {
			t.Errorf("%q: fast split took input the token decoder refuses: %v", in, werr)
			continue
		}
		if len(keys) == 0 && len(wk) == 0 {
			continue
		}
		if !reflect.DeepEqual(keys, wk) || !reflect.DeepEqual(vals, wv) {
			t.Errorf("%q: fast %q %q, tokens %q %q", in, keys, vals, wk, wv)
		}
	}
}

// TestFastItemsAndStrings checks the array split and plain strings.
func TestFastItemsAndStrings(t *testing.T) {
	for in, want := range map[string][]string{
		`[]`: nil, `[ ] `: nil, `["/bin/true"]`: {`"/bin/true"`},
		`[ "a" , 1 ,{"b":[2]}, [ ] ,null]`: {`"a"`, `1`, `{"b":[2]}`, `[ ]`, `null`},
	} {
		var got []string
		for _, it := range fastItems([]byte(in)) {
			got = append(got, string(it))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: items %q, want %q", in, got, want)
		}
	}
	for in, plain := range map[string]bool{`"abc"`: true, `""`: true, `"a\"b"`: false, `"é"`: false, `"a\tb"`: false, "\"a\tb\"": false, `1`: false} {
		s, ok := plainString([]byte(in))
		if ok != plain {
			t.Errorf("%q: plain %v, want %v", in, ok, plain)
			continue
		}
		var want string
		if ok && (json.Unmarshal([]byte(in), &want) != nil || want != s) {
			t.Errorf("%q: %q, want %q", in, s, want)
		}
	}
}
