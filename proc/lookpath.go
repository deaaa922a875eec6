//go:build unix

package proc

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// defaultPath is the search path execvp(3) uses when PATH is unset.
const defaultPath = "/bin:/usr/bin"

// lookPath resolves name the way execvp(3) would in the child: against the
// PATH in env (the child's environment, not the server's, which is why
// exec.LookPath does not fit), with relative entries and relative results
// taken relative to dir (the child's working directory; "" is ours).
//
// A name containing '/' is returned unchanged: the child execs it after its
// chdir, so a relative one resolves against dir and a missing one fails in
// the child with ENOENT. Otherwise the first PATH entry holding an
// executable regular file wins. Like execvp, entries that give EACCES are
// skipped but remembered: the error wraps syscall.EACCES if one was seen,
// else syscall.ENOENT.
//
// execvp's fallback of running an ENOEXEC file through /bin/sh is not
// emulated.
func lookPath(name string, env []string, dir string) (string, error) {
	if name == "" {
		return "", &fs.PathError{Op: "exec", Path: name, Err: syscall.ENOENT}
	}
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, ok := getenv(env, "PATH")
	if !ok {
		path = defaultPath
	}
	sawEACCES := false
	for _, entry := range filepath.SplitList(path) {
		if entry == "" {
			entry = "." // an empty entry means the working directory
		}
		candidate := entry + "/" + name
		check := candidate
		if dir != "" && !filepath.IsAbs(check) {
			check = filepath.Join(dir, check)
		}
		switch err := executable(check); err {
		case nil:
			return check, nil
		case syscall.EACCES:
			sawEACCES = true
		}
	}
	if sawEACCES {
		return "", &fs.PathError{Op: "exec", Path: name, Err: syscall.EACCES}
	}
	return "", &fs.PathError{Op: "exec", Path: name, Err: syscall.ENOENT}
}

// executable returns nil if path is a regular file that we may execute,
// syscall.EACCES if execve would refuse it for permissions (including for a
// directory), and another errno otherwise.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			return pe.Err
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		return syscall.EACCES
	}
	if err := syscall.Access(path, 1 /* X_OK */); err != nil {
		return err
	}
	return nil
}

// getenv returns the value of the first key=value entry in env, which is
// what getenv(3) in the child will see.
func getenv(env []string, key string) (string, bool) {
	for _, kv := range env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return kv[len(key)+1:], true
		}
	}
	return "", false
}
