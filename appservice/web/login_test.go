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
// person's browser then signs in with it, once. In a browser that knows the account, the
// login page is the one whose same-origin script posts the code at once.
func TestLoginCodeSurvivesPreview(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	path := f.link(t, goPayload(), "go")
	if res := serve(f.h, httptest.NewRequest(http.MethodHead, path, nil)); res.StatusCode != http.StatusOK {
		t.Errorf("HEAD %s = %d, want 200", path, res.StatusCode)
	}
	if res, _ := newBrowser(t, f.h).get(path); res.StatusCode != http.StatusOK {
		t.Fatalf("preview GET = %d, want 200 (a page, the code unused)", res.StatusCode)
	}
	b := newBrowser(t, f.h)
	if res := b.signInByLink(path); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
		t.Fatalf("the person's login after the previews = %d → %q, want 303 → /go", res.StatusCode, res.Header.Get("Location"))
	}
	if res := newBrowser(t, f.h).signInByLink(path); res.StatusCode != http.StatusGone {
		t.Errorf("second login = %d, want 410 (used)", res.StatusCode)
	}
	res, page := b.get(f.link(t, goPayload(), "go"))
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") {
		t.Errorf("login page CSP = %q, want script-src 'self' for its script file", csp)
	}
	if strings.Count(page, "<script") != 1 || !strings.Contains(page, `<script src="/app/static/login.js"></script>`) || loginForm.FindStringSubmatch(page) == nil {
		t.Errorf("login page of a browser that knows the account: want the form and only the same-origin script:\n%s", page)
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
	if res := b.signInByLink(path); res.Header.Get("Location") != "/go" {
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
	if res := victim.signInByLink(f.link(t, goPayload(), "go")); res.Header.Get("Location") != "/go" {
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

// TestLoginAsksBrowserNewToAccount: issue 34's lifted link. A partner user posts a token of
// their own to /url from a server and sends the login URL to someone; a browser that has
// never signed in to that account must not be signed in to it without a word. It is asked,
// by the account's name and organization; the code stays unspent until Continue, which is
// a POST under the CSRF rules; Cancel spends it and leaves the browser signed out; a
// browser that has signed in to the account (by Continue, a password, or a session of it)
// goes straight in.
func TestLoginAsksBrowserNewToAccount(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	stranger := newBrowser(t, f.h)

	path := f.link(t, goPayload(), "go")
	res, page := stranger.get(path)
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `<h1 id="ask-question">Continue as <span id="ask-account">Kari Hansen</span>, <span id="ask-organization">North Clinic</span>?</h1>`) {
		t.Fatalf("a stranger's browser opens the link = %d, want 200 asking whether to continue as Kari Hansen, North Clinic:\n%s", res.StatusCode, page)
	}
	if strings.Contains(page, "<script") || strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src") {
		t.Errorf("the question runs a script; it must wait for the person")
	}
	m := askForm.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `id="ask-cancel"`) {
		t.Fatalf("no Continue and Cancel form:\n%s", page)
	}
	code, csrf := m[1], m[2]
	if res, _ := stranger.get("/go"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("Go page while asked = %d, want 401 (not signed in)", res.StatusCode)
	}
	if _, err := f.st.PeekCode(t.Context(), code); err != nil {
		t.Errorf("code after the question = %v, want unspent", err)
	}

	t.Run("a post without the answer asks again", func(t *testing.T) {
		// What login.js posts, or a page that got hold of the form's token.
		res, page := stranger.post("/app/login", url.Values{"code": {code}, "csrf": {csrf}})
		if res.StatusCode != http.StatusOK || askForm.FindStringSubmatch(page) == nil {
			t.Errorf("post without action = %d, want 200 with the question:\n%s", res.StatusCode, page)
		}
	})
	t.Run("continue needs the CSRF token", func(t *testing.T) {
		res, _ := stranger.post("/app/login", url.Values{"code": {code}, "action": {"continue"}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("Continue without the token = %d, want 403", res.StatusCode)
		}
	})
	t.Run("cancel leaves the browser signed out and spends the link", func(t *testing.T) {
		res, page := stranger.post("/app/login", url.Values{"code": {code}, "csrf": {csrf}, "action": {"cancel"}})
		if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="cancelled"`) || cookieSet(res, sessionCookie) || cookieSet(res, deviceCookie) {
			t.Fatalf("Cancel = %d, want 200 saying nothing was signed in, no session or device cookie:\n%s", res.StatusCode, page)
		}
		if res, _ := stranger.get("/go"); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("Go page after Cancel = %d, want 401", res.StatusCode)
		}
		if res, _ := stranger.post("/app/login", url.Values{"code": {code}, "csrf": {csrf}, "action": {"continue"}}); res.StatusCode != http.StatusGone {
			t.Errorf("Continue after Cancel = %d, want 410 (the link is spent)", res.StatusCode)
		}
		if res := newBrowser(t, f.h).signInByLink(path); res.StatusCode != http.StatusGone {
			t.Errorf("the cancelled link in another browser = %d, want 410", res.StatusCode)
		}
	})

	owner := newBrowser(t, f.h)
	t.Run("continue signs in, and the browser knows the account from then on", func(t *testing.T) {
		res, page := owner.get(f.link(t, goPayload(), "go"))
		m := askForm.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("the owner's first link in this browser = %d, want the question:\n%s", res.StatusCode, page)
		}
		res, _ = owner.post("/app/login", url.Values{"code": {m[1]}, "csrf": {m[2]}, "action": {"continue"}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" || !cookieSet(res, deviceCookie) {
			t.Fatalf("Continue = %d → %q, want 303 → /go with the device cookie", res.StatusCode, res.Header.Get("Location"))
		}
		// Signed out, the browser still knows the account: the next link goes straight in.
		_, goPage := owner.get("/go")
		owner.post("/app/signout", url.Values{"csrf": {csrfField.FindStringSubmatch(goPage)[1]}})
		if res := owner.login(f.link(t, goPayload(), "go")); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
			t.Errorf("next link in the same browser = %d → %q, want 303 → /go without a question", res.StatusCode, res.Header.Get("Location"))
		}
	})
	t.Run("the device cookie is per browser and per account", func(t *testing.T) {
		if _, page := newBrowser(t, f.h).get(f.link(t, goPayload(), "go")); askForm.FindStringSubmatch(page) == nil {
			t.Errorf("another browser is not asked:\n%s", page)
		}
		other := goPayload()
		other.Contact = &linkspec.Contact{ID: "c-9", Firstname: "Per", Lastname: "Olsen", Email: "per@example.com"}
		res := owner.login(f.link(t, other, "go"))
		if page := body(t, res); !strings.Contains(page, `id="switch-confirm"`) || !strings.Contains(page, "<strong>Per Olsen</strong>") {
			t.Errorf("another account's link in the owner's browser = %d, want the switch question naming Per Olsen:\n%s", res.StatusCode, page)
		}
	})
	t.Run("a session of the account is as good as the cookie", func(t *testing.T) {
		// The partner's iframe and the top-level page keep separate cookies (CHIPS), and
		// a session started before this change has no device cookie.
		b := newBrowser(t, f.h)
		b.signInByLink(f.link(t, goPayload(), "go"))
		u, _ := url.Parse("http://localhost:8080/")
		b.jar.SetCookies(u, []*http.Cookie{{Name: deviceCookie, Value: "", MaxAge: -1}})
		if res := b.login(f.link(t, goPayload(), "go")); res.Header.Get("Location") != "/go" || !cookieSet(res, deviceCookie) {
			t.Errorf("link of the session's own account, without a device cookie = %d → %q, want 303 → /go, and the cookie set", res.StatusCode, res.Header.Get("Location"))
		}
	})
	t.Run("first-sight partner user is not asked", func(t *testing.T) {
		// The sign-in page that follows asks for a password; the link question follows that.
		if res := newBrowser(t, f.h).login(f.link(t, mainPayload(), "main")); res.Header.Get("Location") != "/app/signin" {
			t.Errorf("first-sight link = %d → %q, want 303 → /app/signin", res.StatusCode, res.Header.Get("Location"))
		}
	})
}

// TestLinksOfAPasswordAccount: an instructor's links ask in a browser where that account
// has never signed in, and go straight in where it signed in with its password, or
// linked its partner user (its first link's sign-in).
func TestLinksOfAPasswordAccount(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	first := newBrowser(t, f.h)
	first.login(f.link(t, mainPayload(), "main"))
	_, page := first.get("/app/signin")
	first.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	_, page = first.get("/app/link")
	first.post("/app/link", url.Values{"action": {"link"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	if res := first.login(f.link(t, mainPayload(), "main")); res.Header.Get("Location") != "/app" {
		t.Errorf("the next link where the partner user was linked → %q, want /app without a question", res.Header.Get("Location"))
	}

	_, page = newBrowser(t, f.h).get(f.link(t, mainPayload(), "main"))
	if !strings.Contains(page, `Continue as <span id="ask-account">Demo Instructor</span>, <span id="ask-organization">North Clinic</span>?`) {
		t.Errorf("the instructor's link in a new browser, want the question naming the account (not the partner user) and organization:\n%s", page)
	}

	known := newBrowser(t, f.h)
	_, page = known.get("/app/signin")
	if res, _ := known.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}}); !cookieSet(res, deviceCookie) {
		t.Fatalf("password sign-in sets no device cookie")
	}
	_, page = known.get("/app")
	known.post("/app/signout", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}})
	if res := known.login(f.link(t, mainPayload(), "main")); res.Header.Get("Location") != "/app" {
		t.Errorf("a link where the account signed in with its password → %q, want /app without a question", res.Header.Get("Location"))
	}
}

// cookieSet reports whether res sets the cookie name (unprefixed: plain HTTP) to a value.
func cookieSet(res *http.Response, name string) bool {
	for _, c := range res.Cookies() {
		if c.Name == name && c.Value != "" {
			return true
		}
	}
	return false
}
