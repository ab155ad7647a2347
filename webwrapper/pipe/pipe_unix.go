//go:build !windows

package pipe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Path gives the socket of process pid: svcpipe.<pid> in $XDG_RUNTIME_DIR when that is a
// folder of the user that nobody else may write to, else in a per-user folder of mode
// 0700 under the temporary folder. A runtime folder that others may write to (a shared
// 1777 folder named by a careless session setup) would let them replace the socket, and
// read the requests of the user's programs.
func Path(pid int) (string, error) {
	name := "svcpipe." + strconv.Itoa(pid)
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" && filepath.IsAbs(dir) && ownFolder(dir, 0o022) {
		return filepath.Join(dir, name), nil
	}
	dir := filepath.Join(os.TempDir(), "svcpipe-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("making the pipe folder: %v", err)
	}
	// The folder may have been made by someone else first, to read our requests.
	if !ownFolder(dir, 0o077) {
		return "", fmt.Errorf("pipe folder %s is not a folder of this user with mode 0700", dir)
	}
	return filepath.Join(dir, name), nil
}

// ownFolder tells whether dir is a folder (not a link to one) of the current user whose
// mode has none of the bits of forbidden.
func ownFolder(dir string, forbidden fs.FileMode) bool {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return fi.IsDir() && ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&forbidden == 0
}
