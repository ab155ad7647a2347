package instance

import (
	"context"
	"fmt"
	"net"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// Pipe names are machine-global, so the name carries the user's SID and the session as
// well as the pid; the pipe's DACL admits the current user only.
func pipeName(sid string, pid int) string {
	var session uint32
	_ = windows.ProcessIdToSessionId(uint32(pid), &session)
	return fmt.Sprintf(`\\.\pipe\webwrapper-instance.%s.%d.%d`, sid, session, pid)
}

func userSID() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("reading the current user: %w", err)
	}
	return u.User.Sid.String(), nil
}

func listen(_ string, pid int) (net.Listener, error) {
	sid, err := userSID()
	if err != nil {
		return nil, err
	}
	return winio.ListenPipe(pipeName(sid, pid), &winio.PipeConfig{
		SecurityDescriptor: "D:P(A;;GA;;;" + sid + ")",
	})
}

func dial(ctx context.Context, _ string, pid int) (net.Conn, error) {
	sid, err := userSID()
	if err != nil {
		return nil, err
	}
	return winio.DialPipeContext(ctx, pipeName(sid, pid))
}

// removeStale has nothing to do: a pipe goes with its process.
func removeStale(string) {}
