package fshelper

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// The sandboxed filesystem helper (docs/protocol.md §8.3): for a filesystem call
// whose sandbox must be enforced, the server re-executes its own binary
// under that sandbox; the child reads one request line from stdin, performs
// the operation in-process and writes one response line to stdout.

// helperRequest is the one line the server writes to the helper.
type helperRequest struct {
	Operation string          `json:"operation"`
	Params    json.RawMessage `json:"params"`
}

// helperResponse is the one line the helper writes back.
type helperResponse struct {
	Status  string          `json:"status"` // "ok" or "error"
	Payload json.RawMessage `json:"payload"`
}

type helperOK struct {
	Operation string          `json:"operation"`
	Response  json.RawMessage `json:"response"`
}

// ChildMain is the entry point of the hidden `--fs-helper` mode. It runs
// inside the sandbox (or, for tests, without one), serves exactly one
// request and returns the process exit code: 0 whenever a response line
// was written, including error responses.
func ChildMain() int {
	return serveHelper(os.Stdin, os.Stdout)
}

func serveHelper(in io.Reader, out io.Writer) int {
	line, err := bufio.NewReaderSize(in, 1<<20).ReadBytes('\n')
	if err != nil && (err != io.EOF || len(line) == 0) {
		fmt.Fprintf(os.Stderr, "fs helper: reading the request: %v\n", err)
		return 1
	}
	var req helperRequest
	if err := json.Unmarshal(line, &req); err != nil {
		fmt.Fprintf(os.Stderr, "fs helper: decoding the request: %v\n", err)
		return 1
	}
	if req.Operation == wire.MethodFSOpen {
		// The opened descriptor goes back with the response line.
		f, ok := out.(*os.File)
		if !ok {
			fmt.Fprintln(os.Stderr, "fs helper: fs/open needs a socket as its output")
			return 1
		}
		return helperOpen(req.Params, f)
	}
	resp, streamed := runHelperRequest(req)
	if streamed != nil {
		if err := writeStreamedOK(out, req.Operation, streamed); err != nil {
			fmt.Fprintf(os.Stderr, "fs helper: writing the response: %v\n", err)
			return 1
		}
		return 0
	}
	b, _ := json.Marshal(resp)
	if _, err := out.Write(append(b, '\n')); err != nil {
		fmt.Fprintf(os.Stderr, "fs helper: writing the response: %v\n", err)
		return 1
	}
	return 0
}

// runHelperRequest performs the operation directly: the helper is already
// inside the sandbox, so the request's sandbox member is ignored. A result
// to be streamed (fs/readFile) comes back as streamed instead of in the
// response.
func runHelperRequest(req helperRequest) (resp helperResponse, streamed rpc.StreamedResult) {
	h, ok := directHandlers()[req.Operation]
	switch req.Operation {
	case wire.MethodFSWalk:
		h, ok = walkDirect, true
	case wire.MethodCapabilitiesDiscoverV2:
		h, ok = discoverDirect, true
	}
	if !ok {
		return errorResponse(rpc.Errorf(rpc.CodeMethodNotFound, "unknown fs helper operation %s", req.Operation)), nil
	}
	res, err := h(context.Background(), &rpc.Request{Method: req.Operation, Params: req.Params})
	if err != nil {
		return errorResponse(rpc.ToWire(err)), nil
	}
	if sr, ok := res.(rpc.StreamedResult); ok {
		return helperResponse{}, sr
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return errorResponse(rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: %v", err)), nil
	}
	payload, _ := json.Marshal(helperOK{Operation: req.Operation, Response: raw})
	return helperResponse{Status: "ok", Payload: payload}, nil
}

func errorResponse(e *rpc.Error) helperResponse {
	payload, _ := json.Marshal(e)
	return helperResponse{Status: "error", Payload: payload}
}

// decodeHelperOutput turns the helper's stdout into the method's result or
// its wire error (docs/protocol.md §8.3 texts).
func decodeHelperOutput(operation string, stdout []byte) (json.RawMessage, error) {
	var resp helperResponse
	if err := json.Unmarshal(stdout, &resp); err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: %v", err)
	}
	switch resp.Status {
	case "ok":
		var ok helperOK
		if err := json.Unmarshal(resp.Payload, &ok); err != nil {
			return nil, rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: %v", err)
		}
		if ok.Operation != operation {
			return nil, rpc.Errorf(rpc.CodeInternalError, "unexpected fs sandbox helper response: expected %s, got %s", operation, ok.Operation)
		}
		return ok.Response, nil
	case "error":
		var e rpc.Error
		if err := json.Unmarshal(resp.Payload, &e); err != nil {
			return nil, rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: %v", err)
		}
		return nil, &e
	}
	return nil, rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: unknown status %q", resp.Status)
}
