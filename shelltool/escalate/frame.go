package escalate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// Limits of the escalate socket protocol (docs/shell-tool.md §6.1).
const (
	// MaxFDs is the largest number of descriptors one message may carry.
	MaxFDs = 16
	// MaxDatagram is the largest datagram payload, in bytes.
	MaxDatagram = 8192
	// MaxFrame is the largest stream frame payload we send or accept, in
	// bytes. The wire allows any u32; a request carries at most one
	// exec's argv and environment, which the kernel bounds far below
	// this, so a larger length is refused rather than allocated.
	MaxFrame = 64 << 20
)

// ErrInvalidInput is matched (errors.Is) by the errors of a message that
// breaks the protocol's limits: ErrTooManyFDs and ErrMessageTooLarge.
var ErrInvalidInput = errors.New("invalid input")

// invalidInput is an error text that is also ErrInvalidInput.
type invalidInput string

func (e invalidInput) Error() string        { return string(e) }
func (e invalidInput) Is(target error) bool { return target == ErrInvalidInput }

var (
	// ErrTooManyFDs: a message with more than MaxFDs descriptors, sent
	// or received (the received ones are closed).
	ErrTooManyFDs error = invalidInput("too many fds")
	// ErrMessageTooLarge: a frame longer than MaxFrame or a datagram
	// longer than MaxDatagram.
	ErrMessageTooLarge error = invalidInput("message too large")
)

// Errors for a peer that closed the socket in the middle of a frame; both
// match io.ErrUnexpectedEOF. A close before the first header byte is one
// too: on this protocol a frame is always expected when we read.
var (
	errEOFHeader  = fmt.Errorf("socket closed while receiving frame header: %w", io.ErrUnexpectedEOF)
	errEOFPayload = fmt.Errorf("socket closed while receiving frame payload: %w", io.ErrUnexpectedEOF)
)

// msgConn is one end of a Unix socket that carries descriptors. Both
// methods retry EINTR and wait while the socket is not ready; recvmsg
// receives descriptors close-on-exec. A zero-length stream read means EOF.
type msgConn interface {
	sendmsg(p, oob []byte) (int, error)
	recvmsg(p, oob []byte) (n, oobn, flags int, err error)
}

// rightsSpace is the control buffer size for MaxFDs descriptors: one
// more does not fit and comes back as MSG_CTRUNC.
var rightsSpace = unix.CmsgSpace(MaxFDs * 4)

// writeFrame sends payload as one stream frame (u32-LE length, then the
// bytes), with fds attached to its first sendmsg. The caller keeps fds.
func writeFrame(c msgConn, payload []byte, fds []int) error {
	if len(fds) > MaxFDs {
		return ErrTooManyFDs
	}
	if len(payload) > MaxFrame {
		return ErrMessageTooLarge
	}
	buf := make([]byte, 4+len(payload))
	binary.LittleEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for len(buf) > 0 {
		n, err := c.sendmsg(buf, oob)
		if err != nil {
			return fmt.Errorf("sending frame: %w", err)
		}
		buf, oob = buf[n:], nil
	}
	return nil
}

// readFrame receives one stream frame and the descriptors sent with it,
// which come with the first recvmsg of the header. On error every
// descriptor received is closed. Descriptors arriving later in the frame
// are not asked for, so the kernel discards them.
func readFrame(c msgConn) (payload []byte, fds []int, err error) {
	var hdr [4]byte
	oob := make([]byte, rightsSpace)
	n, oobn, flags, err := c.recvmsg(hdr[:], oob)
	if err != nil {
		return nil, nil, fmt.Errorf("receiving frame header: %w", err)
	}
	fds, err = parseRights(oob[:oobn], flags)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			closeFDs(fds)
			fds = nil
		}
	}()
	if n == 0 {
		return nil, fds, errEOFHeader
	}
	if err := readFull(c, hdr[n:], errEOFHeader); err != nil {
		return nil, fds, err
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size > MaxFrame {
		return nil, fds, ErrMessageTooLarge
	}
	payload = make([]byte, size)
	if err := readFull(c, payload, errEOFPayload); err != nil {
		return nil, fds, err
	}
	return payload, fds, nil
}

// readFull fills p from c; a zero-length read is eof.
func readFull(c msgConn, p []byte, eof error) error {
	for len(p) > 0 {
		n, _, _, err := c.recvmsg(p, nil)
		if err != nil {
			return fmt.Errorf("receiving frame: %w", err)
		}
		if n == 0 {
			return eof
		}
		p = p[n:]
	}
	return nil
}

// sendDatagram sends data as one datagram with fds attached.
func sendDatagram(c msgConn, data []byte, fds []int) error {
	if len(fds) > MaxFDs {
		return ErrTooManyFDs
	}
	if len(data) > MaxDatagram {
		return ErrMessageTooLarge
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, err := c.sendmsg(data, oob); err != nil {
		return fmt.Errorf("sending datagram: %w", err)
	}
	return nil
}

// recvDatagram receives one datagram and its descriptors. A datagram
// longer than MaxDatagram is ErrMessageTooLarge; on any error the
// descriptors received are closed.
func recvDatagram(c msgConn) (data []byte, fds []int, err error) {
	buf := make([]byte, MaxDatagram)
	oob := make([]byte, rightsSpace)
	n, oobn, flags, err := c.recvmsg(buf, oob)
	if err != nil {
		return nil, nil, fmt.Errorf("receiving datagram: %w", err)
	}
	if fds, err = parseRights(oob[:oobn], flags); err != nil {
		return nil, nil, err
	}
	if flags&unix.MSG_TRUNC != 0 {
		closeFDs(fds)
		return nil, nil, ErrMessageTooLarge
	}
	return buf[:n], fds, nil
}

// parseRights returns the descriptors of the SCM_RIGHTS messages in oob.
// A truncated control buffer means more than MaxFDs were sent: what did
// arrive is closed and the error is ErrTooManyFDs.
func parseRights(oob []byte, flags int) ([]int, error) {
	var fds []int
	if len(oob) > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob)
		if err != nil {
			return nil, fmt.Errorf("parsing control message: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
				continue
			}
			got, err := unix.ParseUnixRights(&m)
			if err != nil {
				closeFDs(fds)
				return nil, fmt.Errorf("parsing control message: %w", err)
			}
			fds = append(fds, got...)
		}
	}
	if flags&unix.MSG_CTRUNC != 0 || len(fds) > MaxFDs {
		closeFDs(fds)
		return nil, ErrTooManyFDs
	}
	return fds, nil
}

// closeFDs closes raw descriptors, ignoring errors.
func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
