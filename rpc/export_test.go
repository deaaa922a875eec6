package rpc

// JoinedWaiting is how many messages SendJoined groups hold that wait for
// the write token.
func JoinedWaiting(c *Conn) int {
	c.joined.mu.Lock()
	defer c.joined.mu.Unlock()
	n := 0
	for _, g := range c.joined.open {
		n += len(g.frames)
	}
	return n
}
