//go:build linux

package sandbox

import (
	"errors"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// TestLandlockAccessFor is the best-effort downgrade table over fake ABI
// levels (docs/sandbox.md §4.5).
func TestLandlockAccessFor(t *testing.T) {
	for _, tc := range []struct {
		abi                             int
		refer, truncate, ioctl, unavail bool
	}{
		{abi: -1, unavail: true},
		{abi: 0, unavail: true},
		{abi: 1},
		{abi: 2, refer: true},
		{abi: 3, refer: true, truncate: true},
		{abi: 4, refer: true, truncate: true},
		{abi: 5, refer: true, truncate: true, ioctl: true},
		{abi: 7, refer: true, truncate: true, ioctl: true},
		{abi: 11, refer: true, truncate: true, ioctl: true},
	} {
		acc, err := landlockAccessFor(tc.abi)
		if tc.unavail {
			if !errors.Is(err, errLandlockUnavailable) {
				t.Errorf("ABI %d: err %v, want unavailable", tc.abi, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ABI %d: %v", tc.abi, err)
		}
		for _, set := range []uint64{uint64(acc.ReadDir), uint64(acc.WriteDir), uint64(acc.WriteFile)} {
			if set&^uint64(acc.Handled) != 0 {
				t.Errorf("ABI %d: rule rights %#x exceed handled %#x", tc.abi, set, acc.Handled)
			}
		}
		has := func(set, bit uint64) bool { return set&bit != 0 }
		if got := has(uint64(acc.WriteDir), ll.AccessFSRefer); got != tc.refer {
			t.Errorf("ABI %d: refer %v, want %v", tc.abi, got, tc.refer)
		}
		if got := has(uint64(acc.WriteDir), ll.AccessFSTruncate); got != tc.truncate {
			t.Errorf("ABI %d: truncate %v, want %v", tc.abi, got, tc.truncate)
		}
		if got := has(uint64(acc.WriteFile), ll.AccessFSIoctlDev); got != tc.ioctl {
			t.Errorf("ABI %d: ioctl_dev %v, want %v", tc.abi, got, tc.ioctl)
		}
		if has(uint64(acc.Handled), ll.AccessFSResolveUnix) {
			t.Errorf("ABI %d: resolve_unix is handled", tc.abi)
		}
		if has(uint64(acc.ReadDir), ll.AccessFSWriteFile) || !has(uint64(acc.ReadDir), ll.AccessFSExecute) {
			t.Errorf("ABI %d: read rule %#x", tc.abi, acc.ReadDir)
		}
	}
}
