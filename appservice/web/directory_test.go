package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
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
		ClientID: oidcprovider.ClientWeb, ClientSecret: oidcprovider.ClientSecret, AllowAnyUser: true}})
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
			u, _, code := f.h.verifyIDToken(context.Background(), d, op, tc.token, tc.nonce)
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
	f := newDirectoryFixture(t, Directory{Name: "down", Label: "Down ID", Partner: "demo", Issuer: "http://127.0.0.1:1/", ClientID: "web", AllowAnyUser: true})
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
// employee's organization (its own and its partner's); without a session, and on the
// signed-out page, only those configured public: every directory named every customer's
// organization and provider to anyone.
func TestDirectoryButtons(t *testing.T) {
	f := newDirectoryFixture(t,
		Directory{Name: "north", Label: "North ID", Partner: "demo", Organization: "org-1", Issuer: "http://127.0.0.1:1/", ClientID: "web", AllowAnyUser: true},
		Directory{Name: "south", Label: "South ID", Partner: "demo", Organization: "org-2", Issuer: "http://127.0.0.1:1/", ClientID: "web", AllowAnyUser: true},
		Directory{Name: "demo-all", Label: "Demo SSO", Partner: "demo", Issuer: "http://127.0.0.1:1/", ClientID: "web", AllowAnyUser: true, Public: true},
		Directory{Name: "other", Label: "Other ID", Partner: "other", Issuer: "http://127.0.0.1:1/", ClientID: "web", AllowAnyUser: true})
	buttons := regexp.MustCompile(`id="directory-([a-z0-9-]+)" href=`)
	ids := func(b string) string {
		var out []string
		for _, m := range buttons.FindAllStringSubmatch(b, -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, ",")
	}
	_, b := newBrowser(t, f.h).get("/app/signin")
	if got := ids(b); got != "demo-all" {
		t.Errorf("sign-in page without a session offers %q, want the public demo-all only", got)
	}
	if !strings.Contains(b, "Sign in with Demo SSO") {
		t.Errorf("sign-in page lacks the button text Sign in with Demo SSO")
	}
	if _, b := newBrowser(t, f.h).get("/app/signed-out"); ids(b) != "demo-all" {
		t.Errorf("signed-out page offers %q, want the public demo-all only", ids(b))
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
		ClientID: oidcprovider.ClientWeb, ClientSecret: oidcprovider.ClientSecret, AllowAnyUser: true})
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

// TestDirectoryNeedsEntitlementRule: a directory that names no claim entitling a user to
// its organization, and does not say allow_any_user, refuses to load, naming itself and the
// setting; so does one with both, or a claim without values.
func TestDirectoryNeedsEntitlementRule(t *testing.T) {
	base := Directory{Name: "south", Label: "South ID", Partner: "demo", Organization: "org-2", Issuer: "https://login.example/t/v2.0", ClientID: "web"}
	st := newFixture(t, "http://localhost:8080").st
	for _, tc := range []struct {
		name   string
		change func(d *Directory)
		want   string // in the error; "" loads
	}{
		{"no rule", func(d *Directory) {}, `directory "south": no require_claims`},
		{"both", func(d *Directory) { d.AllowAnyUser, d.RequireClaims = true, map[string][]string{"tid": {"t"}} }, `directory "south": require_claims and allow_any_user`},
		{"claim without values", func(d *Directory) { d.RequireClaims = map[string][]string{"groups": {}} }, `directory "south": require_claims "groups"`},
		{"empty value", func(d *Directory) { d.RequireClaims = map[string][]string{"groups": {""}} }, `directory "south": require_claims "groups"`},
		{"empty claim name", func(d *Directory) { d.RequireClaims = map[string][]string{"": {"x"}} }, `directory "south": require_claims ""`},
		{"rule", func(d *Directory) { d.RequireClaims = map[string][]string{"tid": {"t"}, "groups": {"g"}} }, ""},
		{"allow any user", func(d *Directory) { d.AllowAnyUser = true }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			tc.change(&d)
			_, err := New(Config{Store: st, UpstreamSecret: upstreamSecret, AppSecret: appSecret, Directories: []Directory{d}})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New with %s = %v, want it to load", tc.name, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New with %s = %v, want an error with %q", tc.name, err, tc.want)
			}
		})
	}
}

