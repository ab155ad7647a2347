package localsock

import (
	"strconv"

	"golang.org/x/sys/windows"
)

// Session names the Windows session the wrapper runs in (its number: 1 for the first
// console or Remote Desktop session, and so on), in a form fit for a file name: one
// wrapper runs per user and session, as the original's did (docs/webwrapper.md, One
// instance), so that a user with two sessions of a terminal server has a wrapper in each.
func Session() string {
	var id uint32
	if err := windows.ProcessIdToSessionId(windows.GetCurrentProcessId(), &id); err != nil {
		return ""
	}
	return "session-" + strconv.FormatUint(uint64(id), 10)
}
