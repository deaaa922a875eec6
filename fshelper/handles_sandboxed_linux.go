package fshelper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/reap"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/sandbox"
	"github.com/codexec/codex/wire"
)

// A sandboxed fs/open (docs/protocol.md §6.11.3, §8.3). The fs helper opens
// the file inside the sandbox, as it runs any sandboxed fs call, and sends
// the opened descriptor back over its stdout, which for this operation is
// one end of a Unix socket pair (SCM_RIGHTS). The server then reads and
// writes blocks through that descriptor only. So:
//
//   - the server never resolves the path: a symbolic link a sandboxed
//     command planted or swaps in its workspace is followed, if at all,
//     inside the sandbox's mount view, under its Landlock rules, where a
//     read-only file opens read-only (EROFS for replace) and a hidden one
//     not at all;
//   - what the handle reaches is fixed at the open: a link swapped in
//     later changes nothing, the blocks never go through the path again;
//   - the descriptor is checked before it is taken (a regular file, open
//     for reading, or for writing only) and is the only one accepted; the
//     helper's exit status must be 0 (its protected-path watcher included),
//     or the descriptor is closed and the open fails;
//   - the handle lives in the connection's table and ends with it.

// openSandboxed opens a handle's file under the request's sandbox when it
// must be enforced; handled is false when the open should run directly.
func openSandboxed(ctx context.Context, p *wire.OpenParams, env []string) (f *os.File, handled bool, err error) {
	plan, cwd, err := fsPlan(p.Sandbox, env)
	if err != nil || plan == nil {
		return nil, err != nil, err
	}
	// As for every sandboxed fs call (sandboxedCall).
	guard := sandbox.GuardPlan(plan, nil)
	defer guard.Release()
	params, err := json.Marshal(map[string]any{"handleId": p.HandleID, "path": wire.FileURI(p.Path.Native), "mode": modeOf(p)})
	if err != nil {
		return nil, true, rpc.Errorf(rpc.CodeInternalError, "%v", err)
	}
	f, err = runHelperOpen(ctx, params, *plan, cwd, env, p.Path.Native, p.Replace())
	return f, true, err
}

func modeOf(p *wire.OpenParams) string {
	if p.Replace() {
		return wire.OpenModeReplace
	}
	return wire.OpenModeRead
}

// runHelperOpen runs the fs helper for an open with a socket as its stdout
// and takes the descriptor it sends.
func runHelperOpen(ctx context.Context, params json.RawMessage, plan sandbox.Plan, cwd string, env []string, path string, replace bool) (*os.File, error) {
	plan.Argv = []string{sandbox.SelfExe, "--fs-helper"}
	plan.Dir, plan.Env = cwd, env
	w, err := sandbox.Wrap(plan)
	if err != nil {
		return nil, wire.ErrFSSandboxPrepare(err)
	}
	defer w.Close()
	req, err := helperRequestLine(wire.MethodFSOpen, params)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: %v", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "fs sandbox helper failed: %v", os.NewSyscallError("socketpair", err))
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "fs-helper-socket"), os.NewFile(uintptr(pair[1]), "fs-helper-socket")
	defer ours.Close()
	cmd := w.Command(ctx)
	cmd.Dir = cwd
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), theirs, &stderr
	runErr := reap.RunCmd(cmd)
	theirs.Close()
	// The helper has exited: all it sent is queued in the socket.
	line, fds, recvErr := drainHelperSocket(int(ours.Fd()))
	closeAll := func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}
	if runErr != nil {
		closeAll()
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			return nil, rpc.Errorf(rpc.CodeInternalError, "fs sandbox helper failed with status %s: %s", ee.ProcessState, strings.TrimSpace(stderr.String()))
		}
		return nil, rpc.Errorf(rpc.CodeInternalError, "fs sandbox helper failed: %v", runErr)
	}
	if recvErr != nil {
		closeAll()
		return nil, rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: %v", recvErr)
	}
	if _, err := decodeHelperOutput(wire.MethodFSOpen, bytes.TrimSpace(line)); err != nil {
		closeAll()
		return nil, err
	}
	if len(fds) != 1 {
		closeAll()
		return nil, rpc.Errorf(rpc.CodeInternalError, "failed to encode or decode fs sandbox helper message: %d descriptors, want 1", len(fds))
	}
	if err := checkHandleFD(fds[0], path, replace); err != nil {
		closeAll()
		return nil, err
	}
	return os.NewFile(uintptr(fds[0]), path), nil
}

// maxHelperLine bounds what the server reads from an open's helper: a
// response line (an error's text at most).
const maxHelperLine = 64 << 10

// drainHelperSocket reads what the exited helper left in the socket, and
// every descriptor that came with it (received close-on-exec).
func drainHelperSocket(fd int) (line []byte, fds []int, err error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for len(line) < maxHelperLine {
		n, oobn, flags, _, rerr := unix.Recvmsg(fd, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if errors.Is(rerr, unix.EINTR) {
			continue
		}
		if errors.Is(rerr, unix.EAGAIN) {
			break
		}
		if rerr != nil {
			return line, fds, rerr
		}
		if oobn > 0 {
			msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
			if perr != nil {
				return line, fds, perr
			}
			for _, m := range msgs {
				got, rerr := unix.ParseUnixRights(&m)
				if rerr == nil {
					fds = append(fds, got...)
				}
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			return line, fds, errors.New("descriptors truncated")
		}
		if n == 0 {
			break
		}
		line = append(line, buf[:n]...)
	}
	return line, fds, nil
}

// helperOpen is the fs helper's side of a sandboxed open: open the file
// here, inside the sandbox, and send the descriptor with the response line
// over out, which must be a Unix socket. It returns the exit status.
func helperOpen(params json.RawMessage, out *os.File) int {
	line := func(resp helperResponse) []byte {
		b, _ := json.Marshal(resp)
		return append(b, '\n')
	}
	fail := func(err error) int {
		if _, werr := out.Write(line(errorResponse(rpc.ToWire(err)))); werr != nil {
			fmt.Fprintf(os.Stderr, "fs helper: writing the response: %v\n", werr)
			return 1
		}
		return 0
	}
	p, err := wire.DecodeOpen(params)
	if err != nil {
		return fail(err)
	}
	f, err := openForHandle(p.Path.Native, p.Replace())
	if err != nil {
		return fail(WireError(err))
	}
	defer f.Close()
	payload, _ := json.Marshal(helperOK{Operation: wire.MethodFSOpen, Response: json.RawMessage("{}")})
	ok := line(helperResponse{Status: "ok", Payload: payload})
	if err := unix.Sendmsg(int(out.Fd()), ok, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		fmt.Fprintf(os.Stderr, "fs helper: sending the descriptor: %v\n", err)
		return 1
	}
	return 0
}