// TestDirectoryClaimHolds: a claim is one of the values (a number or boolean as JSON writes
// it), a list claim holds one; a missing claim, an object or a list of lists never is.
func TestDirectoryClaimHolds(t *testing.T) {
	accepted := []string{"north-staff", "42", "false"}
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"string", "north-staff", true},
		{"other string", "south-staff", false},
		{"list holding one", []any{"south-staff", "north-staff"}, true},
		{"list holding none", []any{"south-staff"}, false},
		{"empty list", []any{}, false},
		{"missing", nil, false},
		{"number", float64(42), true},
		{"other number", float64(4.2), false},
		{"list of numbers", []any{float64(1), float64(42)}, true},
		{"boolean", true, false},
		{"list of lists", []any{[]any{"north-staff"}}, false},
		{"object", map[string]any{"north-staff": true}, false},
		{"case differs", "North-Staff", false},
	} {
		if got := claimHolds(tc.v, accepted); got != tc.want {
			t.Errorf("claimHolds(%s %v) = %v, want %v", tc.name, tc.v, got, tc.want)
		}
	}
}

// The two clinics' directories of TestDirectoryEntitlement: one provider (one issuer, one
// tenant), an application registration per clinic, "assignment required" off, as Entra
// ID's default is, so the provider signs any of its users in to either.
const tenant = "0c9a5e57-tenant"

var (
	ida  = oidcprovider.User{ID: "dir-ida", Username: "ida@north.example", Password: "ida-directory-password", FirstName: "Ida", LastName: "North", Claims: map[string]any{"tid": tenant, "groups": []any{"north-staff"}}}
	sven = oidcprovider.User{ID: "dir-sven", Username: "sven@south.example", Password: "sven-directory-password", FirstName: "Sven", LastName: "South", Claims: map[string]any{"tid": tenant, "groups": []any{"all-staff", "south-staff"}}}
	bob  = oidcprovider.User{ID: "dir-bob", Username: "bob@tenant.example", Password: "bob-directory-password", FirstName: "Bob", LastName: "Nobody", Claims: map[string]any{"tid": tenant, "groups": []any{"all-staff"}}}
	eve  = oidcprovider.User{ID: "dir-eve", Username: "eve@guest.example", Password: "eve-directory-password", FirstName: "Eve", LastName: "Guest", Claims: map[string]any{"tid": "another-tenant", "groups": []any{"south-staff"}}}
)

