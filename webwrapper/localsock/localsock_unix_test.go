//go:build !windows

package localsock

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

func testPath(t *testing.T, name string) string {
	return filepath.Join(t.TempDir(), name+".sock")
}

func primeTestPipe(string) {}

// The socket is the user's alone (0600), and goes when the listener closes.
func TestSocketMode(t *testing.T) {
	path := testPath(t, "mode")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v; want a socket of mode 0600", fi.Mode(), err)
	}
	ln.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket after Close: %v, want it removed", err)
	}
}

// A socket nobody answers on, as a killed process leaves it, is replaced; a file that is
// not a socket is not removed.
func TestStaleSocket(t *testing.T) {
	path := testPath(t, "stale")
	old, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	old.Close()
	ln, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket = %v", err)
	}
	ln.Close()

	file := testPath(t, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ln, err := Listen(file); err == nil {
		ln.Close()
		t.Fatalf("Listen over a plain file succeeded")
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Fatalf("plain file after Listen = %q, %v; want it kept", b, err)
	}
}
