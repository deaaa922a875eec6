package cli

import (
	"errors"
	"testing"
)

func TestParseMemory(t *testing.T) {
	total := func() (int64, error) { return 8 << 30, nil }
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0", 0, false}, {"1048576", 1 << 20, false}, {"512M", 512 << 20, false}, {"2g", 2 << 30, false},
		{"64k", 64 << 10, false}, {"50%", 4 << 30, false}, {"0%", 0, false},
		{"-1", 0, true}, {"12x", 0, true}, {"101%", 0, true}, {"", 0, true}, {"9999999999G", 0, true},
	} {
		got, err := parseMemory(tc.in, total)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseMemory(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
	if _, err := parseMemory("10%", func() (int64, error) { return 0, errors.New("no sysinfo") }); err == nil {
		t.Error("a percentage without physical memory: no error")
	}
}
