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

// FuzzFastMembers: whatever the input, the fast split either leaves it to
// the token decoder or returns exactly what that decoder returns.
func FuzzFastMembers(f *testing.F) {
	for _, in := range fastCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		keys, vals, ok := fastMembers(in)
		if !ok {
			return
		}
		wk, wv, werr := tokenMembers(json.RawMessage(in))
		if werr != nil {
			t.Fatalf("%q: fast split took what the token decoder refuses: %v", in, werr)
		}
		if !reflect.DeepEqual(keys, wk) || len(vals) != len(wv) {
			t.Fatalf("%q: keys %q, want %q", in, keys, wk)
		}
		for i := range vals {
			if string(vals[i]) != string(wv[i]) {
				t.Fatalf("%q: value %d %q, want %q", in, i, vals[i], wv[i])
			}
		}
	})
}

// FuzzDecodeCommandExecParams: the decoder never panics, and a command it
// accepts is the one encoding/json reads.
func FuzzDecodeCommandExecParams(f *testing.F) {
	for _, in := range fastCases {
		f.Add([]byte(in))
	}
	f.Add([]byte(`{"command":["a","b\u0000",""],"env":{"A":null,"B":"x"},"size":{"rows":1,"cols":2},"tty":true}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := DecodeCommandExecParams(json.RawMessage(in))
		if err != nil || p == nil {
			return
		}
		var want struct {
			Command []string `json:"command"`
		}
		if json.Unmarshal(in, &want) == nil && !reflect.DeepEqual(p.Command, want.Command) && len(want.Command) > 0 {
			t.Fatalf("%q: command %q, want %q", in, p.Command, want.Command)
		}
	})
}
