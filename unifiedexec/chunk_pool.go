package unifiedexec

import (
	"math/bits"
	"sync"
)

// The fast decoder (predecode) takes the memory of each output chunk from
// a pool, and a process whose output goes only to its Stdout and Stderr
// writers (which must not retain what they are given, as io.Writer says)
// gives it back once written, as does a process without any output
// consumer once the chunk is captured. A large output then cycles through
// a few warm buffers instead of a new one per notification, which the
// garbage collector frees and the kernel maps again: those page faults,
// the collections and the returns of memory to the kernel were a third of
// the client's CPU time at 500 MiB/s. A chunk that is not given back (a
// callback may keep it) is simply left to the garbage collector.

// Pooled chunk sizes: powers of two from minPooledChunk to maxPooledChunk
// (the server reads output 256 KiB at a time). Smaller chunks are cheap to
// allocate; larger ones are rare.
const (
	minPooledChunk = 64 << 10
	maxPooledChunk = 4 << 20
	chunkClasses   = 7 // log2(maxPooledChunk/minPooledChunk) + 1
)

var chunkPools [chunkClasses]sync.Pool // of *[]byte, by class

// chunkClass returns the class of the smallest pooled size holding n
// bytes, or -1 when n is not pooled.
func chunkClass(n int) int {
	if n < minPooledChunk/2 || n > maxPooledChunk {
		return -1
	}
	if n <= minPooledChunk {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(minPooledChunk-1))
}

// getChunk returns a slice of length n, from the pool when n is pooled.
func getChunk(n int) []byte {
	c := chunkClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	if p, ok := chunkPools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, minPooledChunk<<c)
}

// putChunk gives b back to the pool; b must no longer be used. A slice
// whose capacity is not a pooled size is left to the garbage collector.
func putChunk(b []byte) {
	c := chunkClass(cap(b))
	if c < 0 || cap(b) != minPooledChunk<<c {
		return
	}
	b = b[:0]
	chunkPools[c].Put(&b)
}
