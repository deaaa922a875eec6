//go:build linux

package sandbox

import (
	"encoding/json"
	"io"
	"reflect"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestNormalizeNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plan  Plan
		euid  int
		flags uintptr
	}{
		{"seccomp only", Plan{Seccomp: SeccompRestricted}, 1000, 0},
		{"seccomp only as root", Plan{Seccomp: SeccompRestricted}, 0, 0},
		{"mounts imply mnt", Plan{ReadOnlyRoot: true, NewPIDNS: true}, 0, unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC},
		{"pid implies mnt", Plan{NewPIDNS: true}, 0, unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC},
		{"deny paths imply mnt", Plan{DenyPaths: []string{"/x"}}, 0, unix.CLONE_NEWNS | unix.CLONE_NEWIPC},
		{"net", Plan{NewMountNS: true, NewPIDNS: true, NewNetNS: true}, 0, unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWIPC},
		{"non-root gets userns", Plan{NewMountNS: true, NewPIDNS: true}, 1000, unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWUSER | unix.CLONE_NEWIPC},
		{"root keeps requested userns", Plan{NewMountNS: true, NewUserNS: true}, 0, unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWIPC},
		{"net without mounts gets no ipc", Plan{NewNetNS: true}, 0, unix.CLONE_NEWNET},
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
