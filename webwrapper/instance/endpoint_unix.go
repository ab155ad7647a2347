//go:build !windows

package instance

import (
	"fmt"
	"os"
	"path/filepath"
)

// The endpoint is a Unix socket in the instance folder, which is the user's own (0700),
// so only the user reaches it; its name carries the session's base name and the pid.
func endpoint(dir, base string, pid int) (string, error) {
	return filepath.Join(dir, fmt.Sprintf("%s.%d.sock", base, pid)), nil
}

// removeStale removes the sockets of the session's killed instances; only the session's
// lock holder calls it, so none of them is in use. Other sessions' sockets are theirs.
func removeStale(dir, base string) {
	old, _ := filepath.Glob(filepath.Join(dir, base+".[0-9]*.sock"))
	for _, p := range old {
		_ = os.Remove(p)
	}
}
