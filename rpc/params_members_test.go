package rpc

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// oldMissing is the required-member check missingMember replaced: decode
// the members into a map and look each name up.
func oldMissing(raw []byte, req []string) (string, error) {
	var present map[string]json.RawMessage
	if err := json.Unmarshal(raw, &present); err != nil {
		return "", err
	}
	for _, name := range req {
		if _, ok := present[name]; !ok {
			return name, nil
		}
	}
	return "", nil
}

// membersCorpus are request params of every shape the scanner must walk:
// nesting, strings holding braces, quotes, commas and escapes, escaped and
// duplicate member names, whitespace, empty containers, the names as
// values or nested members only, and invalid JSON.
var membersCorpus = []string{
	`{}`, `{ }`, "{\n\t\"argv\" :\r[\"a\"] }",
	`{"processId":"p","argv":["/bin/true"],"cwd":"/","tty":false}`,
	`{"argv":["}",",","\"argv\"",{"processId":1}],"x":{"processId":"nested"}}`,
	`{"processId":"{\"argv\":1}","cwd":null,"env":{"argv":"x","A":"}"}}`,
	`{"\u0061rgv":["x"],"processId":"p"}`, `{"argv\\":1,"processId":"p"}`,
	`{"processId":"a","processId":"b","argv":[]}`,
	`{"argv":[[[[]]]],"processId":{"a":{"b":[1,2,{"c":"\\"}]}}}`,
	`{"n":-1.5e+10,"t":true,"f":false,"z":null,"processId":"p","argv":[]}`,
	`{"argv": 5, "processId": 7}`, `{"ARGV":[],"processid":"p"}`,
	`{"processId":"é\u00e9","argv":["\ud83d\ude00"]}`,
	`{"argv":[] ,"processId":"p" , "tty" : true }`,
	`{"x":"a\"b","processId":"p","argv":[],"cwd":"c","tty":true}`,
	`{"x":"\\","argv":[],"processId":"p","y":["\\\"",{"z":"\\"}],"tty":1}`,
	`{"argv":[]`, `{"argv":[],}`, `{"argv" "x"}`, `{argv:[]}`, `{"a":1}{"b":2}`, `{"argv":"\x"}`,
}

// missingMember answers as the map lookup did on every corpus entry and
// on random mutations of them, or says it cannot tell (invalid JSON,
// escaped names), where the caller decodes as before.
func TestMissingMemberSameAsMapLookup(t *testing.T) {
	reqs := [][]string{{"processId"}, {"processId", "argv"}, {"argv", "processId", "cwd"}, {"tty"}}
	check := func(raw string) {
		for _, req := range reqs {
			want, err := oldMissing([]byte(raw), req)
			got, ok := missingMember([]byte(raw), req)
			if !ok {
				if err == nil && !strings.Contains(raw, `\`) {
					t.Errorf("%q %v: no answer for valid JSON without escapes", raw, req)
				}
				continue
			}
			if err != nil {
				t.Errorf("%q %v: answered %q for JSON the decoder refuses (%v)", raw, req, got, err)
				continue
			}
			if got != want {
				t.Errorf("%q %v: missing %q, the map lookup says %q", raw, req, got, want)
			}
		}
	}
	for _, raw := range membersCorpus {
		check(raw)
	}
	rng := rand.New(rand.NewPCG(22, 6))
	alphabet := []byte(`{}[]",:\ aprgvocesId0`)
	for range 20000 {
		b := []byte(membersCorpus[rng.IntN(len(membersCorpus))])
		for range 1 + rng.IntN(3) {
			switch i := rng.IntN(len(b) + 1); rng.IntN(3) {
			case 0: // insert
				b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
			case 1: // delete
				if i < len(b) {
					b = append(b[:i], b[i+1:]...)
				}
			default: // replace
				if i < len(b) {
					b[i] = alphabet[rng.IntN(len(alphabet))]
				}
			}
		}
		check(string(b))
	}
}

// The check allocates nothing for a valid request.
func TestMissingMemberAllocations(t *testing.T) {
	raw := []byte(`{"processId":"p","argv":["/bin/true"],"cwd":"file:///tmp","env":{"A":"1"},"tty":false}`)
	req := []string{"processId", "argv"}
	if n := testing.AllocsPerRun(100, func() { missingMember(raw, req) }); n != 0 {
		t.Errorf("missingMember allocated %.0f times", n)
	}
}
