//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseChildArgs(t *testing.T) {
	if a, err := parseChildArgs([]string{"--plan-fd", "3"}); err != nil || a.planFD != 3 || a.probe {
		t.Errorf("%+v %v", a, err)
	}
	if a, err := parseChildArgs([]string{"--plan-fd", "7", "--probe"}); err != nil || a.planFD != 7 || !a.probe {
		t.Errorf("%+v %v", a, err)
	}
	for _, bad := range [][]string{nil, {"--plan-fd"}, {"--plan-fd", "x"}, {"--plan-fd", "1"}, {"--plan-fd", "3", "--", "ls"}} {
		if _, err := parseChildArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestReadPlan(t *testing.T) {
	f, err := sealedMemfd("t", []byte(`{"argv":["ls"],"dir":"/w","env":null}`))
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := unix.Dup(int(f.Fd()))
	f.Close()
	p, err := readPlan(fd)
	if err != nil || !reflect.DeepEqual(p.Argv, []string{"ls"}) || p.Dir != "/w" {
		t.Errorf("%+v %v", p, err)
	}
	// A field the helper does not know could be a restriction: refuse.
	f, _ = sealedMemfd("t", []byte(`{"argv":["ls"],"futureRestriction":true}`))
	fd, _ = unix.Dup(int(f.Fd()))
	f.Close()
	if _, err := readPlan(fd); err == nil || !strings.Contains(err.Error(), "futureRestriction") {
		t.Errorf("unknown field: %v", err)
	}
}

func TestCommandEnv(t *testing.T) {
	p := Plan{Env: []string{"A=1", "CODEX_SANDBOX_NETWORK_DISABLED=0"}, NetworkDisabled: true}
	if got := commandEnv(&p); !reflect.DeepEqual(got, []string{"A=1", "CODEX_SANDBOX_NETWORK_DISABLED=1"}) {
		t.Errorf("%q", got)
	}
	p = Plan{Env: []string{"A=1"}}
	if got := commandEnv(&p); !reflect.DeepEqual(got, []string{"A=1"}) {
		t.Errorf("%q", got)
	}
	if got := commandEnv(&Plan{}); got == nil || len(got) != 0 {
		t.Errorf("empty env: %q", got)
	}
}

func TestCommandPath(t *testing.T) {
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "tool"), filepath.Join(dir, "data")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(plain, []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	env := []string{"PATH=" + dir + ":/usr/bin:/bin"}
	for _, tc := range []struct {
		file, want string
		err        error
	}{
		{"tool", exe, nil},
		{"data", "", syscall.EACCES},
		{"sub", "", syscall.EACCES},
		{"no-such-tool", "", syscall.ENOENT},
		{exe, exe, nil},
		{dir + "/missing", "", syscall.ENOENT},
		{"", "", syscall.ENOENT},
	} {
		got, err := commandPath(tc.file, env)
		if got != tc.want || (tc.err == nil) != (err == nil) || tc.err != nil && !isErrno(err, tc.err) {
			t.Errorf("%q: %q, %v; want %q, %v", tc.file, got, err, tc.want, tc.err)
		}
	}
	// No PATH: /bin:/usr/bin.
	if got, err := commandPath("sh", nil); err != nil || (got != "/bin/sh" && got != "/usr/bin/sh") {
		t.Errorf("default PATH: %q %v", got, err)
	}
}

// isErrno reports whether err carries errno want.
func isErrno(err, want error) bool {
	for e := err; e != nil; {
		if e == want {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

func TestCapsRetained(t *testing.T) {
	var d [2]unix.CapUserData
	if capsRetained(d) {
		t.Error("zero sets reported as retained")
	}
	d[1].Permitted = 1
	if !capsRetained(d) {
		t.Error("a permitted capability in the high word is missed")
	}
	d = [2]unix.CapUserData{{Inheritable: 1}}
	if capsRetained(d) {
		t.Error("inheritable alone is not effective or permitted")
	}
	if errCapsRetained.Error() != "Linux sandbox retained effective or permitted capabilities" {
		t.Errorf("text %q", errCapsRetained)
	}
}

func TestProtectWatcherFinish(t *testing.T) {
	var nilW *protectWatcher
	if nilW.finish(3) != 3 || nilW.finish(0) != 0 {
		t.Error("nil watcher changes the status")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, ".codex")
	w, err := watchProtected([]string{p}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(p, "sub"), 0o755)
	// The watcher removes it as soon as it appears.
	for i := 0; ; i++ {
		if _, err := os.Lstat(p); err != nil {
			break
		}
		if i == 5000 {
			t.Fatal("the watcher never removed the protected path")
		}
		time.Sleep(time.Millisecond)
	}
	if got := w.finish(0); got != 1 {
		t.Errorf("created: %d, want 1", got)
	}
	if _, err := os.Lstat(p); err == nil {
		t.Error("the protected path survives")
	}
	w, _ = watchProtected([]string{p}, nil, false)
	if got := w.finish(0); got != 0 {
		t.Errorf("untouched: %d", got)
	}
	w, _ = watchProtected([]string{p}, nil, false)
	os.Mkdir(p, 0o755)
	if got := w.finish(4); got != 4 {
		t.Errorf("failed run: %d, want 4", got)
	}
}

// TestChildOptionsValidate checks that a helper composed without an fs
// helper refuses an fs-helper plan (fail closed) and runs the others.
func TestChildOptionsValidate(t *testing.T) {
	fs := ChildOptions{FSHelper: func() int { return 0 }}
	for _, tc := range []struct {
		name string
		opts ChildOptions
		plan Plan
		want error
	}{
		{"fs plan without fs helper", ChildOptions{}, Plan{FSHelper: true}, errNoFSHelper},
		{"fs plan with fs helper", fs, Plan{FSHelper: true}, nil},
		{"command plan without fs helper", ChildOptions{}, Plan{Argv: []string{"true"}}, nil},
	} {
		if got := tc.opts.validate(&tc.plan); got != tc.want {
			t.Errorf("%s: validate = %v, want %v", tc.name, got, tc.want)
		}
	}
}
