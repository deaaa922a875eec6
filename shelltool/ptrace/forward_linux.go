//go:build linux && (amd64 || arm64)

package ptrace

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/shelltool/escalate"
)

// forwardPeriod is how often a stopped tracee whose program is escalated
// is checked for a pending signal to forward.
const forwardPeriod = 20 * time.Millisecond

// forwarded are the signals that, pending on a tracee while its program
// runs escalated, are sent to that program's process group: what the
// call's processes send each other to stop a command (timeout, a shell's
// kill, a terminal's hang-up).
var forwarded = []unix.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGTERM}

// forwardSignals runs until ctx ends: every signal of forwarded that
// becomes pending on tid (which stays stopped) is sent, once, to the
// process group of the escalated program of req, found among this
// process's children by its argv and its descriptors 0-2 (those of
// stdio).
func forwardSignals(ctx context.Context, tid int, req escalate.Request, stdio []*os.File) {
	tick := time.NewTicker(forwardPeriod)
	defer tick.Stop()
	sent := map[unix.Signal]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, sig := range pendingOf(tid) {
			if sent[sig] {
				continue
			}
			if pgid := findEscalated(req, stdio); pgid > 0 {
				_ = unix.Kill(-pgid, sig)
				sent[sig] = true
			}
		}
	}
}

// pendingOf returns the signals of forwarded pending on tid, for the
// thread or its whole process.
func pendingOf(tid int) []unix.Signal {
	var mask uint64
	for _, f := range []string{"SigPnd", "ShdPnd"} {
		if v, err := statusHex(tid, f); err == nil {
			mask |= v
		}
	}
	var out []unix.Signal
	for _, s := range forwarded {
		if mask&(1<<(uint(s)-1)) != 0 {
			out = append(out, s)
		}
	}
	return out
}

// statusHex reads a hexadecimal field of /proc/TID/status.
func statusHex(tid int, name string) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, os.ErrNotExist
}

// findEscalated returns the pid (its process group id) of this process's
// child that leads its own group and runs req (runsRequest) on the
// files of stdio as its descriptors 0-2; 0 when there is none.
func findEscalated(req escalate.Request, stdio []*os.File) int {
	want := make([]fileID, len(stdio))
	for i, f := range stdio {
		if f == nil {
			continue
		}
		rc, err := f.SyscallConn()
		if err != nil {
			continue
		}
		// Control, not Fd: Fd would make the shared file blocking.
		_ = rc.Control(func(fd uintptr) {
			var st unix.Stat_t
			if unix.Fstat(int(fd), &st) == nil {
				want[i] = fileID{dev: st.Dev, ino: st.Ino}
			}
		})
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		data, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		for _, c := range strings.Fields(string(data)) {
			pid, _ := strconv.Atoi(c)
			if pgid, err := unix.Getpgid(pid); err != nil || pgid != pid {
				continue
			}
			argv, err := readNulList("/proc/" + c + "/cmdline")
			if err != nil || !runsRequest(argv, req) {
				continue
			}
			if sameFDs(c, want) {
				return pid
			}
		}
	}
	return 0
}

// runsRequest reports whether a process with argv runs req: req.Argv
// itself, or, for a script, its interpreter with the script (req.File,
// or the descriptor the Escalator runs it from) and the arguments after
// argv[0].
func runsRequest(argv []string, req escalate.Request) bool {
	if slices.Equal(argv, req.Argv) {
		return true
	}
	rest := req.Argv
	if len(rest) > 0 {
		rest = rest[1:]
	}
	n := len(argv) - len(rest) - 1
	return n >= 1 && (argv[n] == req.File || argv[n] == escalate.ScriptPath) && slices.Equal(argv[n+1:], rest)
}

// sameFDs reports whether process pid's descriptors 0.. are the files
// want (zero entries are not compared).
func sameFDs(pid string, want []fileID) bool {
	for i, w := range want {
		if w == (fileID{}) {
			continue
		}
		id, err := statID("/proc/" + pid + "/fd/" + strconv.Itoa(i))
		if err != nil || id != w {
			return false
		}
	}
	return true
}
