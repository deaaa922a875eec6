package proc

// byteRing stores the retained output of one process as a ring of bytes
// addressed by absolute offsets (the count of bytes ever appended), so that
// retention copies each chunk once into memory it reuses instead of keeping
// the read buffers alive. It starts empty and grows by doubling up to the
// retention cap (or to one chunk, if a single chunk is larger), so an idle
// process costs nothing. It is not safe for concurrent use; eventLog.mu
// guards it.
type byteRing struct {
	buf        []byte
	start, end uint64 // absolute offsets of the retained bytes [start, end)
}

// len returns the number of retained bytes.
func (r *byteRing) len() int { return int(r.end - r.start) }

// grow makes the ring hold at least need bytes, doubling its size but
// never beyond max(limit, need); the retained bytes keep their offsets.
func (r *byteRing) grow(need, limit int) {
	if need <= len(r.buf) {
		return
	}
	size := max(len(r.buf)*2, 4096)
	for size < need {
		size *= 2
	}
	size = min(size, max(limit, need))
	nb := make([]byte, size)
	r.copyOut(nb[:0], r.start, r.len(), func(dst []byte, off uint64, p []byte) {
		ringPut(nb, off, p)
	})
	r.buf = nb
}

// append copies p after the retained bytes; the caller has made room.
func (r *byteRing) append(p []byte) uint64 {
	off := r.end
	ringPut(r.buf, off, p)
	r.end += uint64(len(p))
	return off
}

// drop forgets the bytes before off.
func (r *byteRing) drop(off uint64) {
	if off > r.start {
		r.start = min(off, r.end)
	}
}

// read appends the n bytes at absolute offset off to dst.
func (r *byteRing) read(dst []byte, off uint64, n int) []byte {
	return r.copyOut(dst, off, n, nil)
}

// copyOut walks the n bytes at off in at most two pieces; with visit nil it
// appends them to dst and returns it.
func (r *byteRing) copyOut(dst []byte, off uint64, n int, visit func(dst []byte, off uint64, p []byte)) []byte {
	size := uint64(len(r.buf))
	for n > 0 {
		i := off % size
		m := min(uint64(n), size-i)
		p := r.buf[i : i+m]
		if visit != nil {
			visit(dst, off, p)
		} else {
			dst = append(dst, p...)
		}
		off += m
		n -= int(m)
	}
	return dst
}

// ringPut writes p into buf at absolute offset off, wrapping around.
func ringPut(buf []byte, off uint64, p []byte) {
	size := uint64(len(buf))
	for len(p) > 0 {
		i := off % size
		m := copy(buf[i:], p)
		p = p[m:]
		off += uint64(m)
	}
}
