// Package localsock is the desktop wrapper's owner-only local endpoint, which the pipe
// protocol (svcpipe.<pid>) and the one-instance hand-over both listen on: a Unix socket
// of mode 0600 elsewhere, a named pipe whose security descriptor admits the current user
// alone on Windows. The names are the callers'; the folder a socket lives in must be the
// user's own (mode 0700), so that nobody else can replace the socket before it is made
// owner-only.
package localsock

import "errors"

// ErrInUse is returned by Listen when another process answers on the path.
var ErrInUse = errors.New("in use")
