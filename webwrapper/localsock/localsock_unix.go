//go:build !windows

package localsock

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// socketMode is the socket's mode: the user's alone.
const socketMode = 0o600

// Listen makes the socket at path, of mode 0600 from the moment it exists: it is bound
// under a umask that leaves nobody else any access, never made wider and narrowed after.
// Its folder must be PrivateFolder. A socket left there by a crashed process (whose id may
// have been reused) is removed when nothing answers on it; one that answers is refused
// with ErrInUse, so that a second listener never steals a live one's name. Closing the
// listener removes the socket. A client of another user, or (on Linux) of another desktop
// session of the user (Session), is hung up on as it connects.
func Listen(path string) (net.Listener, error) {
	if err := PrivateFolder(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrInUse)
		}
		os.Remove(path)
	}
	ln, err := bind(path)
	if err != nil {
		return nil, err
	}
	// Fail closed should a system make it otherwise.
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != socketMode {
		ln.Close()
		return nil, fmt.Errorf("%s: the socket is not of mode 0600", path)
	}
	return ownerListener{Listener: ln, session: Session()}, nil
}

// ownerListener accepts the clients of the user in this desktop session only (ownPeer).
type ownerListener struct {
	net.Listener
	session string
}

func (l ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ownPeer(c, l.session) {
			return c, nil
		}
		c.Close()
	}
}

// PrivateFolder checks that dir is a folder (not a link to one) of the current user that
// nobody else may enter, read or write (mode 0700 or narrower). In another's folder, or
// one others may write to, a socket could be replaced, or its requests read, by someone
// else.
func PrivateFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking the socket folder: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("socket folder %s is not a folder", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("socket folder %s is not this user's", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("socket folder %s has mode %04o, want 0700", dir, fi.Mode().Perm())
	}
	return nil
}

// Dial connects to the socket at path.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}
