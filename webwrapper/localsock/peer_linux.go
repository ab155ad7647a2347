package localsock

import (
	"bytes"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ownPeer tells whether the client of c is the user's, in this desktop session: its user
// (SO_PEERCRED, taken when it connected) is this process's, and the session its
// environment names (/proc/<pid>/environ, by Session's rule) is this one, or none. A
// client without a desktop session (a service of the user's, a terminal without a
// display), or one that has already exited, counts as the user's: the socket's folder
// and mode keep every other user out, and the session check keeps another desktop's
// programs from driving this one's window.
func ownPeer(c net.Conn, session string) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil || int(cred.Uid) != os.Getuid() {
		return false
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(int(cred.Pid)) + "/environ")
	if err != nil {
		return true
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok {
			env[string(k)] = string(v)
		}
	}
	peer := sessionOf(func(k string) string { return env[k] })
	return peer == "" || peer == session
}
