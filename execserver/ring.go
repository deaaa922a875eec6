package execserver

import "sort"

// Block sizes of a byteRing: the first block of a process is small, later
// ones double up to ringMaxBlock.
const (
	ringMinBlock = 4 << 10
	ringMaxBlock = 64 << 10
)

// byteRing stores the retained output of one process, addressed by
// absolute offsets (the count of bytes ever appended), so that retention
// copies each chunk once into memory it reuses instead of keeping the read
// buffers alive. The bytes live in a queue of blocks: appending fills the
// last block and adds a new one when it is full, dropping frees whole head
// blocks, and the freed full-size blocks are reused by the append that
// follows the eviction (one is kept beyond it). So
// retention never copies or reallocates what it holds, a stream in steady
// state allocates nothing, and a ring holds at most its retained bytes plus
// about three blocks; an idle process costs nothing and a short output one
// small block. It is not safe for concurrent use; eventLog.mu guards it.
type byteRing struct {
	blocks     []ringBlock // oldest first; only the last one has room
	start, end uint64      // absolute offsets of the retained bytes [start, end)
	spare      [][]byte    // freed ringMaxBlock blocks for the next append
}

// ringBlock holds the bytes at absolute offsets [off, off+len(buf)).
type ringBlock struct {
	off uint64
	buf []byte // cap is the block size
}

// len returns the number of retained bytes.
func (r *byteRing) len() int { return int(r.end - r.start) }

// append copies p after the retained bytes and returns the offset of its
// first byte.
func (r *byteRing) append(p []byte) uint64 {
	off := r.end
	for len(p) > 0 {
		if n := len(r.blocks); n == 0 || len(r.blocks[n-1].buf) == cap(r.blocks[n-1].buf) {
			r.blocks = append(r.blocks, ringBlock{off: r.end, buf: r.newBlock()})
		}
		last := &r.blocks[len(r.blocks)-1]
		m := min(len(p), cap(last.buf)-len(last.buf))
		last.buf = append(last.buf, p[:m]...)
		p = p[m:]
		r.end += uint64(m)
	}
	return off
}

// newBlock returns an empty block, twice the size of the last one (the
// retained bytes, for the first) within [ringMinBlock, ringMaxBlock].
func (r *byteRing) newBlock() []byte {
	size := ringMinBlock
	if n := len(r.blocks); n > 0 {
		size = 2 * cap(r.blocks[n-1].buf)
	}
	size = min(size, ringMaxBlock)
	if n := len(r.spare); n > 0 && size == ringMaxBlock {
		b := r.spare[n-1]
		r.spare[n-1] = nil
		r.spare = r.spare[:n-1]
		return b
	}
	return make([]byte, 0, size)
}

// drop forgets the bytes before off and frees the blocks that held only
// those.
func (r *byteRing) drop(off uint64) {
	if off <= r.start {
		return
	}
	r.start = min(off, r.end)
	i := 0
	for i < len(r.blocks)-1 && r.blocks[i].off+uint64(len(r.blocks[i].buf)) <= r.start {
		if b := r.blocks[i].buf; cap(b) == ringMaxBlock {
			r.spare = append(r.spare, b[:0])
		}
		r.blocks[i] = ringBlock{}
		i++
	}
	if i > 0 {
		n := copy(r.blocks, r.blocks[i:])
		clear(r.blocks[n:])
		r.blocks = r.blocks[:n]
	}
}

// trimSpare keeps at most one freed block. eventLog calls it after each
// append, which reuses the blocks the eviction just before it freed.
func (r *byteRing) trimSpare() {
	if len(r.spare) > 1 {
		clear(r.spare[1:])
		r.spare = r.spare[:1]
	}
}

// read appends the n bytes at absolute offset off, which must be retained,
// to dst.
func (r *byteRing) read(dst []byte, off uint64, n int) []byte {
	i := sort.Search(len(r.blocks), func(i int) bool {
		return r.blocks[i].off+uint64(len(r.blocks[i].buf)) > off
	})
	for ; n > 0 && i < len(r.blocks); i++ {
		b := r.blocks[i]
		p := b.buf[off-b.off:]
		m := min(n, len(p))
		dst = append(dst, p[:m]...)
		off += uint64(m)
		n -= m
	}
	return dst
}
