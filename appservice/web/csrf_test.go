package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// signedIn returns a browser signed in to the Go page by a link, and the page's CSRF token.
func signedIn(t *testing.T, f *fixture) (*browser, string) {
	t.Helper()
	b := newBrowser(t, f.h)
	if res := b.signInByLink(f.link(t, goPayload(), "go")); res.Header.Get("Location") != "/go" {
		t.Fatalf("Go login → %q, want /go", res.Header.Get("Location"))
	}
	_, page := b.get("/go")
	return b, csrfField.FindStringSubmatch(page)[1]
}

// postWith posts form to path with exactly the given cookies, as a browser holding them would.
func postWith(f *fixture, path string, form url.Values, cookies ...*http.Cookie) *http.Response {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		r.AddCookie(c)
	}
	return serve(f.h, r)
}

func cookieOf(t *testing.T, b *browser, name string) *http.Cookie {
	t.Helper()
	u, _ := url.Parse("http://localhost:8080/")
	for _, c := range b.jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("browser has no %s cookie", name)
	return nil
}

// TestCSRFPlantedCookieRefused: someone who can plant a cookie (a sibling subdomain, plain
// HTTP) picks a CSRF cookie value, has the server sign it for them, plants it in the
// victim's browser and forges the victim's sign-out with the matching field.
func TestCSRFPlantedCookieRefused(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	victim, _ := signedIn(t, f)
	planted := &http.Cookie{Name: csrfCookie, Value: strings.Repeat("A", 43)}

	r := httptest.NewRequest(http.MethodGet, "/app/signin", nil)
	r.AddCookie(planted)
	res := serve(f.h, r)
	m := csrfField.FindStringSubmatch(body(t, res))
	if m == nil {
		t.Fatal("no CSRF field on the sign-in page")
	}
	res = postWith(f, "/app/signout", url.Values{"csrf": {m[1]}}, cookieOf(t, victim, sessionCookie), planted)
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out with a planted cookie and its field = %d, want 403", res.StatusCode)
	}
	if res, _ := victim.get("/go"); res.StatusCode != http.StatusOK {
		t.Errorf("victim's Go page after the forged sign-out = %d, want 200 (still signed in)", res.StatusCode)
	}
}

// TestCSRFTokenBoundToSession: a CSRF pair the server issued to one browser (the attacker's
// own, with or without a session) does not work with another browser's session.
func TestCSRFTokenBoundToSession(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	victim, _ := signedIn(t, f)
	for _, tt := range []struct {
		name     string
		attacker func() (*browser, string)
	}{
		{"anonymous pair", func() (*browser, string) {
			b := newBrowser(t, f.h)
			_, page := b.get("/app/signin")
			return b, csrfField.FindStringSubmatch(page)[1]
		}},
		{"pair of another session", func() (*browser, string) { return signedIn(t, f) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			attacker, tok := tt.attacker()
			res := postWith(f, "/app/signout", url.Values{"csrf": {tok}}, cookieOf(t, victim, sessionCookie), cookieOf(t, attacker, csrfCookie))
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("victim's session with the attacker's CSRF pair = %d, want 403", res.StatusCode)
			}
		})
	}
	if res, _ := victim.get("/go"); res.StatusCode != http.StatusOK {
		t.Errorf("victim's Go page = %d, want 200 (still signed in)", res.StatusCode)
	}
}

// TestCSRFForeignOriginRefused: a post whose Origin is another site (another scheme, host
// or port) is refused even with a valid token; the site's own Origin, or none, is accepted.
func TestCSRFForeignOriginRefused(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, tt := range []struct {
		origin string
		want   int
	}{
		{"https://attacker.example", http.StatusForbidden},
		{"http://localhost:8081", http.StatusForbidden},
		{"null", http.StatusForbidden},
		// The scheme is part of the origin: an https page of the same host and port is
		// another site than this plain-HTTP one (issue 25).
		{"https://localhost:8080", http.StatusForbidden},
		{"http://localhost", http.StatusForbidden},
		{"http://localhost:8080/", http.StatusForbidden},
		{"http://user@localhost:8080", http.StatusForbidden},
		{"http://localhost:8080", http.StatusSeeOther},
		{"", http.StatusSeeOther},
	} {
		t.Run(tt.origin, func(t *testing.T) {
			b, tok := signedIn(t, f)
			r := httptest.NewRequest(http.MethodPost, "/app/signout", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if res := b.do(r); res.StatusCode != tt.want {
				t.Errorf("sign-out with Origin %q = %d, want %d", tt.origin, res.StatusCode, tt.want)
			}
		})
	}
}
