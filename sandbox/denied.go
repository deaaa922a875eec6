package sandbox

import (
	"bytes"
	"strings"
)

// denialKeywords are the lower-case texts that mark a sandbox denial in a
// command's output (docs/protocol.md §8.4).
var denialKeywords = []string{
	"operation not permitted",
	"permission denied",
	"read-only file system",
	"seccomp",
	"sandbox",
	"landlock",
	"failed to write file",
}

// LikelyDenied is the denial heuristic for a process that ran under a
// sandbox: did it probably fail because the sandbox blocked it? stdout holds
// the retained stdout and PTY output, stderr the retained stderr. It is a
// pure function, shared by the server and the client layer.
func LikelyDenied(exitCode int, stdout, stderr []byte) bool {
	if exitCode == 0 {
		return false
	}
	both := make([]byte, 0, len(stdout)+len(stderr))
	both = append(append(both, stdout...), stderr...)
	for _, text := range [][]byte{stdout, stderr, both} {
		lower := strings.ToLower(string(bytes.ToValidUTF8(text, []byte("\uFFFD"))))
		for _, k := range denialKeywords {
			if strings.Contains(lower, k) {
				return true
			}
		}
	}
	switch exitCode {
	case 2, 126, 127:
		return false
	case 128 + 31: // SIGSYS: a seccomp kill
		return true
	}
	return false
}
