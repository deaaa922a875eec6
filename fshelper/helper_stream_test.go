package fshelper

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestHelperStreamsReadFile runs the helper side in-process on a file of
// 3 MiB: its line is the usual JSON, and the server side forwards the
// response member from the pieces without decoding it.
func TestHelperStreamsReadFile(t *testing.T) {
	data := make([]byte, 3<<20+5)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	req, err := helperRequestLine("fs/readFile", json.RawMessage(`{"path":`+mustQuote(path)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var out helperOutput
	if code := serveHelper(bytes.NewReader(req), &out); code != 0 {
		t.Fatalf("serveHelper exit %d", code)
	}
	// The line is the documented shape, decodable the usual way.
	generic, err := decodeHelperOutput("fs/readFile", bytes.TrimSpace(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := decodeHelperStream("fs/readFile", &out)
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := res.(rawPieces)
	if !ok {
		t.Fatalf("large result not forwarded in pieces: %T", res)
	}
	if len(raw) < 2 {
		t.Fatalf("result in %d pieces; the test wants several", len(raw))
	}
	joined, _ := raw.MarshalJSON()
	if !bytes.Equal(joined, generic) {
		t.Fatal("forwarded response differs from the decoded one")
	}
	var m struct {
		DataBase64 string `json:"dataBase64"`
	}
	if err := json.Unmarshal(joined, &m); err != nil {
		t.Fatal(err)
	}
	if got, _ := base64.StdEncoding.DecodeString(m.DataBase64); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
}

// TestHelperStreamRejectsOtherShapes: a line that is not exactly the
// helper's base64 shape (an injected quote, a split tail, an error) goes
// through the ordinary decoder.
func TestHelperStreamRejectsOtherShapes(t *testing.T) {
	for name, line := range map[string]string{
		"injected": `{"status":"ok","payload":{"operation":"fs/readFile","response":{"dataBase64":"QQ","x":"=="}}}` + "\n",
		"error":    `{"status":"error","payload":{"code":-32004,"message":"No such file or directory (os error 2)"}}` + "\n",
	} {
		var out helperOutput
		_, _ = out.Write([]byte(line))
		if _, ok := out.base64Response("fs/readFile", "dataBase64"); ok {
			t.Errorf("%s: taken as a base64 response", name)
		}
		if _, err := decodeHelperStream("fs/readFile", &out); name == "error" && err == nil {
			t.Errorf("error line decoded without error")
		}
	}
	// Written byte by byte, the good shape is still recognised.
	line := string(okPrefix("fs/readFile")) + `{"dataBase64":"aGk="}` + okSuffix
	var out helperOutput
	for i := range len(line) {
		_, _ = out.Write([]byte{line[i]})
	}
	raw, ok := out.base64Response("fs/readFile", "dataBase64")
	if b, _ := raw.MarshalJSON(); !ok || string(b) != `{"dataBase64":"aGk="}` {
		t.Fatalf("good shape: %q %v", b, ok)
	}
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
