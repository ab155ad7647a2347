//go:build !windows

package instance

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// The endpoint is a Unix socket in the instance folder, which is the user's own (0700),
// so only the user reaches it.
func socketPath(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("instance.%d.sock", pid))
}

func listen(dir string, pid int) (net.Listener, error) {
	path := socketPath(dir, pid)
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ln, nil
}

func dial(ctx context.Context, dir string, pid int) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", socketPath(dir, pid))
}

// removeStale removes the sockets of killed instances; only the lock holder calls it, so
// none of them is in use.
func removeStale(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, "instance.*.sock"))
	for _, p := range old {
		_ = os.Remove(p)
	}
}
