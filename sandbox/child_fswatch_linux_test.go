//go:build linux

package sandbox_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestChildFSHelperSparesHeldPlaceholder: an fs helper's watcher spares
// another run's placeholder that appears while the fs operation runs (an
// empty read-only folder held by a lock), also once the helper's filter
// hides openat2 (ENOSYS), as it does for every sweep but the first:
// removing it would detach that run's read-only mount and let its command
// create the protected name.
func TestChildFSHelperSparesHeldPlaceholder(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := testDir(t)
	git := filepath.Join(root, ".git")
	p := workspacePlan(root, false)
	p.FSHelper = true
	p.ProtectedCreate = []string{git}
	cmd, closePlan := helperCmd(t, t.Context(), p)
	defer closePlan()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first answer comes once the helper is restricted and watching.
	r := bufio.NewReader(stdout)
	if _, err := stdin.Write([]byte("write " + root + "/f\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ok" {
		t.Fatalf("first answer %q %v; stderr %s", line, err, stderr.String())
	}
	// Another run's placeholder, made and held now.
	if err := os.Mkdir(git, 0o555); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(git, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // a dozen of the watcher's polls
	stdin.Close()
	go func() { _, _ = r.WriteTo(discard{}) }()
	err = cmd.Wait()
	if code := helperExitCode(t, cmd, err); code != 0 {
		t.Errorf("exit %d, want 0: %s", code, stderr.String())
	}
	if _, err := os.Lstat(git); err != nil {
		t.Errorf("the fs helper's watcher removed another run's held placeholder: %v; stderr %s", err, stderr.String())
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
