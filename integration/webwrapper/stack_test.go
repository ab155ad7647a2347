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
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/harness/appstack"
)

const (
	issuer   = "https://partner.example"
	audience = "partnergate-demo"
	password = "ww-coach-password-2026"
)

func TestMain(m *testing.M) { harness.Main(m, "./cmd/webwrapper", "./cmd/svcpipe") }

// startStack starts a gateway in front of an app service, as a customer runs them.
func startStack(t *testing.T) *appstack.Stack {
	t.Helper()
	return appstack.Start(t, appstack.Config{Issuer: issuer, Audience: audience, KeyID: "ww-1", Password: password})
}
