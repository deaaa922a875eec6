package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// secrets are the server's own files that no sandboxed command may read
// (docs/sandbox.md §7): the WebSocket token file. A process-wide set, filled
// once at start-up by the server's command line, read by NewContext.
var secrets struct {
	mu    sync.Mutex
	paths []string
}

// MaskSecrets adds files of the server (such as --ws-token-file) to the
// deny paths of every plan resolved afterwards with a restricted file
// system; an unrestricted file system grants the host anyway. Each path is
// recorded with its symlinks resolved (the file the server read).
func MaskSecrets(paths ...string) {
	secrets.mu.Lock()
	defer secrets.mu.Unlock()
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		secrets.paths = append(secrets.paths, abs)
	}
}

// maskedSecrets returns a copy of the registered secret paths.
func maskedSecrets() []string {
	secrets.mu.Lock()
	defer secrets.mu.Unlock()
	return slices.Clone(secrets.paths)
}

// existing keeps the paths that exist now (deny paths must).
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
