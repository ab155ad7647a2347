// Package freeport hands tests TCP ports on 127.0.0.1 for the servers they start. A port
// comes from the kernel (a bind to port 0) and was free a moment ago; the kernel may give
// a port just closed to the next bind, so two servers that a test sets up one after the
// other could get the same one. No port is handed out twice in one process.
package freeport

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
)

// handed holds the ports handed out so far.
var handed sync.Map

// Port returns a port on 127.0.0.1 that was free a moment ago and that no earlier call
// returned.
func Port() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, taken := handed.LoadOrStore(port, true); !taken {
			return port, nil
		}
	}
	return 0, errors.New("finding a free port: the kernel offered 100 ports handed out before")
}

// For is Port for a test, which it fails when there is none.
func For(t testing.TB) int {
	t.Helper()
	port, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
