//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/fsat"
	"github.com/codexec/codex/sandbox"
)

// TestWatchdogWire: every message survives the trip through a SEQPACKET
// socketpair, its rights included; malformed ones are refused.
func TestWatchdogWire(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	one, two := int(r.Fd()), int(w.Fd())
	msgs := []wireMsg{
		{kind: msgCgroup, text: []string{"/sys/fs/cgroup/x/codex-exec-1", "/sys/fs/cgroup/pids/codex-exec-1"}, fds: []int{one}},
		{kind: msgChild, token: 42, fds: []int{one, two}},
		{kind: msgForget, token: 42},
		{kind: msgHold, token: 7, id: fsat.ID{Dev: 1, Ino: 2}, text: []string{".git"}, fds: []int{one, two}},
		{kind: msgLet, token: 7},
	}
	buf, oob := make([]byte, maxMessage), make([]byte, unix.CmsgSpace(4*4))
	for _, m := range msgs {
		b, rights := m.encode()
		if err := unix.Sendmsg(fds[0], b, rights, nil, 0); err != nil {
			t.Fatal(err)
		}
		n, oobn, _, _, err := unix.Recvmsg(fds[1], buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMsg(buf[:n], oob[:oobn])
		if err != nil {
			t.Fatalf("%c: %v", m.kind, err)
		}
		if len(got.fds) != len(m.fds) {
			t.Fatalf("%c: %d fds, want %d", m.kind, len(got.fds), len(m.fds))
		}
		closeFDs(got.fds)
		got.fds, m.fds = nil, nil
		if !reflect.DeepEqual(got, m) {
			t.Errorf("got %+v, want %+v", got, m)
		}
	}
	for _, bad := range []wireMsg{
		{kind: msgHold, token: 1, text: []string{".git"}, fds: []int{one}}, // one fd short
		{kind: msgCgroup, fds: []int{one}},                                 // no path
	} {
		b, rights := bad.encode()
		_ = unix.Sendmsg(fds[0], b, rights, nil, 0)
		n, oobn, _, _, _ := unix.Recvmsg(fds[1], buf, oob, unix.MSG_CMSG_CLOEXEC)
		m, err := decodeMsg(buf[:n], oob[:oobn])
		closeFDs(m.fds)
		if err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	if _, err := decodeMsg([]byte{msgLet}, nil); err == nil {
		t.Error("accepted a truncated message")
	}
}

// TestRecordsSweep: a record file nobody holds is replayed (placeholders
// let go are skipped), its placeholders removed, the file removed, and
// the sweep logged at info; a locked one is left alone.
func TestRecordsSweep(t *testing.T) {
	state, ws := t.TempDir(), t.TempDir()
	rec, err := createRecords(state)
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := fsat.Lstat(ws)
	for i, name := range []string{".git", ".codex", ".agents"} {
		if err := os.Mkdir(filepath.Join(ws, name), 0o555); err != nil {
			t.Fatal(err)
		}
		id, _ := fsat.Lstat(filepath.Join(ws, name))
		rec.add(uint64(i+1), ws, parent, name, id)
	}
	rec.remove(2) // .codex was let go: not the record's any more
	core, logs := observer.New(zap.InfoLevel)
	sweepRecords(state, zap.New(core), sandbox.RemoveRecordedPlaceholder)
	if logs.Len() != 0 {
		t.Fatalf("swept a record its server holds: %v", logs.All())
	}
	rec.f.Close() // the server and its watchdog are gone, the file stays
	sweepRecords(state, zap.New(core), sandbox.RemoveRecordedPlaceholder)
	for name, want := range map[string]bool{".git": false, ".codex": true, ".agents": false} {
		if _, err := os.Lstat(filepath.Join(ws, name)); (err == nil) != want {
			t.Errorf("%s present: %v, want %v", name, err == nil, want)
		}
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("record left: %v", ents)
	}
	all := logs.All()
	if len(all) != 1 || all[0].Message != "removed the placeholders of dead servers" || all[0].ContextMap()["removed"] != int64(2) {
		t.Fatalf("log: %+v", all)
	}
	if paths := all[0].ContextMap()["paths"]; !strings.Contains(strings.Join(toStrings(paths), " "), filepath.Join(ws, ".git")) {
		t.Errorf("the log does not name the removed placeholders: %v", paths)
	}
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, e := range l {
			s, _ := e.(string)
			out = append(out, s)
		}
	}
	if l, ok := v.([]string); ok {
		out = l
	}
	return out
}

// TestStateDirRefused: a state directory others may write, or a symlink,
// is refused.
func TestStateDirRefused(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	if fd, err := stateDir(open); err == nil {
		unix.Close(fd)
		t.Error("accepted a world-writable state directory")
	}
	link := filepath.Join(t.TempDir(), "link")
	_ = os.Symlink(t.TempDir(), link)
	if fd, err := stateDir(link); err == nil {
		unix.Close(fd)
		t.Error("accepted a symlink as state directory")
	}
}
