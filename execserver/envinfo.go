package execserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"

	"github.com/codexec/codex/wire"
)

// environmentInfo describes the machine the server runs on
// (docs/protocol.md §6.3). Its capabilities are filled in by the caller,
// from the capabilities table (methods.go).
func environmentInfo(version string, env []string) wire.EnvironmentInfo {
	cwd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	info := wire.EnvironmentInfo{
		Shell:                detectShell(env),
		ExecutorVersion:      version,
		ProviderID:           providerID(),
		Cwd:                  wire.FileURI(cwd),
		UserHomeDir:          wire.FileURI(home),
		PlatformOS:           "linux",
		PrependPathDirs:      prependPathDirs(),
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

// providerID names this host, opaquely: "sha256:" and the hex digest of
// /etc/machine-id (the host name when there is none) under a label of our
// own, so that the identifier does not disclose the machine id. The
// reference's input is unknown; only the form is its (docs/protocol.md §6.3).
var providerID = sync.OnceValue(func() string {
	id, err := os.ReadFile("/etc/machine-id")
	if s := strings.TrimSpace(string(id)); err != nil || s == "" {
		host, _ := os.Hostname()
		id = []byte("host:" + host)
	}
	sum := sha256.Sum256(append([]byte("codex exec-server provider\n"), id...))
	return "sha256:" + hex.EncodeToString(sum[:])
})

// prependPathDirs is the tool folder of the package this binary was
// installed from, as the reference finds it: `codex-package.json` in the
// folder above the binary's, whose `pathDir` names a folder next to it
// (`codex-path`, holding rg). None when the binary is not in such a
// package, which is the usual case for this executor.
var prependPathDirs = sync.OnceValue(func() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	root := filepath.Dir(filepath.Dir(exe))
	data, err := os.ReadFile(filepath.Join(root, "codex-package.json"))
	if err != nil {
		return nil
	}
	var pkg struct {
		PathDir string `json:"pathDir"`
	}
	if json.Unmarshal(data, &pkg) != nil || pkg.PathDir == "" || !filepath.IsLocal(pkg.PathDir) {
		return nil
	}
	dir := filepath.Join(root, pkg.PathDir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	return []string{wire.FileURI(dir)}
})

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
