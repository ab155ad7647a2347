//go:build !windows

package localsock

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
)

func testPath(t *testing.T, name string) string {
	return filepath.Join(wintest.TempDir(t), name+".sock")
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

// The socket is of mode 0600 from the moment it is made, whatever the process's umask:
// no moment in which it is wider. bind alone, before Listen's own check of the mode.
func TestSocketBornPrivate(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	path := testPath(t, "born")
	ln, err := bind(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket made under the umask 0 has mode %v, %v; want 0600 at once", fi.Mode(), err)
	}
	// The process's umask is not touched: a file made now is as wide as asked.
	file := filepath.Join(filepath.Dir(path), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("a file made after bind has mode %v, %v; want 0644 (the process's umask 0 kept)", fi.Mode(), err)
	}
}

// A socket is made only in a folder of the user that nobody else may enter: not in one of
// mode 0755 or 0770, nor through a link.
func TestListenFolderChecked(t *testing.T) {
	for _, tt := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o700, true}, {0o755, false}, {0o770, false}, {0o701, false}} {
		dir := filepath.Join(wintest.TempDir(t), "run")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tt.mode); err != nil {
			t.Fatal(err)
		}
		ln, err := Listen(filepath.Join(dir, "s.sock"))
		if err == nil {
			ln.Close()
		}
		if (err == nil) != tt.ok {
			t.Errorf("Listen in a folder of mode %04o = %v, want allowed %v", tt.mode, err, tt.ok)
		}
	}
	link := filepath.Join(wintest.TempDir(t), "link")
	if err := os.Symlink(wintest.TempDir(t), link); err != nil {
		t.Fatal(err)
	}
	if ln, err := Listen(filepath.Join(link, "s.sock")); err == nil {
		ln.Close()
		t.Error("Listen through a link to a folder succeeded, want it refused")
	}
}
