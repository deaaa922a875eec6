//go:build linux

package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// testLauncherArg0 is the argv[0] under which the test binary plays a
// server that wraps and runs the plan read from stdin (used to run as a
// non-root user).
const testLauncherArg0 = "sandbox-test-launcher"

// testFSHelper stands in for the fs helper: for each "write PATH" line on
// stdin it writes PATH and prints "ok" or the error; then it prints the
// privileges of every thread of the process.
func testFSHelper() int {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		path, ok := strings.CutPrefix(sc.Text(), "write ")
		if !ok {
			continue
		}
		if err := os.WriteFile(path, []byte("fs"), 0o644); err != nil {
			fmt.Println(err)
		} else {
			fmt.Println("ok")
		}
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			fmt.Println("task", task.Name(), err)
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, k := range []string{"CapEff:", "CapPrm:", "NoNewPrivs:", "Seccomp:"} {
				if strings.HasPrefix(line, k) {
					fmt.Println("task", line)
				}
			}
		}
	}
	return 0
}

// runTestLauncher wraps the plan on stdin and runs it like the server.
func runTestLauncher() int {
	var p sandbox.Plan
	if err := json.NewDecoder(os.Stdin).Decode(&p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w, err := sandbox.Wrap(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cmd := w.Command(context.Background())
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return 2
	}
	return cmd.ProcessState.ExitCode()
}

// TestChildFSHelper runs the in-process fs helper under the plan: writes
// outside the roots fail with EROFS, and no thread keeps a capability.
func TestChildFSHelper(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root, outside := testDir(t), testDir(t)
	p := workspacePlan(root, false)
	p.FSHelper = true
	cmd, closePlan := helperCmd(t, t.Context(), p)
	cmd.Stdin = strings.NewReader("write " + outside + "/f\nwrite " + root + "/g\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	closePlan()
	if code := helperExitCode(t, cmd, err); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 2+4 || !strings.Contains(lines[0], "read-only file system") || lines[1] != "ok" {
		t.Fatalf("output %q", stdout.String())
	}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "task" {
			t.Errorf("bad line %q", l)
			continue
		}
		if want := map[string]string{"CapEff:": "0000000000000000", "CapPrm:": "0000000000000000",
			"NoNewPrivs:": "1", "Seccomp:": "2"}[f[1]]; f[2] != want {
			t.Errorf("a thread has %s %s, want %s", f[1], f[2], want)
		}
	}
	if hostFile(t, root+"/g") != "fs" {
		t.Error("the write inside did not reach the host")
	}
}

// TestChildNonRoot runs a server as an unprivileged user, which gets a
// user namespace from Wrap.
func TestChildNonRoot(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests already run through a user namespace")
	}
	if fi, err := os.Stat(os.TempDir()); err != nil || fi.Mode().Perm()&0o001 == 0 {
		t.Skipf("TMPDIR %s is not searchable by other users (%v): nobody could not reach the test's files", os.TempDir(), err)
	}
	const nobody = 65534
	bin := copySelf(t)
	root, outside := testDir(t), testDir(t)
	for _, d := range []string{root, outside} {
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		openPath(t, d)
	}
	const caps = "; grep -E '^(Cap(Eff|Prm|Inh|Bnd|Amb)|NoNewPrivs):' /proc/self/status"
	noCaps := []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapInh:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"}
	p := workspacePlan(root, false, shArgv("id -u; echo in > inside; echo x > "+outside+"/f"+caps)...)
	p.RecordIdentities()
	r := runAsUser(t, bin, nobody, p)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "0\n") {
		t.Fatalf("as nobody: %v", r)
	}
	mustContain(t, r, append(noCaps, "Read-only file system")...)
	if hostFile(t, root+"/inside") != "in\n" {
		t.Error("the write inside did not reach the host")
	}
	if _, err := os.Stat(outside + "/f"); err == nil {
		t.Error("the write outside reached the host")
	}
	// A plan that writes everywhere: the user namespace Wrap adds lets
	// the helper empty the bounding set too (issue 17 item 8).
	full := sandbox.Plan{Argv: shArgv("id -u" + caps), Dir: root, Env: testEnv, Seccomp: sandbox.SeccompRestricted, NetworkDisabled: true}
	if r := runAsUser(t, bin, nobody, full); r.code != 0 {
		t.Fatalf("full write as nobody: %v", r)
	} else {
		mustContain(t, r, noCaps...)
	}
}

// runAsUser runs plan through the test launcher as uid (and gid) id.
func runAsUser(t *testing.T, bin string, id int, p sandbox.Plan) runResult {
	t.Helper()
	plan, _ := json.Marshal(p)
	var stdout, stderr bytes.Buffer
	cmd := &exec.Cmd{Path: bin, Args: []string{testLauncherArg0}, Env: []string{},
		Stdin: bytes.NewReader(plan), Stdout: &stdout, Stderr: &stderr,
		SysProcAttr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id), Gid: uint32(id)}}}
	err := cmd.Run()
	return runResult{code: helperExitCode(t, cmd, err), stdout: stdout.String(), stderr: stderr.String()}
}

// copySelf copies the test binary where any user can execute it.
func copySelf(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := testDir(t)
	openPath(t, dir)
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "sandbox.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// openPath makes dir and its parents below the temp root traversable.
func openPath(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
