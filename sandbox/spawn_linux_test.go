//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNormalizeNamespaces: every helper gets mount, PID, IPC and cgroup
// namespaces whatever its plan asked for (issue 17 item 8), network ones
// with the network off, user ones when the server is not root.
func TestNormalizeNamespaces(t *testing.T) {
	const base = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP
	for _, tc := range []struct {
		name  string
		plan  Plan
		euid  int
		flags uintptr
	}{
		{"seccomp only", Plan{Seccomp: SeccompRestricted}, 1000, base | unix.CLONE_NEWNET | unix.CLONE_NEWUSER},
		{"seccomp only as root", Plan{Seccomp: SeccompRestricted}, 0, base | unix.CLONE_NEWNET},
		{"network disabled", Plan{NetworkDisabled: true}, 0, base | unix.CLONE_NEWNET},
		{"vsock filter keeps the network", Plan{Seccomp: SeccompVMSocketRestricted}, 0, base},
		{"empty plan", Plan{}, 0, base},
		{"mounts", Plan{ReadOnlyRoot: true, NewPIDNS: true}, 0, base},
		{"net", Plan{NewMountNS: true, NewPIDNS: true, NewNetNS: true}, 0, base | unix.CLONE_NEWNET},
		{"non-root gets userns", Plan{NewMountNS: true, NewPIDNS: true}, 1000, base | unix.CLONE_NEWUSER},
		{"root keeps requested userns", Plan{NewMountNS: true, NewUserNS: true}, 0, base | unix.CLONE_NEWUSER},
	} {
		p := normalizeNamespaces(tc.plan, tc.euid)
		if got := cloneflags(&p); got != tc.flags {
			t.Errorf("%s: flags %#x, want %#x", tc.name, got, tc.flags)
		}
	}
}

