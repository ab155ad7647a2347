package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPortsDistinct: ports handed out one after the other, each closed again at once as a
// test's server setup does, are never the same, and each can be bound.
func TestPortsDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		port := For(t)
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("binding handed-out port %d: %v", port, err)
		}
		l.Close()
	}
}
