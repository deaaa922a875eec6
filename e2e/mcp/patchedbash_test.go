package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPatchedBashSelection runs scripts/patched-bash.sh on a fake package
// (REF_PKG_DIR) with fake os-release files: the build is chosen as the
// package's launcher does (ID, then ID_LIKE, a VERSION_ID prefix, else the
// first variant), and a build that does not run here is passed over.
func TestPatchedBashSelection(t *testing.T) {
	t.Parallel()
	triple := map[string]string{"amd64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}[runtime.GOARCH]
	if triple == "" {
		t.Skip("no patched Bash for " + runtime.GOARCH)
	}
	pkg := t.TempDir()
	runs := "#!/bin/sh\necho ok\n"
	for _, v := range []string{"ubuntu-22.04", "ubuntu-20.04", "debian-12", "debian-11", "centos-9"} {
		writeExe(t, filepath.Join(pkg, "vendor", triple, "bash", v, "bash"), runs)
	}
	// like the real ubuntu-24.04 build on an older glibc: present, but it does not start
	writeExe(t, filepath.Join(pkg, "vendor", triple, "bash", "ubuntu-24.04", "bash"), "#!/bin/sh\nexit 1\n")
	script, err := filepath.Abs("../../scripts/patched-bash.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ osRelease, want string }{
		{"ID=debian\nVERSION_ID=\"12\"\n", "debian-12"},
		{"ID=debian\nVERSION_ID=\"11\"\n", "debian-11"},
		{"ID=ubuntu\nVERSION_ID=\"22.04\"\n", "ubuntu-22.04"},
		{"ID=\"rocky\"\nVERSION_ID=\"9.3\"\n", "centos-9"},
		{"ID=linuxmint\nID_LIKE=\"ubuntu debian\"\nVERSION_ID=\"21.3\"\n", "ubuntu-22.04"}, // ubuntu-24.04 first, does not run
		{"ID=raspbian\nID_LIKE=debian\nVERSION_ID=\"11\"\n", "debian-11"},
		{"ID=plan9\n", "ubuntu-22.04"}, // the launcher's last resort, ubuntu-24.04, does not run
		{"ID=ubuntu\nVERSION_ID=\"24.04\"\n", "ubuntu-22.04"},
	} {
		osr := filepath.Join(t.TempDir(), "os-release")
		writeFile(t, osr, c.osRelease, 0o644)
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), "REF_PKG_DIR="+pkg, "OS_RELEASE="+osr)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%q: %v", c.osRelease, err)
			continue
		}
		if got, want := strings.TrimSpace(string(out)), filepath.Join(pkg, "vendor", triple, "bash", c.want, "bash"); got != want {
			t.Errorf("%q: chose %s, want %s", c.osRelease, got, want)
		}
	}
}

// TestPatchedBashNoneRuns: when no build starts here, the script fails
// (exit 1, not the "unreachable" 3) and says so.
func TestPatchedBashNoneRuns(t *testing.T) {
	t.Parallel()
	triple := map[string]string{"amd64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}[runtime.GOARCH]
	if triple == "" {
		t.Skip("no patched Bash for " + runtime.GOARCH)
	}
	pkg := t.TempDir()
	writeExe(t, filepath.Join(pkg, "vendor", triple, "bash", "debian-12", "bash"), "#!/bin/sh\nexit 1\n")
	cmd := exec.Command("bash", "../../scripts/patched-bash.sh")
	cmd.Env = append(os.Environ(), "REF_PKG_DIR="+pkg)
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "no patched Bash build") {
		t.Errorf("err %v, output %q; want exit 1 naming the problem", err, out)
	}
}

func writeExe(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, content, 0o755)
}
