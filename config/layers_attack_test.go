package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trustedRepo makes a trusted repository and returns it with the CODEX_HOME
// that trusts it.
func trustedRepo(t *testing.T) (home, repo string) {
	t.Helper()
	home, repo = t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git"), []byte("gitdir: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	trust := "[projects.\"" + repo + "\"]\ntrust_level = \"trusted\"\n"
	if err := os.WriteFile(filepath.Join(home, FileName), []byte(trust), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, repo
}

// A command sandboxed to write its workspace can make the project's
// .codex/config.toml a FIFO. The server reads that file on every
// environmentConfig/read: opening a FIFO blocks until a writer comes, so
// the server's handler for the connection would hang for good. The read
// must not block: a file that is not a regular file is an error.
func TestProjectConfigFIFODoesNotHang(t *testing.T) {
	home, repo := trustedRepo(t)
	fifo := filepath.Join(repo, ".codex", FileName)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readConfig(t, home, repo, [][]string{{"mcp_servers"}})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("err = %v, want a refusal of the FIFO", err)
		}
	case <-time.After(5 * time.Second):
		// Release the reader so that the test does not leak it.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("ReadLayers blocked on a FIFO")
	}
}

// The same command can make the file as large as its disk allows; the
// server reads it whole into memory. A file above the bound is refused
// without being read.
func TestProjectConfigSizeBounded(t *testing.T) {
	home, repo := trustedRepo(t)
	f, err := os.Create(filepath.Join(repo, ".codex", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxLayerBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = readConfig(t, home, repo, [][]string{{"mcp_servers"}})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v, want the file refused for its size", err)
	}
}
