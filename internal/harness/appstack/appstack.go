// Package appstack starts what a customer runs: the gateway (the -race caddy of
// internal/harness) with one partner "demo" in front of the real app service, for the
// browser and desktop wrapper tests. It is apart from internal/harness so that the
// handler's unit tests, which use the harness, do not build the app service.
package appstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partnergate/partnergate/appservice"
	"github.com/partnergate/partnergate/appservice/web"
	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linkspec"
)

// Config is the partner and the service account of a stack.
type Config struct {
	Issuer, Audience string
	KeyID            string   // the partner's ES256 key id
	Password         string   // the first instructor's ("instructor", Coach Carter)
	FrameAncestors   string   // the app service's; empty: its default
	Origins          []string // the demo partner's origins (its form pages); none: any page
	HeaderPrefix     string   // the gateway's header_prefix and the app service's; empty: the default
	// Directories, when set, gives the app service's directory sign-ins for the gateway's
	// public URL (their redirect URIs are under it), called once the gateway runs.
	Directories func(publicURL string) []web.Directory
	// EIDProviders, when set, gives the app service's national eID sign-ins for the
	// gateway's public URL.
	EIDProviders func(publicURL string) []web.EIDProvider
	// DirectoryNow is the app service's ID token clock; time.Now when nil.
	DirectoryNow func() time.Time
	// HTTPS, when true, runs the gateway as it is deployed: https://HTTPSHost:port with a
	// certificate of Caddy's own local CA (tls internal), so that the browser sees the
	// __Host- cookies, Secure and HSTS of production. Stack.RootCA is that CA's root.
	HTTPS bool
}

// HTTPSHost is an HTTPS stack's host name: a name, not an address, as in production
// (browsers keep HSTS for names only; .test is reserved, RFC 6761). The stack's clients and
// the tests' browser (browser.Resolve) reach it on 127.0.0.1.
const HTTPSHost = "app.partnergate.test"

// Stack is a running gateway in front of an app service.
type Stack struct {
	Gateway *harness.Caddy
	App     *appservice.Server
	Key     *harness.Key // the partner's signing key
	AppLogs *harness.SyncBuffer
	// Database is the app service's SQLite file, for a test that changes what the service
	// holds behind its back (its sessions ended, say).
	Database string
	// RootCA is the PEM file of the root that an HTTPS stack's certificate chains to
	// (Caddy's local CA); "" for a plain HTTP stack.
	RootCA string
}

