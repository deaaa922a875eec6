package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Server is one running `<bin> exec-server --listen ws://127.0.0.1:0`.
type Server struct {
	Label  string // "ours", "ref", "ref-cr32", …
	Bin    string
	Args   []string
	URL    string
	Pid    int
	Stderr string // path of the captured stderr

	cmd    *exec.Cmd
	waited chan struct{} // closed when the process has been reaped
	waitE  error
}

// serverEnv is the clean environment a server starts with.
func serverEnv(home, codexHome string) []string {
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	if codexHome != "" {
		env = append(env, "CODEX_HOME="+codexHome)
	}
	return env
}

// StartServer launches bin as an exec-server on an ephemeral loopback port
// and reads the bound URL from its first stdout line. scratch is a private
// directory (outside /tmp) for CODEX_HOME and the stderr log.
func StartServer(ctx context.Context, label, bin string, extra []string, scratch string) (*Server, error) {
	home, _ := os.UserHomeDir()
	codexHome := filepath.Join(scratch, label+"-codex-home")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return nil, err
	}
	errPath := filepath.Join(scratch, label+".stderr")
	errFile, err := os.Create(errPath)
	if err != nil {
		return nil, err
	}
	defer errFile.Close()
	args := append([]string{"exec-server", "--listen", "ws://127.0.0.1:0"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = serverEnv(home, codexHome)
	cmd.Dir = scratch
	cmd.Stderr = errFile
	// Own process group: a terminal ^C reaches only the driver, which then
	// stops the servers with SIGTERM itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{Label: label, Bin: bin, Args: args, Pid: cmd.Process.Pid, Stderr: errPath, cmd: cmd, waited: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, br) // keep the pipe drained
		s.waitE = cmd.Wait()
		close(s.waited)
	}()
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "ws://") {
			s.Stop()
			return nil, fmt.Errorf("%s: first stdout line %q is not a ws:// URL (stderr in %s)", label, line, errPath)
		}
		s.URL = line
	case <-time.After(30 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("%s: no URL on stdout within 30 s", label)
	case <-ctx.Done():
		s.Stop()
		return nil, ctx.Err()
	}
	return s, nil
}

// Stop sends SIGTERM and waits up to 10 s, then SIGKILLs. It is safe to call
// more than once.
func (s *Server) Stop() error {
	select {
	case <-s.waited:
		return s.waitE
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.waited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.waited
		return errors.New("did not exit within 10 s of SIGTERM; killed")
	}
	return s.waitE
}

// Running reports whether the server process has not exited.
func (s *Server) Running() bool {
	select {
	case <-s.waited:
		return false
	default:
		return true
	}
}

// binaryVersion runs `<bin> --version` with a clean environment.
func binaryVersion(bin, scratch string) string {
	home, _ := os.UserHomeDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = serverEnv(home, filepath.Join(scratch, "version-codex-home"))
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// startPiped starts cmd in a process group of its own (a terminal ^C
// reaches only the driver, which stops its children itself) with pipes to
// its stdin and from its stdout.
func startPiped(cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return stdin, stdout, nil
}
