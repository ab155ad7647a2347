//go:build !windows

package pipe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/partnergate/partnergate/webwrapper/localsock"
)

// Path gives the socket of process pid: svcpipe.<pid> in $XDG_RUNTIME_DIR when that is a
// folder of the user that nobody else may enter (localsock.PrivateFolder: mode 0700, not a
// link), else in a per-user folder of mode 0700 under the temporary folder. A runtime
// folder that others may write to (a shared 1777 folder named by a careless session setup)
// would let them replace the socket, and read the requests of the user's programs; one
// they may enter would show them the wrapper's pipes.
func Path(pid int) (string, error) {
	name := "svcpipe." + strconv.Itoa(pid)
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" && filepath.IsAbs(dir) && localsock.PrivateFolder(dir) == nil {
		return filepath.Join(dir, name), nil
	}
	dir := filepath.Join(os.TempDir(), "svcpipe-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("making the pipe folder: %v", err)
	}
	// The folder may have been made by someone else first, to read our requests.
	if err := localsock.PrivateFolder(dir); err != nil {
		return "", fmt.Errorf("pipe folder: %v", err)
	}
	return filepath.Join(dir, name), nil
}
