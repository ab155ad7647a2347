package instance

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// Pipe names are machine-global, so the endpoint's name carries the user's SID and the
// session as well as the pid; the pipe's DACL admits the current user only.
func endpoint(_, _ string, pid int) (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("reading the current user: %w", err)
	}
	var session uint32
	_ = windows.ProcessIdToSessionId(uint32(pid), &session)
	return fmt.Sprintf(`\\.\pipe\webwrapper-instance.%s.%d.%d`, u.User.Sid.String(), session, pid), nil
}

// removeStale has nothing to do: a pipe goes with its process.
func removeStale(_, _ string) {}
