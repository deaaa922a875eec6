package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyBinary copies the codex binary to dst (mode 0755).
func copyBinary(t *testing.T, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// selfAttacks are the ways a sandboxed command tries to replace our own
// executable at bin/codex (relative to the workspace) with a script.
var selfAttacks = []string{
	"mv evil.sh bin/codex",
	"cp evil.sh bin/codex",
	"cat evil.sh > bin/codex",
	"echo >> bin/codex",
	"rm -f bin/codex",
	"ln -f evil.sh bin/codex",
	"mv bin bin2 && mkdir bin && cp evil.sh bin/codex",
}

// evilScript is written into the workspace before each attack.
const evilScript = "printf '#!/bin/sh\\necho pwned\\n' > evil.sh && chmod +x evil.sh && "

// assertSelfIntact fails unless bin/codex in root still is the original
// binary, byte for byte, and bin2 did not come into existence.
func assertSelfIntact(t *testing.T, root, what string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(root, "bin", "codex"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: our executable was replaced or changed (err %v, %d bytes, want %d)", what, err, len(got), len(want))
	}
	if _, err := os.Stat(filepath.Join(root, "bin2")); err == nil {
		t.Fatalf("%s: the executable's folder was renamed", what)
	}
}

// TestSandboxCannotReplaceOwnBinary is the read-only half of escape 4 of
// docs/sandbox.md §6: our executable lies inside the workspace (a repository used as
// its own workspace). A sandboxed process/start, a sandboxed fs/writeFile
// and `codex sandbox` each try to overwrite, replace or move it; every
// attempt must fail and the file must stay the same, and a later sandboxed
// start (which re-executes the helper) must still run the real helper.
func TestSandboxCannotReplaceOwnBinary(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := filepath.Join(root, "bin", "codex")
	copyBinary(t, self)
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	s := startServerFrom(t, self)
	c := dial(t, s.URL, nil)
	c.handshake()
	sb := workspaceSandbox(root, "restricted")

	for i, attack := range selfAttacks {
		out, code, _ := runSandboxed(t, c, sandboxedStart("self-"+itoa(i), root, sb, false, evilScript+attack))
		if code == 0 {
			t.Errorf("process/start %q succeeded: %q", attack, out)
		}
		assertSelfIntact(t, root, "process/start "+attack, want)
	}
	r := c.call("fs/writeFile", map[string]any{"path": "file://" + self, "dataBase64": "IyEvYmluL3NoCg==", "sandbox": sb})
	if r.Error == nil {
		t.Errorf("sandboxed fs/writeFile over our executable succeeded")
	} else {
		t.Logf("fs/writeFile: %d %s", r.Error.Code, r.Error.Message)
	}
	assertSelfIntact(t, root, "fs/writeFile", want)

	for _, attack := range selfAttacks {
		cmd := exec.Command(self, "sandbox", "--mode", "workspace-write", "--exclude-tmp", "--", "sh", "-c", evilScript+attack)
		cmd.Dir, cmd.Env = root, []string{raceEnv, "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("codex sandbox %q succeeded: %q", attack, out)
		}
		assertSelfIntact(t, root, "codex sandbox "+attack, want)
	}

	out, code, _ := runSandboxed(t, c, sandboxedStart("after", root, sb, false, "echo still-sandboxed; touch /outside-"+filepath.Base(root)))
	if code == 0 || strings.Contains(out, "pwned") || !strings.Contains(out, "still-sandboxed") {
		t.Fatalf("the start after the attacks: code %d out %q", code, out)
	}
}
