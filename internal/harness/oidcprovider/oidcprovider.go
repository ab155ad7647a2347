// Package oidcprovider runs a real OpenID Connect provider on loopback for the tests that
// sign people in through one: zitadel/oidc's OpenID Provider (package op, at the version
// go.mod pins) over an in-memory storage of its own. Its users carry whatever the tests
// need in their ID tokens: further claims (a tenant's tid, groups, roles, a national
// identity number such as pid) and an acr each, so it stands in for a company directory
// (Microsoft Entra ID, ADFS) and for a national electronic ID alike. It serves discovery,
// the authorization code flow with PKCE, the token, userinfo and keys endpoints,
// RP-initiated logout (end_session_endpoint) and its own login form at /login/username.
//
// It runs in the test's process, on a loopback port of its own, and stops with the test.
package oidcprovider

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"

	"github.com/partnergate/partnergate/internal/freeport"
)

// The clients Start registers, both with ClientSecret.
const (
	ClientWeb    = "web"
	ClientAPI    = "api"
	ClientSecret = "secret"
)

// User is a user of the provider: ID is its sub, Username and Password what its login
// form takes.
type User struct {
	ID, Username, Password, FirstName, LastName, Email string
	// Claims are further claims of the user's ID tokens, as the provider's directory holds
	// them: "tid" (a tenant), "groups" or "roles" (lists of strings), "pid" (a national
	// identity number). They cannot replace the claims the provider sets itself (iss, sub,
	// aud, exp, iat, nonce, acr, amr, auth_time, at_hash, c_hash).
	Claims map[string]any
	// ACR is the acr claim of the user's ID tokens: the assurance of the sign-in (a
	// national eID's level, such as "idporten-loa-high"); none when empty.
	ACR string
}

// Client is a relying party registered at the provider: a confidential web client
// (client_secret_basic or client_secret_post) of the code flow.
type Client struct {
	ID, Secret   string
	RedirectURIs []string
	// PostLogoutRedirectURIs are where end_session may send the browser back to; without
	// one it ends on the provider's own /logged-out page.
	PostLogoutRedirectURIs []string
}

// Config is what a provider knows.
type Config struct {
	Clients []Client
	Users   []User
}

// Provider is a running provider.
type Provider struct {
	// Issuer is its issuer URL, http://localhost:<port>/.
	Issuer string
}

// Start starts a provider for t with users and the clients ClientWeb and ClientAPI, both
// allowed redirectURIs; it stops with t.
func Start(t testing.TB, redirectURIs []string, users ...User) *Provider {
	t.Helper()
	return StartWith(t, Config{Users: users, Clients: []Client{
		{ID: ClientWeb, Secret: ClientSecret, RedirectURIs: redirectURIs},
		{ID: ClientAPI, Secret: ClientSecret, RedirectURIs: redirectURIs},
	}})
}

// StartWith starts a provider for t with c; it stops with t.
func StartWith(t testing.TB, c Config) *Provider {
	t.Helper()
	st, err := newStorage(c)
	if err != nil {
		t.Fatalf("starting the OpenID provider: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(freeport.For(t)))
	if err != nil {
		t.Fatalf("starting the OpenID provider: %v", err)
	}
	p := &Provider{Issuer: "http://localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/"}
	var key [32]byte
	_, _ = rand.Read(key[:]) // crypto/rand.Read never fails (Go 1.24)
	o, err := op.NewProvider(&op.Config{
		CryptoKey:                key,
		DefaultLogoutRedirectURI: loggedOutPath,
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		SupportedUILocales:       []language.Tag{language.English},
	}, st, op.StaticIssuer(p.Issuer),
		op.WithAllowInsecure(), // an http issuer, on loopback
		op.WithCustomAuthEndpoint(op.NewEndpoint("auth")))
	if err != nil {
		t.Fatalf("starting the OpenID provider: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle(loginPath, op.NewIssuerInterceptor(o.IssuerFromRequest).Handler(&login{st: st, callback: op.AuthCallbackURL(o)}))
	mux.HandleFunc(loggedOutPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>Signed out</title><h1 id="provider-signed-out">Signed out of the provider</h1>`))
	})
	mux.Handle("/", o)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the OpenID provider stopped: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return p
}
