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
// descriptor that lets only the current user's logon session in: the original wrapper's
// pipe allowed everyone, which let any local user drive the wrapper of another, and a
// user's other session of a terminal server (another logon) would drive this one's
// window. A pipe goes with its
// process, so nothing stale is ever left; a name that is taken (another process listens
// on it, busy or not, or another user made it) is refused with ErrInUse. Windows would
// refuse to make the first instance of a taken name anyway; Wine does not, so the name is
// tried first.
func Listen(path string) (net.Listener, error) {
	if err := free(path); err != nil {
		return nil, err
	}
	logon, err := logonSID()
	if err != nil {
		return nil, err
	}
	ln, err := winio.ListenPipe(path, &winio.PipeConfig{SecurityDescriptor: sessionOnly(logon), InputBufferSize: 64 << 10, OutputBufferSize: 64 << 10})
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

// sessionOnly is the pipe's security descriptor: a protected DACL (D:P, no inherited
// entries) with one entry granting full access (A;;GA) to a logon SID, so that only the
// programs of that logon (one user in one session, elevated or not) may open it.
func sessionOnly(logon *windows.SID) string {
	return "D:P(A;;GA;;;" + logon.String() + ")"
}

// logonSID is the logon SID of this process's token (S-1-5-5-X-Y), which names its user's
// logon session: the group Windows marks SE_GROUP_LOGON_ID, the one the desktop's own
// security grants.
func logonSID() (*windows.SID, error) {
	groups, err := windows.GetCurrentProcessToken().GetTokenGroups()
	if err != nil {
		return nil, fmt.Errorf("reading the logon session: %v", err)
	}
	for _, g := range groups.AllGroups() {
		if g.Attributes&windows.SE_GROUP_LOGON_ID == windows.SE_GROUP_LOGON_ID {
			return g.Sid.Copy()
		}
	}
	return nil, errors.New("reading the logon session: the token has no logon SID")
}

// Dial connects to the named pipe at path.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, path)
}