func TestWrap(t *testing.T) {
	plan := Plan{Argv: []string{"sh", "-c", "true"}, Dir: "/w", Env: []string{"A=1"}, NewPIDNS: true,
		ReadOnlyRoot: true, Seccomp: SeccompRestricted, NetworkDisabled: true}
	w, err := Wrap(plan)
	if err != nil {
		t.Fatal(err)
	}
	defer w.ExtraFiles[0].Close()
	if w.Path != SelfExe || !reflect.DeepEqual(w.Argv, []string{HelperName, "--plan-fd", "3"}) {
		t.Errorf("path %q argv %q", w.Path, w.Argv)
	}
	if w.Pdeathsig != syscall.SIGKILL || w.Cloneflags&(unix.CLONE_NEWNS|unix.CLONE_NEWPID) != unix.CLONE_NEWNS|unix.CLONE_NEWPID {
		t.Errorf("pdeathsig %v cloneflags %#x", w.Pdeathsig, w.Cloneflags)
	}
	if len(w.ExtraFiles) != 1 {
		t.Fatalf("%d extra files", len(w.ExtraFiles))
	}
	f := w.ExtraFiles[0]
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_WRITE == 0 || seals&unix.F_SEAL_SEAL == 0 {
		t.Errorf("seals %#x, %v", seals, err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Error("the plan memfd is writable")
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	var got Plan
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := normalizeNamespaces(plan, unix.Geteuid())
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan on the fd:\n%+v\nwant\n%+v", got, want)
	}
}

// TestWrappedCommandStarters checks that the exec.Cmd and the ForkExec
// attributes built from one WrappedCommand carry the same helper: our
// image, its argv, an empty environment, the plan fd after fds 0-2, the
// namespaces, the id maps and SIGKILL as parent-death signal.
func TestWrappedCommandStarters(t *testing.T) {
	w, err := Wrap(Plan{Argv: []string{"true"}, NewPIDNS: true, ReadOnlyRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeExtraFiles(w.ExtraFiles)
	if unix.Geteuid() != 0 && w.UidMappings == nil {
		t.Fatal("a non-root server's wrapped command has no uid map")
	}

	cmd := w.Command(context.Background())
	if cmd.Path != w.Path || !reflect.DeepEqual(cmd.Args, w.Argv) || cmd.Env == nil || len(cmd.Env) != 0 {
		t.Errorf("Command: path %q args %q env %q", cmd.Path, cmd.Args, cmd.Env)
	}
	if !reflect.DeepEqual(cmd.ExtraFiles, w.ExtraFiles) {
		t.Errorf("Command: extra files %v", cmd.ExtraFiles)
	}
	want := &syscall.SysProcAttr{Setsid: true, Cloneflags: w.Cloneflags, Pdeathsig: syscall.SIGKILL,
		UidMappings: w.UidMappings, GidMappings: w.GidMappings}
	if !reflect.DeepEqual(cmd.SysProcAttr, want) {
		t.Errorf("Command: SysProcAttr %+v, want %+v", cmd.SysProcAttr, want)
	}
	if cmd.Cancel == nil {
		t.Error("Command(ctx): not bound to the context")
	}

	pidfd := -1
	sys := &syscall.SysProcAttr{Setsid: true, Setctty: true, Pdeathsig: syscall.SIGTERM, PidFD: &pidfd}
	attr := &syscall.ProcAttr{Dir: "/x", Env: []string{"A=1"}, Files: []uintptr{10, 11, 12}, Sys: sys}
	path, argv := w.ApplyTo(attr)
	if path != w.Path || !reflect.DeepEqual(argv, w.Argv) || attr.Env == nil || len(attr.Env) != 0 {
		t.Errorf("ApplyTo: path %q argv %q env %q", path, argv, attr.Env)
	}
	if !reflect.DeepEqual(attr.Files, []uintptr{10, 11, 12, w.ExtraFiles[0].Fd()}) {
		t.Errorf("ApplyTo: files %v", attr.Files)
	}
	want = &syscall.SysProcAttr{Setsid: true, Setctty: true, PidFD: &pidfd, Cloneflags: w.Cloneflags,
		Pdeathsig: syscall.SIGKILL, UidMappings: w.UidMappings, GidMappings: w.GidMappings}
	if !reflect.DeepEqual(attr.Sys, want) {
		t.Errorf("ApplyTo: Sys %+v, want %+v", attr.Sys, want)
	}
}

// TestLauncherApply: the launcher puts the spawner's command into the plan
// (the path found, argv[0] as the child sees it, attr's Dir made
// canonical and Env), turns attr into the helper's, tells warn of a
// network-off command without a cgroup leaf, and closes the plan's memfd
// on Close. A plan Wrap refuses forks nothing.
func TestLauncherApply(t *testing.T) {
	dir := t.TempDir()
	link := dir + "/link"
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	plan := &Plan{ReadOnlyRoot: true, Seccomp: SeccompRestricted, NetworkDisabled: true}
	var warned []error
	l := NewLauncher(plan, func(err error) { warned = append(warned, err) })
	attr := &syscall.ProcAttr{Dir: link, Env: []string{"A=1"}, Files: []uintptr{0, 1, 2}}
	path, argv, err := l.Apply("/bin/sh", []string{"shell", "-c", "true"}, attr, -1)
	if err != nil {
		t.Fatal(err)
	}
	if path != SelfExe || !reflect.DeepEqual(argv, []string{HelperName, "--plan-fd", "3"}) || len(attr.Env) != 0 ||
		len(attr.Files) != 4 || attr.Sys == nil || attr.Sys.Pdeathsig != syscall.SIGKILL {
		t.Fatalf("path %q argv %q env %q files %v sys %+v", path, argv, attr.Env, attr.Files, attr.Sys)
	}
	if len(warned) != 1 {
		t.Errorf("warnings %v, want the missing leaf", warned)
	}
	memfd := l.w.ExtraFiles[0]
	fd := int(attr.Files[3])
	if int(memfd.Fd()) != fd {
		t.Fatalf("fd 3 of the helper is %d, the plan's memfd %d", fd, memfd.Fd())
	}
	data, err := io.ReadAll(io.NewSectionReader(memfd, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	var got Plan
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Argv, []string{"/bin/sh", "-c", "true"}) || got.Arg0 != "shell" || got.Dir != dir ||
		!reflect.DeepEqual(got.Env, []string{"A=1"}) || got.PTSFD != 0 {
		t.Errorf("plan command: argv %q arg0 %q dir %q env %q ptsFd %d", got.Argv, got.Arg0, got.Dir, got.Env, got.PTSFD)
	}
	if plan.Argv != nil {
		t.Error("Apply changed the caller's plan")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := memfd.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("the plan memfd after Close: %v, want closed", err)
	}

	bad := NewLauncher(&Plan{Unsandboxed: true, ReadOnlyRoot: true}, nil)
	defer bad.Close()
	attr = &syscall.ProcAttr{Files: []uintptr{0, 1, 2}}
	if _, _, err := bad.Apply("/bin/true", []string{"true"}, attr, -1); err == nil || len(attr.Files) != 3 {
		t.Errorf("a refused plan: %v, files %v", err, attr.Files)
	}
}
