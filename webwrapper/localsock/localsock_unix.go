//go:build !windows

package localsock

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
)

// Listen makes the socket at path with mode 0600. A socket left there by a crashed
// process (whose id may have been reused) is removed when nothing answers on it; one that
// answers is refused with ErrInUse, so that a second listener never steals a live one's
// name. Closing the listener removes the socket.
func Listen(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrInUse)
		}
		os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// The folder is the user's alone, so the moment before chmod exposes nothing.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Dial connects to the socket at path.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}
