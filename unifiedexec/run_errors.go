package unifiedexec

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// osErrorSuffix matches the errno of a spawn failure on the wire:
// "<strerror> (os error N)" (docs/protocol.md §3).
var osErrorSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(os error ([0-9]+)\)$`) })

// wireErrno returns the errno of a -32603 spawn failure, or 0 when err is
// not one.
func wireErrno(err error) syscall.Errno {
	var we *rpc.Error
	if !errors.As(err, &we) || we.Code != rpc.CodeInternalError {
		return 0
	}
	m := osErrorSuffix().FindStringSubmatch(we.Message)
	if m == nil {
		return 0
	}
	n, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return 0
	}
	return syscall.Errno(n)
}

// startFailure maps a failed process/start of program in cwd to the
// RunError a shell would give. The wire gives the same ENOENT for a
// missing program and a missing cwd (docs/protocol.md §7.1), so an ENOENT,
// ENOTDIR or EACCES is told apart by asking the server about cwd.
func startFailure(ctx context.Context, c *Client, program, cwd string, err error) *RunError {
	errno := wireErrno(err)
	switch errno {
	case syscall.ENOENT, syscall.ENOTDIR, syscall.EACCES, syscall.ENOEXEC, syscall.EISDIR, syscall.ELOOP, syscall.ENAMETOOLONG:
	default:
		return &RunError{Code: ExitFailure, Err: err}
	}
	if why := cwdProblem(ctx, c, cwd); why != "" {
		return &RunError{Code: ExitBadCwd, Err: fmt.Errorf("working directory %s: %s", cwd, why)}
	}
	if errno == syscall.ENOENT {
		return &RunError{Code: ExitNotFound, Err: fmt.Errorf("%s: command not found", program)}
	}
	return &RunError{Code: ExitNotExecutable, Err: fmt.Errorf("%s: cannot execute: %s", program, errno.Error())}
}

// cwdProblem asks the server whether cwd is a directory and returns what
// is wrong with it, or "" when it is one or the server cannot tell.
func cwdProblem(ctx context.Context, c *Client, cwd string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	path, err := wire.ParsePath(cwd)
	if err != nil {
		return err.Error()
	}
	md, err := c.GetMetadata(ctx, path.Native)
	switch {
	case err != nil && wireCode(err) == wire.CodeNotFound:
		return "no such directory"
	case err != nil:
		return ""
	case !md.IsDirectory:
		return "not a directory"
	}
	return ""
}

// wireCode returns the JSON-RPC code of a server error, or 0.
func wireCode(err error) int {
	var we *rpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}
