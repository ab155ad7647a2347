//go:build !windows

package localsock

import (
	"os"
	"strings"
)

// Session names the desktop session the wrapper runs in, in a form fit for a file name:
// one wrapper runs per user and session (docs/webwrapper.md, One instance). Outside Windows
// the session is the display the window goes to, $WAYLAND_DISPLAY, else $DISPLAY (its
// screen number left out: ":0.0" is ":0"), so that two desktops of one user (two X2Go or
// xrdp sessions, two Xvfb displays) each have their own wrapper; without a display, the
// login session ($XDG_SESSION_ID); "" when neither is known.
func Session() string { return sessionOf(os.Getenv) }

func sessionOf(getenv func(string) string) string {
	if v := strings.TrimSpace(getenv("WAYLAND_DISPLAY")); v != "" {
		return "wayland-" + fileSafe(v)
	}
	if v := strings.TrimSpace(getenv("DISPLAY")); v != "" {
		if i := strings.LastIndex(v, ":"); i >= 0 {
			if j := strings.Index(v[i:], "."); j >= 0 {
				v = v[:i+j] // the screen is part of the display
			}
		}
		return "x11-" + fileSafe(v)
	}
	if v := strings.TrimSpace(getenv("XDG_SESSION_ID")); v != "" {
		return "session-" + fileSafe(v)
	}
	return ""
}

// fileSafe keeps s usable in a file name: letters, digits, '.', '_' and '-' stay, every
// other character becomes '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}
