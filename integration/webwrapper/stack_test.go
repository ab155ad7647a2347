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
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/partnergate/partnergate/appservice"
	"github.com/partnergate/partnergate/internal/harness"
)

const (
	issuer   = "https://partner.example"
	audience = "partnergate-demo"
	password = "ww-instructor-password"
)

func TestMain(m *testing.M) { harness.Main(m, "./cmd/webwrapper", "./cmd/svcpipe") }

// stack is a gateway in front of an app service, as a customer runs them.
type stack struct {
	gateway *harness.Caddy
	appLogs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{appLogs: &syncBuffer{}}
	dir := t.TempDir()
	key := harness.NewKey(t, "ES256", "ww-1")
	jwks := harness.WriteJWKS(t, dir, key)
	secret := "ww-upstream-secret-0123456789abcdef"
	appPort := harness.FreePort(t)

	s.gateway = harness.StartCaddy(t, harness.Config{
		Caddyfile: `{
	admin {{.Admin}}
}
http://127.0.0.1:{{.Port}} {
	route /partner/* {
		jwt_partner {
			partner demo {
				jwks_file {{.Vars.jwks}}
				issuer ` + issuer + `
				audience ` + audience + `
			}
			upstream_secret {env.PARTNERGATE_UPSTREAM_SECRET}
		}
		reverse_proxy {{.Vars.app}}
	}
	reverse_proxy {{.Vars.app}} {
		header_up -X-Partner-*
	}
}`,
		Vars: map[string]string{"jwks": jwks, "app": "127.0.0.1:" + strconv.Itoa(appPort)},
		Env:  []string{"PARTNERGATE_UPSTREAM_SECRET=" + secret},
	})

	app, err := appservice.Start(context.Background(), appservice.Config{
		Listen:         "127.0.0.1:" + strconv.Itoa(appPort),
		Database:       filepath.Join(dir, "app.db"),
		SecretFile:     filepath.Join(dir, "app.secret"),
		PublicURL:      s.gateway.URL,
		UpstreamSecret: secret,
		Instructor:     appservice.Instructor{Username: "instructor", Email: "coach@service.example", DisplayName: "Coach Carter", Password: password},
		Logger:         slog.New(slog.NewJSONHandler(s.appLogs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatalf("starting the app service: %v", err)
	}
	t.Cleanup(func() { app.Shutdown(context.Background()) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("app service log:\n%s", s.appLogs.String())
			t.Logf("gateway log:\n%s", s.gateway.Logs())
		}
	})
	return s
}
