//go:build !windows && !linux

package localsock

import (
	"net"
	"sync"
	"syscall"
)

var umaskMu sync.Mutex

// bind makes the socket under the umask 0177. Outside Linux a thread has no umask of its
// own, so the process's is set for the moment of the bind: a file the wrapper makes in that
// moment is narrower than asked, never wider.
func bind(path string) (net.Listener, error) {
	umaskMu.Lock()
	defer umaskMu.Unlock()
	old := syscall.Umask(0o777 &^ socketMode)
	defer syscall.Umask(old)
	return net.Listen("unix", path)
}
