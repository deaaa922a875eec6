package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestUpstreamsHeld: an upstream connection's local address is in
// Options.Upstreams before the proxy sends anything on it, so the listener
// it reaches sees its peer held there from the first byte, and leaves it
// once the tunnel is closed; the client's own connection is never held.
func TestUpstreamsHeld(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	pol, err := Compile(Settings{Domains: map[string]Action{"127.0.0.1": Allow}})
	if err != nil {
		t.Fatal(err)
	}
	var ups Upstreams
	p := New(Options{Policy: pol, Upstreams: &ups})
	defer p.Close()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.ServeHTTP(pl)

	held := make(chan string, 1)
	go func() {
		c, err := target.Accept()
		if err != nil {
			held <- err.Error()
			return
		}
		defer c.Close()
		// The first byte has come through the tunnel: the peer must be
		// held by now.
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil {
			held <- err.Error()
			return
		}
		held <- fmt.Sprint(ups.Holds(c.LocalAddr(), c.RemoteAddr()), " ", c.RemoteAddr())
		io.Copy(io.Discard, c)
	}()
	c, err := net.Dial("tcp", pl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\nx", target.Addr())
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("CONNECT: %q", line)
	}
	got := <-held
	if !strings.HasPrefix(got, "true ") {
		t.Errorf("the upstream's local address is not held while its first byte arrives: %s", got)
	}
	if ups.Holds(c.RemoteAddr(), c.LocalAddr()) {
		t.Errorf("the client's own connection %v is held", c.LocalAddr())
	}
	upstream, _ := strings.CutPrefix(got, "true ")
	addr, _ := net.ResolveTCPAddr("tcp", upstream)
	c.Close()
	for end := time.Now().Add(5 * time.Second); ups.Holds(target.Addr(), addr); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%v still held 5 s after the tunnel closed", addr)
		}
	}
}
