//go:build linux

// The messages between a server and its watchdog: one datagram each on a
// SOCK_SEQPACKET socketpair, a kind byte, fixed little-endian fields, and
// file descriptors as SCM_RIGHTS.

package proc

import (
	"encoding/binary"
	"errors"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codexec/codex/internal/fsat"
)

// Message kinds. Every message goes from the server to the watchdog but
// msgAck, the watchdog's answer to msgLet.
const (
	msgCgroup = 'C' // an owned cgroup directory: its locked handle (fd), the path and mirror paths
	msgChild  = 'T' // a process to kill by its tree (subreaper mode): its pidfd, and its terminal's master side
	msgForget = 'U' // forget the process of that pid
	msgHold   = 'H' // a held placeholder: token, identity, name; its parent's handle and its own (fds)
	msgLet    = 'L' // let go of the placeholder of that token; answered by msgAck
	msgAck    = 'A' // the watchdog closed its handles on that token's placeholder
)

// maxMessage bounds a message (a cgroup message carries two paths).
const maxMessage = 3 * unix.PathMax

// wireMsg is one decoded message.
type wireMsg struct {
	kind  byte
	token uint64 // msgHold, msgLet, msgAck; the pid for msgChild and msgForget
	id    fsat.ID
	text  []string // msgCgroup: dir, mirrors...; msgHold: the name
	fds   []int
}

// encode returns the bytes and the rights of m.
func (m wireMsg) encode() (b, oob []byte) {
	b = append(b, m.kind)
	b = binary.LittleEndian.AppendUint64(b, m.token)
	if m.kind == msgHold {
		b = binary.LittleEndian.AppendUint64(b, m.id.Dev)
		b = binary.LittleEndian.AppendUint64(b, m.id.Ino)
	}
	b = append(b, strings.Join(m.text, "\x00")...)
	if len(m.fds) > 0 {
		oob = unix.UnixRights(m.fds...)
	}
	return b, oob
}

var errBadMessage = errors.New("proc: malformed watchdog message")

// decodeMsg parses a message and the rights that came with it. The fds
// are returned even with an error, for the caller to close.
func decodeMsg(b, oob []byte) (wireMsg, error) {
	var m wireMsg
	if len(oob) > 0 {
		if scms, err := unix.ParseSocketControlMessage(oob); err == nil {
			for _, scm := range scms {
				if fds, err := unix.ParseUnixRights(&scm); err == nil {
					m.fds = append(m.fds, fds...)
				}
			}
		}
	}
	if len(b) < 9 {
		return m, errBadMessage
	}
	m.kind, m.token, b = b[0], binary.LittleEndian.Uint64(b[1:9]), b[9:]
	if m.kind == msgHold {
		if len(b) < 16 {
			return m, errBadMessage
		}
		m.id = fsat.ID{Dev: binary.LittleEndian.Uint64(b), Ino: binary.LittleEndian.Uint64(b[8:])}
		b = b[16:]
	}
	if len(b) > 0 {
		m.text = strings.Split(string(b), "\x00")
	}
	want := map[byte]int{msgCgroup: 1, msgChild: 1, msgHold: 2}[m.kind]
	if m.kind == msgChild && len(m.fds) == 2 {
		want = 2 // with the terminal's master side
	}
	if len(m.fds) != want || (m.kind == msgCgroup || m.kind == msgHold) && len(m.text) == 0 {
		return m, errBadMessage
	}
	return m, nil
}
