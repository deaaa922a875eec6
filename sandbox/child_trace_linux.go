//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// awaitTracer waits, when the plan traces exec (Plan.TraceExecFD), until
// the spawner's tracer has seized the helper: it reads one byte from the
// sync fd and closes it, then checks that this thread (the one that execs
// or forks the command) has a tracer. Any failure refuses the plan: the
// command must never start untraced. Without TraceExecFD it does nothing.
func awaitTracer(p *Plan) error {
	fd := p.TraceExecFD
	if fd == 0 {
		return nil
	}
	if fd < 3 || fd == planFD || (p.PTSFD != 0 && fd == p.PTSFD) || p.KeepFD != 0 {
		return fmt.Errorf("trace fd %d: not a free inherited fd", fd)
	}
	buf := make([]byte, 1)
	var n int
	var err error
	for {
		n, err = unix.Read(fd, buf)
		if err != unix.EINTR {
			break
		}
	}
	_ = unix.Close(fd)
	if err != nil {
		return fmt.Errorf("trace fd %d: %w", fd, err)
	}
	if n != 1 {
		return errors.New("exec tracing: the tracer did not attach")
	}
	pid, err := tracerPid()
	if err != nil {
		return fmt.Errorf("exec tracing: %w", err)
	}
	if pid == 0 {
		return errors.New("exec tracing: the helper is not traced")
	}
	return nil
}

// tracerPid reads TracerPid of the calling thread from procfs.
func tracerPid() (int, error) {
	data, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			var pid int
			if _, err := fmt.Sscan(string(bytes.TrimSpace(v)), &pid); err != nil {
				return 0, err
			}
			return pid, nil
		}
	}
	return 0, errors.New("no TracerPid in /proc/thread-self/status")
}
