//go:build linux

package sandbox

import (
	"os"
	"syscall"
	"testing"
)

func TestUnifiedCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
		ok               bool
	}{
		{"v2 only", "0::/user.slice/s.scope\n", "/user.slice/s.scope", true},
		{"hybrid", "9:name=systemd:/\n4:memory:/x\n0::/a\n", "/a", true},
		{"v1 only", "4:memory:/x\n1:cpu:/\n", "", false},
		{"deleted", "0::/gone (deleted)\n", "", false},
	} {
		got, err := unifiedCgroup(tc.data)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%s: %q, %v; want %q, ok %v", tc.name, got, err, tc.want, tc.ok)
		}
	}
}

// TestCommandCgroup makes the cgroup, checks Apply, and checks that Remove
// deletes it. It skips where this process cannot make a cgroup v2 child.
func TestCommandCgroup(t *testing.T) {
	cg, err := NewCommandCgroup()
	if err != nil {
		t.Skipf("no cgroup v2 child with the unix send filter here: %v", err)
	}
	if st, err := os.Stat(cg.dir); err != nil || !st.IsDir() {
		t.Fatalf("cgroup dir %s: %v", cg.dir, err)
	}
	var sys syscall.SysProcAttr
	cg.Apply(&sys)
	if !sys.UseCgroupFD || sys.CgroupFD != cg.fd {
		t.Errorf("Apply: UseCgroupFD %v CgroupFD %d, want fd %d", sys.UseCgroupFD, sys.CgroupFD, cg.fd)
	}
	cg.Remove()
	if _, err := os.Stat(cg.dir); !os.IsNotExist(err) {
		t.Errorf("after Remove: %v", err)
	}
}
