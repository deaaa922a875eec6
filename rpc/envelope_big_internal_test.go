package rpc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestUnmarshalEnvelopeMatchesEncodingJSON: the fast path for messages
// with long strings gives exactly what json.Unmarshal gives, error or
// not, for long strings in and out of params, escapes, duplicate and
// case-variant keys, nesting and invalid input.
func TestUnmarshalEnvelopeMatchesEncodingJSON(t *testing.T) {
	long := strings.Repeat("QUJD", 20<<10) // 80 KiB of base64
	cases := []string{
		`{"id":5,"method":"fs/writeBlock","params":{"handleId":"w","offset":0,"chunk":"` + long + `"}}`,
		`{"params":{"chunk":"` + long + `","handleId":"w"},"id":"x","method":"m"}`,
		`  {"id":5,"method":"m","params":["` + long + `","` + long + `",1]} `,
		`{"id":5,"method":"m","params":"` + long + `"}`,
		`{"id":5,"method":"m","params":{"a":{"b":["` + long + `"]}},"jsonrpc":"2.0"}`,
		`{"id":5,"method":"m","params":{"a":"` + long + `"},"params":{"b":1}}`,
		`{"id":5,"method":"m","Params":{"a":"` + long + `"}}`,
		`{"id":5,"method":"m","PARAMS":{"a":"x"},"params":{"a":"` + long + `"}}`,
		`{"id":5,"method":"m","par\u0061ms":{"a":"` + long + `"}}`,
		`{"id":5,"method":"m","params":{"a":"` + long + `\n"}}`,
		`{"id":5,"method":"m","params":{"a":"` + long + `\"x"}}`,
		`{"id":5,"method":"m","params":{"a":"` + long + "\x01" + `"}}`,
		`{"id":5,"method":"m","params":{"a":"` + long + "é" + `"}}`,
		`{"id":5,"method":"m","params":{"a":"` + long + `"}`,
		`{"id":5,"method":"m","params":{"a":"` + long,
		`{"id":5,"method":"m","params":{"a":"` + long + `"},}`,
		`{"id":5,"method":"m","params":{"a":"` + long + `"} x`,
		`{"id":5,"method":"` + long + `","params":{}}`,
		`{"id":"` + long + `","method":"m","params":{}}`,
		`{"id":5,"result":{"chunk":"` + long + `","eof":false}}`,
		`{"id":5,"error":{"code":1,"message":"` + long + `"}}`,
		`{"id":5,"method":"m","params":null,"x":"` + long + `"}`,
		`{"id":5,"method":"m","params":{"a":"\\"},"b":"` + long + `"}`,
		`{"id":5,"method":"m","params":{"a":"\"` + long + `"}}`,
		`["` + long + `"]`,
		`{"id":5,"method":"m","params":{"a":"` + long + `"}}` + strings.Repeat(" ", 10),
	}
	for i, c := range cases {
		var fast, slow envelope
		ef := unmarshalEnvelope([]byte(c), &fast)
		es := json.Unmarshal([]byte(c), &slow)
		if (ef == nil) != (es == nil) || (ef != nil && ef.Error() != es.Error()) {
			t.Errorf("case %d: error %v, want %v", i, ef, es)
			continue
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("case %d: decoded differently: params %d vs %d bytes, method %v vs %v", i, len(fast.Params), len(slow.Params), fast.Method, slow.Method)
		}
	}
}

// BenchmarkUnmarshalEnvelopeWriteBlock is a 1 MiB fs/writeBlock.
func BenchmarkUnmarshalEnvelopeWriteBlock(b *testing.B) {
	msg := []byte(`{"id":5,"method":"fs/writeBlock","params":{"handleId":"w","offset":0,"chunk":"` + strings.Repeat("QUJD", 1<<20/3) + `"}}`)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		var env envelope
		if err := unmarshalEnvelope(msg, &env); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzUnmarshalEnvelope: around a long plain string, whatever the fuzzer
// puts before and after it (structure, escapes, keys, garbage), the fast
// path decodes exactly as encoding/json does, errors included.
func FuzzUnmarshalEnvelope(f *testing.F) {
	f.Add(`{"id":5,"method":"fs/writeBlock","params":{"handleId":"w","offset":0,"chunk":"`, `"}}`)
	f.Add(`{"id":5,"method":"m","params":["`, `","x",1]}`)
	f.Add(`{"params":{"a":"\"`, `"},"Params":1}`)
	f.Add(`{"id":"`, `","method":"m","params":{}}`)
	f.Add(`{"id":5,"method":"m","params":{"a":"`, `\u0041"}}`)
	long := strings.Repeat("QUJD", 2<<10) // 8 KiB, beyond longString
	f.Fuzz(func(t *testing.T, before, after string) {
		msg := []byte(before + long + after)
		for len(msg) < bigMessage {
			msg = append(msg, ' ')
		}
		var fast, slow envelope
		ef := unmarshalEnvelope(msg, &fast)
		es := json.Unmarshal(msg, &slow)
		if (ef == nil) != (es == nil) || (ef != nil && ef.Error() != es.Error()) {
			t.Fatalf("%q…%q: error %v, want %v", before, after, ef, es)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q…%q: decoded differently", before, after)
		}
	})
}
