package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/linkspec"
)

// TestLoginCodeSurvivesPreview: a HEAD request and a fetch that does not run the page's
// script (mail scanners, chat unfurls, prefetchers) do not spend the one-time code; the
// person's browser then signs in with it, once.
func TestLoginCodeSurvivesPreview(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	path := f.link(t, goPayload(), "go")
	if res := serve(f.h, httptest.NewRequest(http.MethodHead, path, nil)); res.StatusCode != http.StatusOK {
		t.Errorf("HEAD %s = %d, want 200", path, res.StatusCode)
	}
	res, page := newBrowser(t, f.h).get(path)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("preview GET = %d, want 200 (a page, the code unused)", res.StatusCode)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") {
		t.Errorf("login page CSP = %q, want script-src 'self' for its script file", csp)
	}
	if strings.Count(page, "<script") != 1 || !strings.Contains(page, `<script src="/app/static/login.js"></script>`) {
		t.Errorf("login page scripts, want only the same-origin file:\n%s", page)
	}
	b := newBrowser(t, f.h)
	if res := b.login(path); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
		t.Fatalf("the person's login after the previews = %d → %q, want 303 → /go", res.StatusCode, res.Header.Get("Location"))
	}
	if res := newBrowser(t, f.h).login(path); res.StatusCode != http.StatusGone {
		t.Errorf("second login = %d, want 410 (used)", res.StatusCode)
	}
	res, js := b.get("/app/static/login.js")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(js, `getElementById("login-form").submit()`) {
		t.Errorf("login.js = %d %q, want 200 JavaScript that submits the form", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// TestLoginExchangeNeedsCSRF: the code is spent only by the login page's own post; a post
// made elsewhere is refused and leaves the code usable.
func TestLoginExchangeNeedsCSRF(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	path := f.link(t, goPayload(), "go")
	code := strings.TrimPrefix(path, "/app/login?code=")
	b := newBrowser(t, f.h)
	if res, _ := b.post("/app/login", url.Values{"code": {code}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("POST /app/login without CSRF token = %d, want 403", res.StatusCode)
	}
	if res := b.login(path); res.Header.Get("Location") != "/go" {
		t.Errorf("login after the refused post → %q, want /go (code not spent)", res.Header.Get("Location"))
	}
}

var switchForm = regexp.MustCompile(`<input type="hidden" name="code" value="([^"]+)">\s*<input type="hidden" name="csrf" value="([^"]+)">\s*<input type="hidden" name="switch" value="yes">`)

// TestLoginAsksBeforeSwitchingAccount: a cross-site form post to /payload carrying a token
// for a partner user the attacker controls leads the victim's browser to a login URL. It
// must not silently replace the session the browser has: the person is asked.
func TestLoginAsksBeforeSwitchingAccount(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	victim := newBrowser(t, f.h)
	if res := victim.login(f.link(t, goPayload(), "go")); res.Header.Get("Location") != "/go" {
		t.Fatalf("victim's login → %q, want /go", res.Header.Get("Location"))
	}
	payloadLogin := func(t *testing.T, p *linkspec.Payload, kind string) string {
		res := serve(f.h, forwardRequest(t, "payload", p, kind, f.now))
		m := regexp.MustCompile(`url=http://localhost:8080(/app/login\?code=[A-Za-z0-9_-]+)"`).FindStringSubmatch(body(t, res))
		if m == nil {
			t.Fatal("no login URL on the /payload page")
		}
		return m[1]
	}
	mallory := goPayload()
	mallory.Contact = &linkspec.Contact{ID: "c-evil", Firstname: "Mallory", Lastname: "\u202eEvil", Email: "mallory@example.com"}

	res := victim.login(payloadLogin(t, mallory, "go"))
	page := body(t, res)
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "You are signed in as <strong>Kari Hansen</strong>") ||
		!strings.Contains(page, "<strong>Mallory Evil</strong>") {
		t.Fatalf("attacker's login in the victim's browser = %d, want 200 asking to switch from Kari Hansen to Mallory Evil (bidi control dropped):\n%s", res.StatusCode, page)
	}
	if _, goPage := victim.get("/go"); !strings.Contains(goPage, `id="member">Kari Hansen<`) {
		t.Errorf("victim's Go page after the attacker's link is not Kari Hansen's:\n%s", goPage)
	}
	m := switchForm.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no switch form:\n%s", page)
	}
	t.Run("post without the choice asks again", func(t *testing.T) {
		res, page := victim.post("/app/login", url.Values{"code": {m[1]}, "csrf": {m[2]}})
		if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="switch-confirm"`) {
			t.Errorf("post without switch=yes = %d, want 200 with the question", res.StatusCode)
		}
	})
	t.Run("the person chooses to switch", func(t *testing.T) {
		res, _ := victim.post("/app/login", url.Values{"code": {m[1]}, "csrf": {m[2]}, "switch": {"yes"}})
		if res.Header.Get("Location") != "/go" {
			t.Fatalf("switch → %q, want /go", res.Header.Get("Location"))
		}
		if _, goPage := victim.get("/go"); !strings.Contains(goPage, `id="member">Mallory Evil<`) {
			t.Errorf("Go page after switching is not Mallory's:\n%s", goPage)
		}
	})
	t.Run("same account goes straight in", func(t *testing.T) {
		if res := victim.login(payloadLogin(t, mallory, "go")); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
			t.Errorf("a link for the signed-in account = %d → %q, want 303 → /go without asking", res.StatusCode, res.Header.Get("Location"))
		}
	})
	t.Run("first-sight partner user names partner and id", func(t *testing.T) {
		p := mainPayload()
		p.EmployeeID, p.EmployeeUsername = "emp-evil", "mallory.u"
		res := victim.login(payloadLogin(t, p, "main"))
		page := body(t, res)
		for _, want := range []string{"partner user <strong>Ida Berg</strong>", "partner <code>demo</code>", "username <code>mallory.u</code>", "id <code>emp-evil</code>"} {
			if !strings.Contains(page, want) {
				t.Errorf("question lacks %q:\n%s", want, page)
			}
		}
	})
}
