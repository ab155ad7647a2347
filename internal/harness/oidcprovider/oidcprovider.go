// Package oidcprovider starts a real OpenID Connect provider on loopback for the directory
// sign-in tests: zitadel/oidc's example OpenID provider at a pinned version, built once
// with go install into the user's cache folder (as the suite's other tools are set up, so
// a fresh machine needs nothing by hand) and run as its own process with static users. It
// registers the clients "web" and "api", both with the secret "secret", and serves its own
// login form at /login/username.
package oidcprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
)

// Version is the pinned zitadel/oidc module whose example provider runs.
const Version = "v3.52.0"

const pkg = "github.com/zitadel/oidc/v3/example/server"

// Client ids and the secret the example provider registers.
const (
	ClientWeb    = "web"
	ClientAPI    = "api"
	ClientSecret = "secret"
)

// User is a static user of the provider: its sub is ID.
type User struct {
	ID, Username, Password, FirstName, LastName, Email string
}

// Provider is a running provider.
type Provider struct {
	// Issuer is its issuer URL, http://localhost:<port>/ (the provider names itself so).
	Issuer string
	logs   *harness.SyncBuffer
}

var build struct {
	once sync.Once
	path string
	err  error
}

// binary returns the provider's program, installing it into the cache folder the first time
// on this machine.
func binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			build.err = err
			return
		}
		dir := filepath.Join(cache, "partnergate", "zitadel-oidc-"+Version)
		build.path = filepath.Join(dir, "server")
		if _, err := os.Stat(build.path); err == nil {
			return
		}
		// Installed into a temporary folder and renamed, so that a test process that
		// runs at the same time never starts half a program.
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
		if err != nil {
			if err = os.MkdirAll(filepath.Dir(dir), 0o755); err == nil {
				tmp, err = os.MkdirTemp(filepath.Dir(dir), "install-")
			}
			if err != nil {
				build.err = err
				return
			}
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("go", "install", pkg+"@"+Version)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go install %s@%s: %v\n%s", pkg, Version, err, out)
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			build.err = err
			return
		}
		if err := os.Rename(filepath.Join(tmp, "server"), build.path); err != nil && !fileExists(build.path) {
			build.err = err
		}
	})
	if build.err != nil {
		t.Fatalf("building the OpenID provider: %v", build.err)
	}
	return build.path
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Start starts a provider for t with users, allowing the redirect URIs; it stops with t.
func Start(t testing.TB, redirectURIs []string, users ...User) *Provider {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	m := map[string]any{}
	for _, u := range users {
		m[u.ID] = map[string]any{"ID": u.ID, "Username": u.Username, "Password": u.Password, "FirstName": u.FirstName,
			"LastName": u.LastName, "Email": u.Email, "EmailVerified": true, "PreferredLanguage": "en"}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(dir, "users.json")
	if err := os.WriteFile(usersFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freeport.For(t)
	p := &Provider{Issuer: "http://localhost:" + strconv.Itoa(port) + "/", logs: &harness.SyncBuffer{}}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "USERS_FILE="+usersFile, "REDIRECT_URI="+strings.Join(redirectURIs, ","))
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the OpenID provider: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("OpenID provider log:\n%s", p.logs.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(p.Issuer + ".well-known/openid-configuration")
		if err == nil {
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the OpenID provider did not start: %v\n%s", err, p.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
