package web

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/partnergate/partnergate/internal/harness/oidcprovider"
	"github.com/partnergate/partnergate/problem"
)

func TestDirectoryFlowCookie(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	good := directoryFlow{Directory: "clinic", State: "s", Nonce: "n", Verifier: "v", Expires: f.now.Add(time.Minute).Unix()}
	expired := good
	expired.Expires = f.now.Unix()
	signed := f.h.signFlow(good)
	for _, tc := range []struct {
		name, raw string
		ok        bool
	}{
		{"valid", signed, true},
		{"empty", "", false},
		{"signature changed", signed[:len(signed)-2] + "AA", false},
		{"content changed", "x" + signed, false},
		{"expired", f.h.signFlow(expired), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := f.h.openFlow(tc.raw)
			if ok != tc.ok || (ok && got != good) {
				t.Errorf("openFlow(%q) = %+v, %v, want ok %v", tc.raw, got, ok, tc.ok)
			}
		})
	}
}

const testRedirect = "http://127.0.0.1:1/app/directory/clinic/callback"

// providerIDToken signs anna in at the real provider with a plain HTTP client, as client
// clientID, and returns the ID token the provider issues for nonce.
func providerIDToken(t *testing.T, p *oidcprovider.Provider, clientID, nonce string) string {
	t.Helper()
	ctx := context.Background()
	op, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &oauth2.Config{ClientID: clientID, ClientSecret: oidcprovider.ClientSecret, Endpoint: op.Endpoint(),
		RedirectURL: testRedirect, Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	verifier := oauth2.GenerateVerifier()
	loc := oidcprovider.SignIn(t, cfg.AuthCodeURL("st", oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)),
		"anna@north-clinic.example", "anna-directory-password")
	tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	return raw
}

