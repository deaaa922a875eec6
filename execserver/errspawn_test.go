package execserver

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/codexec/codex/rpc"
)

// Spawn errors keep the reference's code and text and add [ext] data
// {op, errno}: "chdir" for the working directory, "exec" otherwise.
func TestErrSpawnData(t *testing.T) {
	cases := []struct {
		err       error
		msg, data string
	}{
		{fmt.Errorf("proc: start: %w", &os.PathError{Op: "exec", Path: "x", Err: syscall.ENOENT}),
			"No such file or directory (os error 2)", `{"op":"exec","errno":2}`},
		{fmt.Errorf("proc: start: %w", &os.PathError{Op: "chdir", Path: "/d", Err: syscall.ENOENT}),
			"No such file or directory (os error 2)", `{"op":"chdir","errno":2}`},
		{syscall.EACCES, "Permission denied (os error 13)", `{"op":"exec","errno":13}`},
		{errors.New("no errno"), "no errno", ""},
	}
	for _, tc := range cases {
		var we *rpc.Error
		if !errors.As(errSpawn(tc.err), &we) || we.Code != rpc.CodeInternalError || we.Message != tc.msg || string(we.Data) != tc.data {
			t.Errorf("errSpawn(%v) = %+v (data %s)", tc.err, we, we.Data)
		}
	}
}
