package pipe

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// Path gives the named pipe of process pid. Pipe names are machine-wide; the process id
// keeps the sessions of a terminal server apart.
func Path(pid int) (string, error) {
	return `\\.\pipe\svcpipe.` + strconv.Itoa(pid), nil
}

// listen makes the named pipe in byte mode, as the original's, with a security descriptor
// that lets only the current user in: the original allowed everyone, which let any local
// user drive the wrapper of another.
func listen(path string) (net.Listener, error) {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("reading the current user: %v", err)
	}
	ln, err := winio.ListenPipe(path, &winio.PipeConfig{SecurityDescriptor: userOnly(user.User.Sid), InputBufferSize: 64 << 10, OutputBufferSize: 64 << 10})
	if err != nil {
		return nil, fmt.Errorf("opening the pipe: %v", err)
	}
	return ln, nil
}

// userOnly is the pipe's security descriptor: a protected DACL (D:P, no inherited entries)
// with one entry granting the user full access (A;;GA), so nobody else may open it.
func userOnly(sid *windows.SID) string {
	return "D:P(A;;GA;;;" + sid.String() + ")"
}

func dial(ctx context.Context, path string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, path)
}
