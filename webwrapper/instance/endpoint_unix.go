//go:build !windows

package instance

import (
	"fmt"
	"os"
	"path/filepath"
)

// The endpoint is a Unix socket in the instance folder, which is the user's own (0700),
// so only the user reaches it.
func endpoint(dir string, pid int) (string, error) {
	return filepath.Join(dir, fmt.Sprintf("instance.%d.sock", pid)), nil
}

// removeStale removes the sockets of killed instances; only the lock holder calls it, so
// none of them is in use.
func removeStale(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, "instance.*.sock"))
	for _, p := range old {
		_ = os.Remove(p)
	}
}
