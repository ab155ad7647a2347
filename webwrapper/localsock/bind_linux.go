package localsock

import (
	"fmt"
	"net"
	"runtime"

	"golang.org/x/sys/unix"
)

// bind makes the socket under the umask 0177 of a thread of its own: once the thread no
// longer shares the process's file system attributes (unshare CLONE_FS), its umask is its
// own, so no other file the wrapper makes meanwhile is touched. The thread stays locked,
// so that it ends with its goroutine instead of running others with that umask.
func bind(path string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			done <- result{err: fmt.Errorf("setting the socket's umask: %v", err)}
			return
		}
		unix.Umask(0o777 &^ socketMode)
		ln, err := net.Listen("unix", path)
		done <- result{ln, err}
	}()
	r := <-done
	return r.ln, r.err
}