// TestDirectoryVerifyIDToken verifies real ID tokens of a real provider (zitadel/oidc's
// example provider): a token issued to another client id, one past its lifetime and one
// with another sign-in's nonce are refused; the service's own is read into a user.
func TestDirectoryVerifyIDToken(t *testing.T) {
	p := oidcprovider.Start(t, []string{testRedirect}, oidcprovider.User{ID: "dir-anna", Username: "anna@north-clinic.example",
		Password: "anna-directory-password", FirstName: "Anna", LastName: "Lind", Email: "anna@north-clinic.example"})
	f := newFixture(t, "http://127.0.0.1:1")
	dirs, err := newDirectories([]Directory{{Name: "clinic", Label: "North Clinic ID", Partner: "demo", Issuer: p.Issuer,
		ClientID: oidcprovider.ClientWeb, ClientSecret: oidcprovider.ClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	d := dirs.byName["clinic"]
	op, err := d.discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ours := providerIDToken(t, p, oidcprovider.ClientWeb, "nonce-1")
	other := providerIDToken(t, p, oidcprovider.ClientAPI, "nonce-1")
	real := time.Now
	for _, tc := range []struct {
		name, token, nonce string
		now                func() time.Time
		want               problem.Code
	}{
		{"ours", ours, "nonce-1", real, ""},
		{"another client id", other, "nonce-1", real, problem.CodeDirectoryTokenInvalid},
		{"expired", ours, "nonce-1", func() time.Time { return time.Now().Add(2 * time.Hour) }, problem.CodeDirectoryTokenExpired},
		{"another nonce", ours, "nonce-2", real, problem.CodeDirectoryTokenInvalid},
		{"none", "", "nonce-1", real, problem.CodeDirectoryTokenInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.h.cfg.DirectoryNow = tc.now
			u, code := f.h.verifyIDToken(context.Background(), d, op, tc.token, tc.nonce)
			if code != tc.want {
				t.Fatalf("verifyIDToken(%s) = %q, want %q", tc.name, code, tc.want)
			}
			if code == "" && (u.Issuer != p.Issuer || u.Subject != "dir-anna" || u.Partner != "demo") {
				t.Errorf("verifyIDToken(%s) user = %+v, want iss %s, sub dir-anna, partner demo", tc.name, u, p.Issuer)
			}
		})
	}
}

// newDirectoryFixture is newFixture with directories.
func newDirectoryFixture(t *testing.T, ds ...Directory) *fixture {
	t.Helper()
	return newDirectoryFixtureAt(t, "http://localhost:8080", ds...)
}

// newDirectoryFixtureAt is newDirectoryFixture with the public URL public.
func newDirectoryFixtureAt(t *testing.T, public string, ds ...Directory) *fixture {
	t.Helper()
	f := newFixture(t, public)
	dirs, err := newDirectories(ds)
	if err != nil {
		t.Fatal(err)
	}
	f.h.dirs = dirs
	return f
}

// TestDirectoryUnavailable: a provider that does not answer is a 503 page with its code
// and Retry-After, not an error of ours.
func TestDirectoryUnavailable(t *testing.T) {
	f := newDirectoryFixture(t, Directory{Name: "down", Label: "Down ID", Partner: "demo", Issuer: "http://127.0.0.1:1/", ClientID: "web"})
	res, b := newBrowser(t, f.h).get("/app/directory/down/signin")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(b, "directory_unavailable") {
		t.Errorf("GET signin of a provider that is down = %d (Retry-After %q), want 503 directory_unavailable with Retry-After:\n%s",
			res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	if res, _ := newBrowser(t, f.h).get("/app/directory/nosuch/signin"); res.StatusCode != http.StatusNotFound {
		t.Errorf("GET signin of an unknown directory = %d, want 404", res.StatusCode)
	}
}

// TestDirectoryButtons: the sign-in page offers the directories of the first-time
// employee's organization (its own and its partner's), every one without a session.
func TestDirectoryButtons(t *testing.T) {
	f := newDirectoryFixture(t,
		Directory{Name: "north", Label: "North ID", Partner: "demo", Organization: "org-1", Issuer: "http://127.0.0.1:1/", ClientID: "web"},
		Directory{Name: "south", Label: "South ID", Partner: "demo", Organization: "org-2", Issuer: "http://127.0.0.1:1/", ClientID: "web"},
		Directory{Name: "demo-all", Label: "Demo SSO", Partner: "demo", Issuer: "http://127.0.0.1:1/", ClientID: "web"},
		Directory{Name: "other", Label: "Other ID", Partner: "other", Issuer: "http://127.0.0.1:1/", ClientID: "web"})
	buttons := regexp.MustCompile(`id="directory-([a-z0-9-]+)" href=`)
	ids := func(b string) string {
		var out []string
		for _, m := range buttons.FindAllStringSubmatch(b, -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, ",")
	}
	_, b := newBrowser(t, f.h).get("/app/signin")
	if got := ids(b); got != "north,south,demo-all,other" {
		t.Errorf("sign-in page without a session offers %q, want every directory", got)
	}
	if !strings.Contains(b, "Sign in with North ID") {
		t.Errorf("sign-in page lacks the button text Sign in with North ID")
	}
	br := newBrowser(t, f.h)
	br.signInByLink(f.link(t, mainPayload(), "main")) // a first-time employee of demo's org-1
	_, b = br.get("/app/signin")
	if got := ids(b); got != "north,demo-all" {
		t.Errorf("first-sight page of demo's org-1 offers %q, want north,demo-all", got)
	}
}

// TestDirectoryOverHTTPS signs a directory user in where the service is deployed: over
// HTTPS, where the flow cookie is __Host-pg_directory (Secure, Path=/), the one the
// callback reads. It was set as pg_directory, so every callback failed with
// directory_state_invalid.
func TestDirectoryOverHTTPS(t *testing.T) {
	const public = "https://localhost:8080"
	p := oidcprovider.Start(t, []string{public + "/app/directory/clinic/callback"}, oidcprovider.User{ID: "dir-anna",
		Username: "anna@north-clinic.example", Password: "anna-directory-password", FirstName: "Anna", LastName: "Lind"})
	f := newDirectoryFixtureAt(t, public, Directory{Name: "clinic", Label: "North Clinic ID", Partner: "demo", Issuer: p.Issuer,
		ClientID: oidcprovider.ClientWeb, ClientSecret: oidcprovider.ClientSecret})
	b := newBrowser(t, f.h)
	res, _ := b.get("/app/directory/clinic/signin")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET signin = %d, want 303 to the provider", res.StatusCode)
	}
	var flow *http.Cookie
	for _, c := range res.Cookies() {
		if strings.Contains(c.Name, directoryCookie) {
			flow = c
		}
	}
	if flow == nil || flow.Name != "__Host-"+directoryCookie || !flow.Secure || !flow.HttpOnly || flow.Path != "/" || flow.SameSite != http.SameSiteLaxMode {
		t.Fatalf("flow cookie = %+v, want __Host-%s, Secure, HttpOnly, Path /, SameSite Lax", flow, directoryCookie)
	}
	back := oidcprovider.SignIn(t, res.Header.Get("Location"), "anna@north-clinic.example", "anna-directory-password")
	res, page := b.get(back.RequestURI())
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app/signin" {
		t.Fatalf("callback over HTTPS = %d to %q, want 303 to the first-sight page /app/signin:\n%s", res.StatusCode, res.Header.Get("Location"), page)
	}
	if _, page := b.get("/app/signin"); !strings.Contains(page, "Anna Lind") {
		t.Errorf("first-sight page over HTTPS does not greet Anna Lind:\n%s", page)
	}
}
