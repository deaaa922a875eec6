package execserver

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/codexec/codex/wire"
)

// environmentInfo describes the machine the server runs on (
// docs/protocol.md §6.3). Capabilities stay empty until the matching features exist: the
// client then never sends what we do not implement.
func environmentInfo(version string, env []string) wire.EnvironmentInfo {
	cwd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	info := wire.EnvironmentInfo{
		Shell:                detectShell(env),
		ExecutorVersion:      version,
		Cwd:                  wire.FileURI(cwd),
		UserHomeDir:          wire.FileURI(home),
		PlatformOS:           "linux",
		TemporaryDirectories: []string{},
		TempDir:              wire.FileURI(os.TempDir()),
		Capabilities:         map[string]bool{},
	}
	if tmp, ok := envLookup(env, "TMPDIR"); ok && tmp != "" {
		if !filepath.IsAbs(tmp) {
			tmp = filepath.Join(cwd, tmp)
		}
		info.TemporaryDirectories = append(info.TemporaryDirectories, wire.FileURI(filepath.Clean(tmp)))
	}
	return info
}

// detectShell uses $SHELL, then the passwd entry, then /bin/sh.
func detectShell(env []string) wire.Shell {
	path, _ := envLookup(env, "SHELL")
	if path == "" {
		if u, err := user.Current(); err == nil {
			path = loginShell(u.Username)
		}
	}
	if path == "" {
		path = "/bin/sh"
	}
	return wire.Shell{Name: filepath.Base(path), Path: path}
}

// loginShell reads the user's shell from /etc/passwd.
func loginShell(name string) string {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 7 && f[0] == name {
			return f[6]
		}
	}
	return ""
}

// envLookup returns the value of key in a "K=V" list.
func envLookup(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