// TestDirectoryEntitlement: two directories share one issuer. A user is admitted where her
// token's claims say (tenant and group), and refused with directory_user_not_allowed
// elsewhere, before any account, employee, membership or session is stored: North's user
// at South, a user no clinic knows (Bob), and a user of another tenant carrying South's
// group name.
func TestDirectoryEntitlement(t *testing.T) {
	const public = "https://localhost:8080"
	p := oidcprovider.StartWith(t, oidcprovider.Config{Users: []oidcprovider.User{ida, sven, bob, eve}, Clients: []oidcprovider.Client{
		{ID: "north-app", Secret: "north-secret", RedirectURIs: []string{public + "/app/directory/north/callback"}},
		{ID: "south-app", Secret: "south-secret", RedirectURIs: []string{public + "/app/directory/south/callback"}},
	}})
	db, driver, dsn := databases[0].open(t)
	var logs strings.Builder
	f := newFixtureOn(t, public, db, slog.New(slog.NewJSONHandler(&logs, nil)))
	dirs, err := newDirectories([]Directory{
		{Name: "north", Label: "North ID", Partner: "demo", Organization: "org-1", Issuer: p.Issuer, ClientID: "north-app", ClientSecret: "north-secret",
			RequireClaims: map[string][]string{"tid": {tenant}, "groups": {"north-staff"}}},
		{Name: "south", Label: "South ID", Partner: "demo", Organization: "org-2", Issuer: p.Issuer, ClientID: "south-app", ClientSecret: "south-secret",
			RequireClaims: map[string][]string{"tid": {tenant}, "groups": {"south-staff"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.h.dirs = dirs
	raw := rawDB(t, driver, dsn)
	stored := func() (employees, sessions int) {
		t.Helper()
		if err := raw.QueryRow(`SELECT count(*) FROM employees WHERE partner LIKE 'directory:%'`).Scan(&employees); err != nil {
			t.Fatal(err)
		}
		if err := raw.QueryRow(`SELECT count(*) FROM sessions`).Scan(&sessions); err != nil {
			t.Fatal(err)
		}
		return employees, sessions
	}
	for _, tc := range []struct {
		directory string
		user      oidcprovider.User
		admitted  bool
		claim     string // the claim the log names for a refusal
	}{
		{"south", ida, false, "groups"},
		{"south", bob, false, "groups"},
		{"south", eve, false, "tid"},
		{"north", sven, false, "groups"},
		{"north", ida, true, ""},
		{"south", sven, true, ""},
	} {
		t.Run(tc.user.FirstName+" at "+tc.directory, func(t *testing.T) {
			employees, sessions := stored()
			logs.Reset()
			b := newBrowser(t, f.h)
			res, _ := b.get("/app/directory/" + tc.directory + "/signin")
			back := oidcprovider.SignIn(t, res.Header.Get("Location"), tc.user.Username, tc.user.Password)
			res, page := b.get(back.RequestURI())
			e, s := stored()
			if tc.admitted {
				if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app/signin" || e != employees+1 || s != sessions+1 {
					t.Errorf("callback = %d to %q, %d new directory users and %d sessions, want 303 to the first-sight page, one of each:\n%s",
						res.StatusCode, res.Header.Get("Location"), e-employees, s-sessions, page)
				}
				return
			}
			if res.StatusCode != http.StatusForbidden || !strings.Contains(page, string(problem.CodeDirectoryUserNotAllowed)) {
				t.Errorf("callback = %d, want 403 %s:\n%s", res.StatusCode, problem.CodeDirectoryUserNotAllowed, page)
			}
			if e != employees || s != sessions {
				t.Errorf("a refused directory user stored %d directory users and %d sessions, want none", e-employees, s-sessions)
			}
			for _, c := range res.Cookies() {
				if strings.Contains(c.Name, sessionCookie) && c.MaxAge >= 0 {
					t.Errorf("a refused directory user got a session cookie")
				}
			}
			want := `"msg":"directory sign-in refused","directory":"` + tc.directory + `","outcome":"directory_user_not_allowed","claim":"` + tc.claim + `"`
			if got := logs.String(); !strings.Contains(got, want) || strings.Contains(got, tenant) || strings.Contains(got, tc.user.Username) {
				t.Errorf("log = %s, want %s and neither the tenant nor the user", got, want)
			}
		})
	}
}

// TestDirectoryScopes: a directory's scopes are asked for besides openid, profile and
// email (ADFS puts its issuance rules' claims into the ID token only for allatclaims).
func TestDirectoryScopes(t *testing.T) {
	p := oidcprovider.Start(t, []string{"http://localhost:8080/app/directory/adfs/callback"})
	f := newDirectoryFixture(t, Directory{Name: "adfs", Label: "ADFS", Partner: "demo", Issuer: p.Issuer, ClientID: oidcprovider.ClientWeb,
		RequireClaims: map[string][]string{"group": {"Physio staff"}}, Scopes: []string{"allatclaims"}})
	res, _ := newBrowser(t, f.h).get("/app/directory/adfs/signin")
	u, err := url.Parse(res.Header.Get("Location"))
	if err != nil || u.Query().Get("scope") != "openid profile email allatclaims" {
		t.Errorf("sign-in redirect %q (%v), want scope openid profile email allatclaims", res.Header.Get("Location"), err)
	}
}

// TestDirectorySignOutByPost: the directory's sign-out (the wrapper's AdfsUrl with
// signout=1) is a page, never a state change by GET: asked for by another site it waits
// for the person's button, asked for by the person's own browser its script posts the
// form; the post ends the session only with the page's CSRF token, then sends the browser
// to the provider's end_session_endpoint. A GET from another site ended the session.
func TestDirectorySignOutByPost(t *testing.T) {
	p := oidcprovider.Start(t, []string{"http://localhost:8080/app/directory/clinic/callback"})
	f := newDirectoryFixture(t, Directory{Name: "clinic", Label: "Clinic ID", Partner: "demo", Issuer: p.Issuer,
		ClientID: oidcprovider.ClientWeb, AllowAnyUser: true})
	b := newBrowser(t, f.h)
	b.signInByLink(f.link(t, goPayload(), "go"))
	signedIn := func() bool {
		res, _ := b.get("/go")
		return res.StatusCode == http.StatusOK
	}
	if !signedIn() {
		t.Fatal("the Go link did not sign the browser in")
	}
	page := func(site string) (*http.Response, string) {
		r := httptest.NewRequest(http.MethodGet, "/app/directory/clinic/signin?signout=1", nil)
		r.Header.Set("Sec-Fetch-Site", site)
		res := b.do(r)
		return res, body(t, res)
	}

	res, cross := page("cross-site")
	if res.StatusCode != http.StatusOK || !strings.Contains(cross, `id="directory-signout-form"`) || strings.Contains(cross, "signout.js") {
		t.Errorf("sign-out page for another site = %d, want 200 with the form and without the script that posts it:\n%s", res.StatusCode, cross)
	}
	if !signedIn() {
		t.Fatal("a GET of the directory's sign-out from another site ended the session")
	}
	res, own := page("none")
	if !strings.Contains(own, `<script src="/app/static/signout.js"></script>`) || !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("sign-out page for the person's own navigation lacks its script or its CSP allowing it:\n%s", own)
	}
	// The post redirects to the provider's logout, which the page's form-action must allow.
	provider, _ := url.Parse(p.Issuer)
	if csp, want := res.Header.Get("Content-Security-Policy"), "form-action 'self' http://"+provider.Hostname()+":"+provider.Port()+";"; !strings.Contains(csp, want) {
		t.Errorf("sign-out page's CSP = %q, want %q", csp, want)
	}
	if !signedIn() {
		t.Fatal("a GET of the directory's sign-out ended the session")
	}

	if res, _ := b.post("/app/directory/clinic/signout", url.Values{"csrf": {"forged"}}); res.StatusCode != http.StatusForbidden || !signedIn() {
		t.Errorf("sign-out post without the page's CSRF token = %d, want 403 and the session kept", res.StatusCode)
	}
	tok := csrfField.FindStringSubmatch(own)
	if tok == nil {
		t.Fatal("no CSRF token on the sign-out page")
	}
	res, _ = b.post("/app/directory/clinic/signout", url.Values{"csrf": {tok[1]}})
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(loc.String(), p.Issuer) || loc.Query().Get("client_id") != oidcprovider.ClientWeb {
		t.Errorf("sign-out post = %d to %q, want 303 to the provider's end_session_endpoint with client_id", res.StatusCode, res.Header.Get("Location"))
	}
	if signedIn() {
		t.Error("the session outlived the sign-out post")
	}
	if res, _ := b.post("/app/directory/nosuch/signout", url.Values{"csrf": {tok[1]}}); res.StatusCode != http.StatusNotFound {
		t.Errorf("sign-out post to an unknown directory = %d, want 404", res.StatusCode)
	}
}

// TestDirectoryLogoutURL: the provider's end_session_endpoint keeps the query it has (Azure
// AD B2C names its policy there); client_id and post_logout_redirect_uri are added to it,
// not after a second "?".
func TestDirectoryLogoutURL(t *testing.T) {
	for _, tc := range []struct {
		endpoint, back, want string
		ok                   bool
	}{
		{"https://login.example/logout", "", "https://login.example/logout?client_id=web", true},
		{"https://login.example/b2c/logout?p=B2C_1_signin", "", "https://login.example/b2c/logout?client_id=web&p=B2C_1_signin", true},
		{"https://login.example/logout?p=x", "https://gw.example/app/signed-out", "https://login.example/logout?client_id=web&p=x&post_logout_redirect_uri=https%3A%2F%2Fgw.example%2Fapp%2Fsigned-out", true},
		{"https://login.example/logout?client_id=other", "", "https://login.example/logout?client_id=web", true},
		{"/relative/logout", "", "", false},
		{"javascript:alert(1)", "", "", false},
	} {
		got, ok := logoutURL(tc.endpoint, "web", "", tc.back)
		if got != tc.want || ok != tc.ok {
			t.Errorf("logoutURL(%q, %q) = %q, %v, want %q, %v", tc.endpoint, tc.back, got, ok, tc.want, tc.ok)
		}
	}
}

// annaAtClinic is a fixture with the directory "clinic" of partner demo, on a provider
// whose user is Anna Lind (anna@north.example, anna-directory-password).
func annaAtClinic(t *testing.T) *fixture {
	t.Helper()
	p := oidcprovider.Start(t, []string{"http://localhost:8080/app/directory/clinic/callback"}, oidcprovider.User{ID: "dir-anna",
		Username: "anna@north.example", Password: "anna-directory-password", FirstName: "Anna", LastName: "Lind"})
	return newDirectoryFixture(t, Directory{Name: "clinic", Label: "North Clinic ID", Partner: "demo", Issuer: p.Issuer,
		ClientID: oidcprovider.ClientWeb, ClientSecret: oidcprovider.ClientSecret, AllowAnyUser: true})
}

// TestDirectorySwitchAccount: a directory sign-in that would replace the browser's session
// of another account asks first, as a login link does; the session stays until the person
// chooses to switch, and the answer counts once.
func TestDirectorySwitchAccount(t *testing.T) {
	f := annaAtClinic(t)
	b := newBrowser(t, f.h)
	b.signInByLink(f.link(t, goPayload(), "go"))
	member := func() bool {
		res, _ := b.get("/go")
		return res.StatusCode == http.StatusOK
	}
	res, _ := b.get("/app/directory/clinic/signin")
	back := oidcprovider.SignIn(t, res.Header.Get("Location"), "anna@north.example", "anna-directory-password")
	res, page := b.get(back.RequestURI())
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="switch-confirm"`) || !strings.Contains(page, "Anna Lind") {
		t.Fatalf("callback in a browser signed in to another account = %d %q, want 200 and the question naming Anna Lind:\n%s",
			res.StatusCode, res.Header.Get("Location"), page)
	}
	if !member() {
		t.Fatal("the question ended the browser's session before the person chose")
	}
	tok := csrfField.FindStringSubmatch(page)
	if tok == nil {
		t.Fatal("no CSRF token on the question")
	}
	if res, _ := b.post("/app/directory/clinic/callback", url.Values{"csrf": {"forged"}, "switch": {"yes"}}); res.StatusCode != http.StatusForbidden || !member() {
		t.Errorf("switch without the CSRF token = %d, want 403 and the session kept", res.StatusCode)
	}
	// The refused post left the flow cookie: the person's own answer still counts.
	res, _ = b.post("/app/directory/clinic/callback", url.Values{"csrf": {tok[1]}, "switch": {"yes"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app/signin" {
		t.Errorf("switch = %d to %q, want 303 to the directory user's first-sight page", res.StatusCode, res.Header.Get("Location"))
	}
	if member() {
		t.Error("the member's session outlived the switch")
	}
	_, page = b.get("/app/signin")
	if !strings.Contains(page, "Anna Lind") {
		t.Error("after the switch the sign-in page does not greet the directory user")
	}
	res, page = b.post("/app/directory/clinic/callback", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "switch": {"yes"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, string(problem.CodeDirectoryStateInvalid)) {
		t.Errorf("the same answer again = %d, want 400 %s", res.StatusCode, problem.CodeDirectoryStateInvalid)
	}
}

// TestDirectoryStateUsedOnce: a callback is good once by the server's record of its state,
// also for a browser that keeps (or someone who copied) the flow cookie: the callback
// again with the same cookie is directory_state_invalid, and never reaches the provider.
func TestDirectoryStateUsedOnce(t *testing.T) {
	f := annaAtClinic(t)
	b := newBrowser(t, f.h)
	res, _ := b.get("/app/directory/clinic/signin")
	var flow *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == directoryCookie {
			flow = c
		}
	}
	if flow == nil {
		t.Fatal("no flow cookie")
	}
	back := oidcprovider.SignIn(t, res.Header.Get("Location"), "anna@north.example", "anna-directory-password")
	if res, _ := b.get(back.RequestURI()); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback = %d, want 303", res.StatusCode)
	}
	again := httptest.NewRequest(http.MethodGet, back.RequestURI(), nil)
	again.AddCookie(&http.Cookie{Name: directoryCookie, Value: flow.Value})
	res = serve(f.h, again)
	if b := body(t, res); res.StatusCode != http.StatusBadRequest || !strings.Contains(b, string(problem.CodeDirectoryStateInvalid)) {
		t.Errorf("the callback again with its flow cookie = %d, want 400 %s:\n%s", res.StatusCode, problem.CodeDirectoryStateInvalid, b)
	}
}
