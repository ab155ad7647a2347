//go:build !windows

package signon

import (
	"errors"
	"strings"
)

// protection names how this system keeps a device sign-on's secret at rest.
const protection = "file"

// seal keeps secret as it is: outside Windows the protection is the file's, signon.json of
// mode 0600 in the user's own config folder (0700), which no other user of the computer
// can read (docs/webwrapper.md, Single sign-on). A desktop's secret service (the Secret
// Service API over DBus) would keep it from no program of the same user either, and is
// missing where the wrapper also runs (a bare X server, a terminal server's session).
func seal(secret string) (string, error) {
	if secret == "" {
		return "", errors.New("sealing the device sign-on: no secret")
	}
	return protection + ":" + secret, nil
}

// unseal opens what seal made.
func unseal(sealed string) (string, error) {
	s, ok := strings.CutPrefix(sealed, protection+":")
	if !ok || s == "" {
		return "", errors.New("opening the device sign-on: not kept by this system")
	}
	return s, nil
}
