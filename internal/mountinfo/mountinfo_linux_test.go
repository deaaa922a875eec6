//go:build linux

package mountinfo

import "testing"

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/sys/fs/cgroup`:     "/sys/fs/cgroup",
		`/mnt/a\040b`:        "/mnt/a b",
		`/mnt/tab\011x\134y`: "/mnt/tab\tx\\y",
		`/mnt/short\04`:      `/mnt/short\04`,
		`/mnt/not\999octal`:  `/mnt/not\999octal`,
		`\040`:               " ",
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCgroupMountPoints(t *testing.T) {
	points, err := CgroupMountPoints()
	if err != nil {
		t.Fatal(err)
	}
	mnt, err := Cgroup2Mount()
	if err == ErrNoCgroup2 {
		t.Skip("no cgroup v2 here")
	}
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range points {
		found = found || p == mnt
	}
	if !found {
		t.Errorf("the cgroup2 mount %s is not among %v", mnt, points)
	}
}
