package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestLinkPageShowsWhoAndRefusesFraming: the first-sight question names the partner and
// the partner user's username and id besides the partner-supplied names, drops bidi
// controls from those names, and cannot be shown in a frame (clickjacking the "Link to my
// account" button).
func TestLinkPageShowsWhoAndRefusesFraming(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	p := mainPayload()
	p.EmployeeUsername = "ida.b"
	p.EmployeeFirstname, p.EmployeeLastname = "Ida\u202e", "\u2066Berg\u2069\u200f"
	p.OrganizationName = "North\u061c Clinic"
	b := newBrowser(t, f.h)
	b.signInByLink(f.link(t, p, "main"))
	_, page := b.get("/app/signin")
	res, _ := b.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	if res.Header.Get("Location") != "/app/link" {
		t.Fatalf("sign-in → %q, want /app/link", res.Header.Get("Location"))
	}
	res, page = b.get("/app/link")
	for _, want := range []string{
		`id="link-employee">Ida Berg<`, `id="link-organization">North Clinic<`,
		`id="link-partner">demo<`, `id="link-employee-username">ida.b<`, `id="link-employee-id">emp-1<`,
		`id="link-account-username">instructor<`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("link page lacks %q:\n%s", want, page)
		}
	}
	if strings.ContainsAny(page, "\u202e\u2066\u2069\u200f\u061c") {
		t.Errorf("link page holds bidi formatting characters")
	}
	if got := res.Header.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("link page X-Frame-Options = %q, want DENY", got)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors 'none'") {
		t.Errorf("link page CSP = %q, want frame-ancestors 'none'", csp)
	}
	res, _ = b.get("/app/signin")
	if csp := res.Header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors 'self' http://partner.localhost:*") || res.Header.Get("X-Frame-Options") != "" {
		t.Errorf("other page CSP = %q, X-Frame-Options %q, want the configured frame-ancestors (partners may frame the app)", csp, res.Header.Get("X-Frame-Options"))
	}
	if res.StatusCode != http.StatusSeeOther && res.StatusCode != http.StatusOK {
		t.Errorf("sign-in page = %d", res.StatusCode)
	}
}
