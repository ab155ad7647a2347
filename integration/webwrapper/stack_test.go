// Package webwrapper runs the real desktop wrapper (cmd/webwrapper, built with -race) in
// Debian's chromium on a private Xvfb display with openbox as the window manager, against
// the real app service behind the real gateway, and drives it as a desktop program does:
// command-line arguments, input.xml and the pipe. Every step is judged by what the page
// shows, read through the DevTools port that Debug=True opens (127.0.0.1:9223), and saved as
// a screenshot under integration/artifacts/webwrapper/.
//
// The port is fixed, so the tests run one after another (no t.Parallel), and no other
// wrapper with Debug may run on the machine meanwhile.
package webwrapper

import (
	"os"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/harness/appstack"
)

const (
	issuer   = "https://partner.example"
	audience = "partnergate-demo"
	password = "ww-coach-password-2026"
)

// TestMain builds the programs. The test process itself calls the wrappers' pipes, as a
// program outside any desktop session: the wrapper refuses a client of another session
// (another display), which the machine's own DISPLAY would make it.
func TestMain(m *testing.M) {
	for _, k := range []string{"DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_ID"} {
		os.Unsetenv(k)
	}
	harness.Main(m, "./cmd/webwrapper", "./cmd/svcpipe")
}

// startStack starts a gateway in front of an app service, as a customer runs them.
func startStack(t *testing.T) *appstack.Stack {
	t.Helper()
	return appstack.Start(t, appstack.Config{Issuer: issuer, Audience: audience, KeyID: "ww-1", Password: password})
}
