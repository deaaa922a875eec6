package execserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
func loginShell(name string) string { return passwdShells.lookup("/etc/passwd", name) }

// passwdShells remembers the last passwd lookup: every initialize answer
// names the shell (environmentInfo), and a stat of the file is one system
// call where reading it again is five. The answer is reused while the
// file is the same file (device and inode) with the same size and
// modification time: an edit in place or a rename over it changes one.
var passwdShells shellCache

type shellCache struct {
	mu    sync.Mutex
	fi    os.FileInfo // of the file the answer was read from; nil: none yet
	mtime time.Time
	size  int64
	path  string
	name  string
	shell string
}

func (c *shellCache) lookup(path, name string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fi != nil && c.path == path && c.name == name && os.SameFile(c.fi, fi) && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c.shell
	}
	shell, read := readLoginShell(path, name)
	if read == nil {
		c.fi = nil
		return shell
	}
	c.fi, c.mtime, c.size, c.path, c.name, c.shell = read, read.ModTime(), read.Size(), path, name, shell
	return shell
}

// readLoginShell reads name's shell from the passwd file at path, and
// returns the file's state taken before the read (nil on an error): a
// change during the read shows at the next stat.
func readLoginShell(path, name string) (string, os.FileInfo) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "", nil
	}
	return shellOf(data, name), fi
}

// shellOf finds name's shell in passwd data.
func shellOf(data []byte, name string) string {
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
