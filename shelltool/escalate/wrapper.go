package escalate

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// WrapperName is the argv[0] base name under which the codex binary acts
// as the exec wrapper (WrapperMain).
const WrapperName = "codex-execve-wrapper"

// Environment variables of the wrapper protocol. The escalate socket's
// descriptor number is in SocketEnv; the patched shell execs the program
// named by the two wrapper variables instead of each program it runs.
const (
	SocketEnv          = "CODEX_ESCALATE_SOCKET"
	ExecWrapperEnv     = "EXEC_WRAPPER"
	BashExecWrapperEnv = "BASH_EXEC_WRAPPER"
)

// WrapperEnv returns the environment entries that make a patched shell
// exec wrapper instead of each program and tell the wrapper that the
// escalate socket is its descriptor fd (docs/shell-tool.md §4): CODEX_ESCALATE_SOCKET,
// BASH_EXEC_WRAPPER (the only name the npm 0.97.0 Bash knows) and
// EXEC_WRAPPER (newer shells).
func WrapperEnv(wrapper string, fd int) []string {
	return []string{
		SocketEnv + "=" + strconv.Itoa(fd),
		BashExecWrapperEnv + "=" + wrapper,
		ExecWrapperEnv + "=" + wrapper,
	}
}

// WrapperMain is `codex-execve-wrapper FILE ARGV0 ARGS...` (docs/shell-tool.md §5), run
// by a patched shell instead of each program it would exec, inside the
// sandbox. It asks the server over the escalate socket and then execs
// FILE itself (Run; it does not return then), has the server run it on
// this process's stdin, stdout and stderr and returns its exit code
// (Escalate), or prints `Execution denied[: reason]` and returns 1
// (Deny). Any failure prints `Error: ...` on stderr and returns 1.
//
// It runs once per exec: it does no work beyond the protocol (no logger,
// no flag parsing), and the caller must not either before calling it.
func WrapperMain() int {
	code, err := wrapper(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error: "+err.Error())
		return 1
	}
	return code
}

// wrapper is WrapperMain on args (FILE ARGV...); an error means exit 1
// after printing it.
func wrapper(args []string) (int, error) {
	if len(args) < 1 {
		return 0, errors.New("usage: " + WrapperName + " FILE [ARGV0 ARGS...]")
	}
	file, argv := args[0], args[1:]
	if file == "" {
		return 0, errEmptyFile
	}
	sock, err := escalateSocket()
	if err != nil {
		return 0, err
	}
	stream, err := connect(sock)
	if err != nil {
		return 0, err
	}
	// stream is close-on-exec: a Run exec drops it, an exit closes it.
	c := fdConn(stream)
	cwd, err := unix.Getwd()
	if err != nil {
		return 0, fmt.Errorf("getting the working directory: %w", err)
	}
	req := wireRequest{File: file, Argv: argv, Workdir: cwd, Env: requestEnv(os.Environ())}
	if err := writeMessage(c, req, nil); err != nil {
		return 0, fmt.Errorf("sending EscalateRequest: %w", err)
	}
	var resp wireResponse
	if err := readMessage(c, &resp); err != nil {
		return 0, fmt.Errorf("receiving EscalateResponse: %w", err)
	}
	switch resp.Decision.Action {
	case Run:
		// Our own full environment: a nested patched shell keeps
		// intercepting. Exec returns only on failure.
		err := unix.Exec(file, argv, os.Environ())
		return 0, fmt.Errorf("cannot execute %s: %w", file, err)
	case Escalate:
		return superExecClient(c)
	default:
		msg := "Execution denied"
		if r := resp.Decision.Reason; r != nil {
			msg += ": " + *r
		}
		fmt.Fprintln(os.Stderr, msg)
		return 1, nil
	}
}

// escalateSocket returns the escalate socket's descriptor, in blocking
// mode (it may come non-blocking from whoever set it up).
func escalateSocket() (int, error) {
	v, ok := os.LookupEnv(SocketEnv)
	if !ok {
		return 0, errors.New(SocketEnv + " is not set")
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 0 {
		return 0, fmt.Errorf("%s is not a descriptor number: %q", SocketEnv, v)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return 0, fmt.Errorf("escalate socket %d: %w", fd, err)
	}
	return fd, nil
}

// connect creates the session's stream socketpair, hands one end to the
// server in a one-byte datagram, and returns the other (close-on-exec).
func connect(sock int) (int, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("creating the session socket: %w", err)
	}
	err = sendDatagram(fdConn(sock), []byte{0}, pair[1:])
	_ = unix.Close(pair[1])
	if err != nil {
		_ = unix.Close(pair[0])
		return 0, fmt.Errorf("escalate socket %d: %w", sock, err)
	}
	return pair[0], nil
}

// requestEnv is environ as a map, without the wrapper protocol's own
// variables: the environment the program would get from the shell.
func requestEnv(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case SocketEnv, ExecWrapperEnv, BashExecWrapperEnv:
			continue
		}
		env[k] = v
	}
	return env
}

// superExecClient sends our stdin, stdout and stderr to the server and
// returns the exit code it answers, reduced mod 256 as exit(2) would.
func superExecClient(c fdConn) (int, error) {
	if err := writeMessage(c, superExecMessage{FDs: []int{0, 1, 2}}, []int{0, 1, 2}); err != nil {
		return 0, fmt.Errorf("sending SuperExecMessage: %w", err)
	}
	var res superExecResult
	if err := readMessage(c, &res); err != nil {
		return 0, fmt.Errorf("receiving SuperExecResult: %w", err)
	}
	return int(uint8(res.ExitCode)), nil
}
