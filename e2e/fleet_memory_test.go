package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/mountinfo"
)

// memCgroup is a cgroup this test made with a memory limit, and how to
// start a process inside it.
type memCgroup struct {
	dir   string
	v1    bool // a cgroup v1 memory hierarchy (hybrid host), not v2
	limit int64
}

// makeMemCgroup makes a cgroup with a memory limit of limit bytes below
// ours: in cgroup v2 where the memory controller can be enabled for our
// children, else in a v1 memory hierarchy; it skips with the reasons when
// neither can be written. The cgroup is removed at the end of the test.
func makeMemCgroup(t *testing.T, limit int64) *memCgroup {
	t.Helper()
	name := fmt.Sprintf("codex-e2e-mem-%d", os.Getpid())
	var why []string
	v2 := func() (string, error) {
		mnt, err := mountinfo.Cgroup2Mount()
		if err != nil {
			return "", err
		}
		own := filepath.Join(mnt, selfCgroupLine(t, func(ctrls string) bool { return ctrls == "" }))
		ctrls, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
		if err != nil || !slices.Contains(strings.Fields(string(ctrls)), "memory") {
			return "", fmt.Errorf("no memory controller in %s", own)
		}
		if err := os.WriteFile(filepath.Join(own, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
			return "", err // EBUSY: our cgroup holds processes and is not the root
		}
		return own, nil
	}
	v1 := func() (string, error) {
		mnt := v1MemoryMount()
		if mnt == "" {
			return "", errors.New("no cgroup v1 memory hierarchy")
		}
		return filepath.Join(mnt, selfCgroupLine(t, func(ctrls string) bool { return slices.Contains(strings.Split(ctrls, ","), "memory") })), nil
	}
	for i, find := range []func() (string, error){v2, v1} {
		parent, err := find()
		if err == nil {
			cg := &memCgroup{dir: filepath.Join(parent, name), v1: i == 1, limit: limit}
			if err = cg.make(t); err == nil {
				return cg
			}
		}
		why = append(why, fmt.Sprintf("cgroup v%d: %v", 2-i, err))
	}
	t.Skipf("cannot make a memory-limited cgroup here: %s", strings.Join(why, "; "))
	return nil
}

// make creates the directory, sets the limit and schedules the removal.
func (cg *memCgroup) make(t *testing.T) error {
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		return err
	}
	file := "memory.max"
	if cg.v1 {
		file = "memory.limit_in_bytes"
	}
	if err := os.WriteFile(filepath.Join(cg.dir, file), []byte(strconv.FormatInt(cg.limit, 10)), 0); err != nil {
		_ = os.Remove(cg.dir)
		return err
	}
	t.Cleanup(func() {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			err := os.Remove(cg.dir)
			if err == nil || os.IsNotExist(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("removing %s: %v", cg.dir, err)
				return
			}
		}
	})
	return nil
}

// enter makes cmd start inside the cgroup: CLONE_INTO_CGROUP in v2; in v1
// a shell that moves itself in and then execs the command.
func (cg *memCgroup) enter(t *testing.T) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) {
		if !cg.v1 {
			fd, err := unix.Open(cg.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fd) })
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
			return
		}
		cmd.Args = append([]string{"sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", cg.dir, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = "/bin/sh"
	}
}

// selfCgroupLine returns the path of the first line of /proc/self/cgroup
// whose controller list satisfies match.
func selfCgroupLine(t *testing.T, match func(ctrls string) bool) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && match(parts[1]) {
			return parts[2]
		}
	}
	return "/"
}

// v1MemoryMount is the mount point of the cgroup v1 memory hierarchy, or "".
func v1MemoryMount() string {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 4 && fields[2] == "cgroup" && slices.Contains(strings.Split(fields[3], ","), "memory") {
			return fields[1]
		}
	}
	return ""
}

// TestMemoryPercentOfCgroupLimit: in a cgroup limited to 768 MiB (as a
// container is), --max-memory-per-process 50% is 384 MiB — half of what
// the server may use, not half of the host's RAM. The server logs the limit
// with its source, and a command's leaf carries it where the hierarchy
// lets the server set memory.max on its leaves. It used to take the
// percentage of physical memory.
func TestMemoryPercentOfCgroupLimit(t *testing.T) {
	const limit = 768 << 20
	cg := makeMemCgroup(t, limit)
	s := startServerWith(t, binary, cg.enter(t), "--max-memory-per-process", "50%", "--session-ttl", "0")
	var line string
	for _, l := range strings.Split(s.stderr.String(), "\n") {
		if strings.Contains(l, "memory limit per process") {
			line = l
		}
	}
	want := strconv.Itoa(limit / 2)
	if !strings.Contains(line, `"bytes": `+want) || !strings.Contains(line, `"of": "`+cg.dir+"/memory.") {
		t.Fatalf("want a log line of %s bytes taken of %s's limit; got %q", want, cg.dir, line)
	}
	c := dial(t, s.URL, nil)
	c.handshake()
	c.ok("process/start", startParams("probe", "/bin/sleep", "30"), nil)
	defer func() {
		c.ok("process/terminate", map[string]any{"processId": "probe"}, nil)
		c.events("probe", 10*time.Second)
	}()
	dir := logDir(s, "cgroup mode")
	leaves, _ := filepath.Glob(filepath.Join(dir, "*", "memory.max"))
	if dir == "" || len(leaves) == 0 {
		t.Logf("no memory.max on the server's leaves here (cgroup mode dir %q; docs/operations.md §4): checked the log only", dir)
		return
	}
	for _, l := range leaves {
		if got := readTrim(l); got != want {
			t.Errorf("%s = %s, want %s", l, got, want)
		}
	}
}
