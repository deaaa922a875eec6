//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// networkDisabledEnv is added to the command's environment when the plan
// turns the network off (docs/sandbox.md §4.2).
const networkDisabledEnv = "CODEX_SANDBOX_NETWORK_DISABLED"

// defaultPath is the search path when the command's environment has no
// PATH, as in proc.Spec.
const defaultPath = "/bin:/usr/bin"

// runCommand runs the plan's command in the enforced helper and returns
// the exit status for the helper. As PID 1 of the command's PID namespace
// (every sandboxed plan has one: enforce refuses others) it forks the
// command, reaps every child until the command is gone, kills what is
// left of the namespace and returns the command's status. An Unsandboxed
// plan has none: the helper replaces itself with the command.
func runCommand(p *Plan, w *protectWatcher) int {
	env := commandEnv(p)
	path, err := commandPath(p.Argv[0], env)
	if err != nil {
		return execFailed(p.Argv[0], err)
	}
	argv := append([]string{p.Argv[0]}, p.Argv[1:]...)
	if p.Arg0 != "" {
		argv[0] = p.Arg0
	}
	// Nothing but fds 0-2 and the kept socket may reach the command.
	files := closeForCommand(p.KeepFD)

	if !p.NewPIDNS && !p.InheritPIDNS {
		if !p.Unsandboxed || w != nil {
			return execFailed(p.Argv[0], errors.New("no PID namespace"))
		}
		err := syscall.Exec(path, argv, env)
		if err == syscall.ENOEXEC {
			err = syscall.Exec("/bin/sh", append([]string{"sh", path}, argv[1:]...), env)
		}
		return execFailed(p.Argv[0], err)
	}
	// The helper stays the command's parent: make it non-dumpable, so that
	// the command (which has no CAP_SYS_PTRACE) cannot ptrace it or take
	// its fds, even in modes whose filter allows ptrace. exec resets the
	// flag for the command itself.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	attr := &syscall.ProcAttr{Env: env, Files: files, Sys: &syscall.SysProcAttr{}}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err == syscall.ENOEXEC {
		pid, err = syscall.ForkExec("/bin/sh", append([]string{"sh", path}, argv[1:]...), attr)
	}
	if err != nil {
		return execFailed(p.Argv[0], err)
	}
	code := reapCommand(pid)
	// The command is gone; so is everything it left behind once PID 1
	// exits. Kill it now so that nothing creates protected paths after the
	// final check. Never in the server's PID namespace (InheritPIDNS),
	// where -1 is every process the helper may signal: there the server
	// kills the command's cgroup leaf.
	if p.NewPIDNS {
		_ = unix.Kill(-1, unix.SIGKILL)
	}
	return w.finish(code)
}

// closeForCommand marks every fd from 3 up close-on-exec except keep (0:
// none), clears the flag on keep, and returns the fd table a forked
// command gets: 0-2, and keep at its own number with the fds between
// closed.
func closeForCommand(keep int) []uintptr {
	files := []uintptr{0, 1, 2}
	if keep < 3 {
		_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
		return files
	}
	if keep > 3 {
		_ = unix.CloseRange(3, uint(keep-1), unix.CLOSE_RANGE_CLOEXEC)
	}
	_ = unix.CloseRange(uint(keep+1), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if _, err := unix.FcntlInt(uintptr(keep), unix.F_SETFD, 0); err != nil {
		// Cannot happen for a checked fd; fail closed by keeping nothing.
		_ = unix.CloseRange(uint(keep), uint(keep), unix.CLOSE_RANGE_CLOEXEC)
		return files
	}
	for fd := 3; fd < keep; fd++ {
		files = append(files, ^uintptr(0)) // closed in the child
	}
	return append(files, uintptr(keep))
}

// execFailed reports a command that could not be executed, with the
// shell's statuses: 127 when it was not found, 126 otherwise.
func execFailed(name string, err error) int {
	fmt.Fprintf(os.Stderr, "%s: failed to execvp %s: %v\n", HelperName, name, errnoText(err))
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return 127
	}
	return 126
}

// errnoText gives the strerror-like text of err's errno, capitalised as
// the C library prints it ("No such file or directory").
func errnoText(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		s := en.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return err.Error()
}

// reapCommand waits for children until pid exits and returns its exit status,
// 128+N for a death by signal N. Orphans re-parented to the helper (PID 1)
// are reaped along the way.
func reapCommand(pid int) int {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 1 // ECHILD: the command is already gone, status lost
		}
		if wpid != pid {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// commandEnv is the plan's environment, plus the network marker when the
// network is off.
func commandEnv(p *Plan) []string {
	env := make([]string, 0, len(p.Env)+1)
	for _, kv := range p.Env {
		if p.NetworkDisabled && strings.HasPrefix(kv, networkDisabledEnv+"=") {
			continue
		}
		env = append(env, kv)
	}
	if p.NetworkDisabled {
		env = append(env, networkDisabledEnv+"=1")
	}
	return env
}

// commandPath resolves file with execvp(3) semantics against the PATH of env
// (defaultPath without one): a name with a slash is used as is, relative to
// the working directory; otherwise the first executable regular file in a
// PATH entry wins, an empty entry meaning the working directory. It fails
// with ENOENT, or EACCES if only non-executable candidates were found.
func commandPath(file string, env []string) (string, error) {
	if file == "" {
		return "", syscall.ENOENT
	}
	if strings.Contains(file, "/") {
		if err := checkExecutable(file); err != nil {
			return "", err
		}
		return file, nil
	}
	pathEnv, ok := defaultPath, false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found && !ok {
			pathEnv, ok = v, true
		}
	}
	denied := false
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		cand := dir + "/" + file
		err := checkExecutable(cand)
		if err == nil {
			return cand, nil
		}
		denied = denied || errors.Is(err, syscall.EACCES)
	}
	if denied {
		return "", syscall.EACCES
	}
	return "", syscall.ENOENT
}

// checkExecutable reports whether path is an executable regular file.
func checkExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return syscall.EACCES
	}
	if err := unix.Faccessat(unix.AT_FDCWD, path, unix.X_OK, unix.AT_EACCESS); err != nil {
		return err
	}
	return nil
}
