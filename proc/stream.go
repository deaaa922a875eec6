package proc

import (
	"os"
	"sync"
)

// outStream is one output stream of a process: the parent's read end and
// the lock that makes reading a chunk and handing it to the OutputFunc one
// step, so that the drain at exit (drainAtExit) can tell what was already
// delivered from what is still in the kernel.
type outStream struct {
	s Stream
	f *os.File // the read end; immutable

	// mu is held from a read that returned bytes (or EOF) until those bytes
	// were passed to the OutputFunc and it returned; a read that finds
	// nothing releases it before the reader parks. Never held while waiting
	// for an output credit.
	mu       sync.Mutex
	consumed int64 // guarded by mu: bytes read and delivered so far
	eof      bool  // guarded by mu: the reader saw EOF or a read error
}
