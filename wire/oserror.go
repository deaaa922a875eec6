package wire

import (
	"errors"

	"github.com/codexec/codex/rpc"
	"strconv"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// OSErrorMessage formats an errno the way the reference words OS errors on
// the wire: the C library text with a capital first letter and the number,
// e.g. "No such file or directory (os error 2)".
func OSErrorMessage(errno syscall.Errno) string {
	s := errno.Error()
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:] + " (os error " + strconv.Itoa(int(errno)) + ")"
}

// OSError returns the wire error for an OS-level failure: code with the
// reference's text when err wraps an errno, and err's own text otherwise.
func OSError(code int, err error) *rpc.Error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &rpc.Error{Code: code, Message: OSErrorMessage(errno)}
	}
	return &rpc.Error{Code: code, Message: err.Error()}
}
