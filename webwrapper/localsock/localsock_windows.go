package localsock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"time"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// Listen makes the named pipe at path (\\.\pipe\<name>) in byte mode, with a security
// descriptor that lets only the current user in: the original wrapper's pipe allowed
// everyone, which let any local user drive the wrapper of another. A pipe goes with its
// process, so nothing stale is ever left; a name that is taken (another process listens
// on it, busy or not, or another user made it) is refused with ErrInUse. Windows would
// refuse to make the first instance of a taken name anyway; Wine does not, so the name is
// tried first.
func Listen(path string) (net.Listener, error) {
	if err := free(path); err != nil {
		return nil, err
	}
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("reading the current user: %v", err)
	}
	ln, err := winio.ListenPipe(path, &winio.PipeConfig{SecurityDescriptor: userOnly(user.User.Sid), InputBufferSize: 64 << 10, OutputBufferSize: 64 << 10})
	if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("%s: %w (%v)", path, ErrInUse, err)
	}
	return ln, err
}

// free tells whether no pipe of path exists: opening it finds none. A pipe that answers,
// is busy or may not be opened by this user is in use.
func free(path string) error {
	timeout := 200 * time.Millisecond
	c, err := winio.DialPipe(path, &timeout)
	switch {
	case err == nil:
		c.Close()
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return fmt.Errorf("%s: %w", path, ErrInUse)
}

// userOnly is the pipe's security descriptor: a protected DACL (D:P, no inherited entries)
// with one entry granting the user full access (A;;GA), so nobody else may open it.
func userOnly(sid *windows.SID) string {
	return "D:P(A;;GA;;;" + sid.String() + ")"
}

// Dial connects to the named pipe at path.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, path)
}