// Start starts the stack for t; it stops with t, and logs both sides' output when t fails.
func Start(t *testing.T, c Config) *Stack {
	t.Helper()
	s := &Stack{Key: harness.NewKey(t, "ES256", c.KeyID), AppLogs: &harness.SyncBuffer{}}
	dir := t.TempDir()
	s.Database = filepath.Join(dir, "app.db")
	jwks := harness.WriteJWKS(t, dir, s.Key)
	secret := "stack-upstream-secret-0123456789abcdef"
	// The app's port is chosen before the gateway that points at it starts, and bound
	// after it: another test process may take the port in between. Then both start again
	// on new ports; any other failure is the test's.
	origins := ""
	if len(c.Origins) > 0 {
		origins = "\n\t\t\t\torigins " + strings.Join(c.Origins, " ")
	}
	prefix, strip := "", linkspec.DefaultHeaderPrefix
	if c.HeaderPrefix != "" {
		prefix, strip = "\n\t\t\theader_prefix "+c.HeaderPrefix, c.HeaderPrefix
	}
	// Over HTTPS: Caddy's local CA, whose root it must not install into this machine's
	// trust store, and no listener on port 80 for redirects to HTTPS.
	global, site := "", "http://127.0.0.1:{{.Port}} {"
	if c.HTTPS {
		global = "\n\tskip_install_trust\n\tauto_https disable_redirects\n\thttp_port {{.Vars.http}}"
		site = "https://" + HTTPSHost + ":{{.Port}} {\n\tbind 127.0.0.1\n\ttls internal"
	}
	var err error
	for attempt := 1; ; attempt++ {
		appPort := freeport.For(t)
		vars := map[string]string{"jwks": jwks, "app": "127.0.0.1:" + strconv.Itoa(appPort)}
		if c.HTTPS {
			vars["http"] = strconv.Itoa(freeport.For(t))
		}
		s.Gateway = harness.StartCaddy(t, harness.Config{
			Caddyfile: `{
	admin {{.Admin}}` + global + `
}
` + site + `
	route /partner/* {
		jwt_partner {
			partner demo {
				jwks_file {{.Vars.jwks}}
				issuer ` + c.Issuer + `
				audience ` + c.Audience + origins + `
			}
			upstream_secret {env.PARTNERGATE_UPSTREAM_SECRET}` + prefix + `
		}
		reverse_proxy {{.Vars.app}}
	}
	reverse_proxy {{.Vars.app}} {
		header_up -` + strip + `*
	}
}`,
			Vars: vars,
			Env:  []string{"PARTNERGATE_UPSTREAM_SECRET=" + secret},
		})
		if c.HTTPS {
			s.RootCA = serveHTTPS(t, s.Gateway)
		}
		var dirs []web.Directory
		if c.Directories != nil {
			dirs = c.Directories(s.Gateway.URL)
		}
		var eids []web.EIDProvider
		if c.EIDProviders != nil {
			eids = c.EIDProviders(s.Gateway.URL)
		}
		s.App, err = appservice.Start(context.Background(), appservice.Config{
			Directories:    dirs,
			EIDProviders:   eids,
			DirectoryNow:   c.DirectoryNow,
			Listen:         "127.0.0.1:" + strconv.Itoa(appPort),
			Database:       s.Database,
			SecretFile:     filepath.Join(dir, "app.secret"),
			PublicURL:      s.Gateway.URL,
			FrameAncestors: c.FrameAncestors,
			HeaderPrefix:   c.HeaderPrefix,
			UpstreamSecret: secret,
			Instructor:     appservice.Instructor{Username: "instructor", Email: "coach@service.example", DisplayName: "Coach Carter", Password: c.Password},
			Logger:         slog.New(slog.NewJSONHandler(s.AppLogs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 3 {
			t.Fatalf("starting the app service: %v", err)
		}
		s.Gateway.Stop()
	}
	t.Cleanup(func() { s.App.Shutdown(context.Background()) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("app service log:\n%s", s.AppLogs.String())
			t.Logf("gateway log:\n%s", s.Gateway.Logs())
		}
	})
	return s
}

// serveHTTPS waits until the HTTPS gateway g answers a TLS handshake for HTTPSHost with a
// certificate that chains to Caddy's local root (Caddy issues it after its listener is up),
// points g's URL and Transport at the name, and returns the root's file.
func serveHTTPS(t *testing.T, g *harness.Caddy) string {
	t.Helper()
	// Caddy keeps its data in $XDG_DATA_HOME/caddy, which the harness sets to its folder.
	root := filepath.Join(g.Dir, "caddy", "pki", "authorities", "local", "root.crt")
	addr := "127.0.0.1:" + strconv.Itoa(g.Port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(root)
		if err == nil && pool.AppendCertsFromPEM(pem) {
			var conn *tls.Conn
			conn, err = tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{ServerName: HTTPSHost, RootCAs: pool})
			if err == nil {
				conn.Close()
				d := &net.Dialer{Timeout: 10 * time.Second}
				g.URL = "https://" + net.JoinHostPort(HTTPSHost, strconv.Itoa(g.Port))
				g.Transport = &http.Transport{
					TLSClientConfig: &tls.Config{RootCAs: pool},
					DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
						if host, port, _ := net.SplitHostPort(a); host == HTTPSHost {
							a = net.JoinHostPort("127.0.0.1", port)
						}
						return d.DialContext(ctx, network, a)
					},
				}
				return root
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway does not answer HTTPS for %s with a certificate of its local CA (%s): %v\n%s", HTTPSHost, root, err, g.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
