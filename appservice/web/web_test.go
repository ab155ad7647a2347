package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

var (
	upstreamSecret = []byte("upstream-secret-0123456789abcdef-xyz")
	appSecret      = []byte("app-secret-0123456789abcdef-0123456789")
	testNow        = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
)

type fixture struct {
	h   *Handler
	st  *store.Store
	now time.Time
}

func newFixture(t testing.TB, publicURL string) *fixture {
	t.Helper()
	return newFixtureOn(t, publicURL, filepath.Join(t.TempDir(), "app.db"), nil)
}

// newFixtureOn is newFixture on the database db (a SQLite file or a postgres:// URL),
// logging to logger (nil: discarded).
func newFixtureOn(t testing.TB, publicURL, db string, logger *slog.Logger) *fixture {
	t.Helper()
	f := &fixture{now: testNow}
	st, err := store.Open(context.Background(), db, store.Options{
		SSNKey: appSecret, Now: func() time.Time { return f.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.EnsureInstructor(context.Background(), "instructor", "coach@service.example", "Demo Instructor", "pass-word-1"); err != nil {
		t.Fatal(err)
	}
	f.st = st
	f.h, err = New(Config{Store: st, UpstreamSecret: upstreamSecret, AppSecret: appSecret, PublicURL: publicURL,
		FrameAncestors: "'self' http://partner.localhost:*", Now: func() time.Time { return f.now }, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mainPayload() *linkspec.Payload {
	return &linkspec.Payload{
		EmployeeID: "emp-1", EmployeeFirstname: "Ida", EmployeeLastname: "Berg", EmployeeEmail: "ida@partner.example",
		OrganizationID: "org-1", OrganizationName: "North Clinic",
		Contact: &linkspec.Contact{ID: "c-1", Firstname: "Åse", Lastname: "Nordmann", Birthdate: "1990-01-31", SSN: "01013550022"},
		CaseID:  "case-9",
	}
}

func goPayload() *linkspec.Payload {
	return &linkspec.Payload{OrganizationID: "org-1", OrganizationName: "North Clinic",
		Contact: &linkspec.Contact{ID: "c-2", Firstname: "Kari", Lastname: "Hansen", Email: "kari@example.com"}}
}

// requestSeq numbers the forwarded requests: the gateway gives each its own id.
var requestSeq atomic.Int64

// forwardRequest builds the request the gateway sends after verifying a token: a POST with
// an empty body and the X-Partner-* headers, signed with the upstream secret.
func forwardRequest(t *testing.T, endpoint string, p *linkspec.Payload, kind string, signAt time.Time) *http.Request {
	t.Helper()
	claims, err := json.Marshal(struct {
		*linkspec.Payload
		Iss   string `json:"iss"`
		Nonce string `json:"nonce"`
	}{p, "https://partner.example", "n-1"})
	if err != nil {
		t.Fatal(err)
	}
	fw := linkspec.Forwarded{Partner: "demo", Endpoint: endpoint, Kind: kind, Issuer: "https://partner.example", KeyID: "k1",
		Claims: base64.RawURLEncoding.EncodeToString(claims), RequestID: "req-" + strconv.FormatInt(requestSeq.Add(1), 10)}
	r := httptest.NewRequest(http.MethodPost, "/partner/demo/"+endpoint, nil)
	set := func(k, v string) { r.Header.Set("X-Partner-"+k, linkspec.EncodeHeaderValue(v)) }
	set(linkspec.HeaderName, fw.Partner)
	set(linkspec.HeaderEndpoint, fw.Endpoint)
	set(linkspec.HeaderKind, fw.Kind)
	set(linkspec.HeaderIssuer, fw.Issuer)
	set(linkspec.HeaderKeyID, fw.KeyID)
	set(linkspec.HeaderRequestID, fw.RequestID)
	p.EachField(func(h, v string) { set(h, v) })
	r.Header.Set("X-Partner-Claims", fw.Claims)
	r.Header.Set("X-Partner-Assertion", linkspec.SignAssertion(upstreamSecret, signAt, fw))
	return r
}

func serve(h http.Handler, r *http.Request) *http.Response {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type problemBody struct {
	Type, Title, Detail, Code string
	Status                    int
	RequestID                 string `json:"request_id"`
	Fields                    []linkspec.FieldError
	Kind                      string
}

func TestMethodAndPath(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	res := serve(f.h, httptest.NewRequest(http.MethodGet, "/partner/demo/url", nil))
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
		t.Errorf("GET /partner/demo/url = %d Allow %q, want 405 Allow POST", res.StatusCode, res.Header.Get("Allow"))
	}
	res = serve(f.h, httptest.NewRequest(http.MethodPost, "/partner/demo/other", nil))
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("POST /partner/demo/other = %d, want 404", res.StatusCode)
	}
}

var loginURL = regexp.MustCompile(`^http://localhost:8080/app/login\?code=[A-Za-z0-9_-]{43}$`)

// browser is a cookie-keeping client that does not follow redirects, so each step's answer
// can be checked.
type browser struct {
	t   *testing.T
	h   http.Handler
	jar http.CookieJar
	fwd string // X-Forwarded-Proto
}

func newBrowser(t *testing.T, h http.Handler) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, h: h, jar: jar}
}

func (b *browser) do(r *http.Request) *http.Response {
	u, _ := url.Parse("http://localhost:8080" + r.URL.RequestURI())
	if r.Host == "example.com" { // httptest.NewRequest's; the gateway passes the browser's on
		r.Host = u.Host
	}
	for _, c := range b.jar.Cookies(u) {
		r.AddCookie(c)
	}
	if b.fwd != "" {
		r.Header.Set("X-Forwarded-Proto", b.fwd)
	}
	res := serve(b.h, r)
	b.jar.SetCookies(u, res.Cookies())
	return res
}

func (b *browser) get(path string) (*http.Response, string) {
	res := b.do(httptest.NewRequest(http.MethodGet, path, nil))
	return res, body(b.t, res)
}

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res := b.do(r)
	return res, body(b.t, res)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (f *fixture) link(t *testing.T, p *linkspec.Payload, kind string) string {
	t.Helper()
	res := serve(f.h, forwardRequest(t, "url", p, kind, f.now))
	b := body(t, res)
	if res.StatusCode != 200 {
		t.Fatalf("link = %d %s", res.StatusCode, b)
	}
	return strings.TrimPrefix(b, "http://localhost:8080")
}

func TestMainFlow(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)

	res := b.signInByLink(f.link(t, mainPayload(), "main"))
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app/signin" {
		t.Fatalf("first-sight login = %d → %q, want 303 → /app/signin", res.StatusCode, res.Header.Get("Location"))
	}
	res, page := b.get("/app/signin")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `value="ida@partner.example"`) || !strings.Contains(page, "Welcome, Ida Berg") {
		t.Errorf("sign-in page does not greet and prefill the employee:\n%s", page)
	}
	token := csrfField.FindStringSubmatch(page)[1]

	t.Run("sign-in without CSRF token refused", func(t *testing.T) {
		res, _ := b.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("POST without csrf = %d, want 403", res.StatusCode)
		}
		other := newBrowser(t, f.h)
		res, _ = other.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {token}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("POST with another browser's csrf token = %d, want 403", res.StatusCode)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		res, page := b.post("/app/signin", url.Values{"login": {"ida@partner.example"}, "password": {"nope"}, "csrf": {token}})
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "Wrong username or password") {
			t.Errorf("wrong password = %d, want 401 with a message", res.StatusCode)
		}
	})
	res, _ = b.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {token}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app/link" {
		t.Fatalf("sign-in = %d → %q, want 303 → /app/link (confirm the link)", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := b.get("/app"); res.Header.Get("Location") != "/app/link" {
		t.Errorf("/app before confirming → %q, want /app/link", res.Header.Get("Location"))
	}
	res, page = b.get("/app/link")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="link-employee">Ida Berg<`) || !strings.Contains(page, `id="link-organization">North Clinic<`) {
		t.Fatalf("link page = %d, want the question naming the partner user and organization:\n%s", res.StatusCode, page)
	}
	if !strings.Contains(page, `id="link-email"`) {
		t.Errorf("link page does not say that the partner's e-mail differs from the account's:\n%s", page)
	}
	t.Run("confirmation without CSRF token refused", func(t *testing.T) {
		if res, _ := b.post("/app/link", url.Values{"action": {"link"}}); res.StatusCode != http.StatusForbidden {
			t.Errorf("POST /app/link without csrf = %d, want 403", res.StatusCode)
		}
	})
	res, _ = b.post("/app/link", url.Values{"action": {"link"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/app" {
		t.Fatalf("confirm link = %d → %q, want 303 → /app", res.StatusCode, res.Header.Get("Location"))
	}
	_, page = b.get("/app")
	for _, want := range []string{`id="account">Demo Instructor<`, `id="organization">North Clinic<`, `id="contact-name">Åse Nordmann<`, `id="contact-birthdate">1990-01-31<`, "case-9"} {
		if !strings.Contains(page, want) {
			t.Errorf("app page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "01013550022") {
		t.Errorf("app page shows the identity number")
	}

	t.Run("second link signs in directly", func(t *testing.T) {
		p := mainPayload()
		p.Contact = &linkspec.Contact{ID: "c-3", Firstname: "Per", Lastname: "Olsen", Diagnosis: "M54.5 <lumbago>"}
		b2 := newBrowser(t, f.h)
		res := b2.signInByLink(f.link(t, p, "main"))
		if res.Header.Get("Location") != "/app" {
			t.Fatalf("second link → %q, want /app", res.Header.Get("Location"))
		}
		_, page := b2.get("/app")
		if !strings.Contains(page, `id="contact-name">Per Olsen<`) || !strings.Contains(page, `id="contact-birthdate">not given<`) {
			t.Errorf("app page after SSO lacks the new contact:\n%s", page)
		}
		// The person page (the API's person) carries the link's diagnosis, as written.
		_, st := b2.get("/app/api/status")
		var v struct{ Person struct{ Diagnosis string } }
		if err := json.Unmarshal([]byte(st), &v); err != nil || v.Person.Diagnosis != "M54.5 <lumbago>" {
			t.Errorf("status person = %s, want the diagnosis M54.5 <lumbago>", st)
		}
	})
	t.Run("sign out", func(t *testing.T) {
		_, page := b.get("/app")
		tok := csrfField.FindStringSubmatch(page)[1]
		res, _ := b.post("/app/signout", url.Values{"csrf": {tok}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign out = %d, want 303", res.StatusCode)
		}
		res, _ = b.get("/app")
		if res.Header.Get("Location") != "/app/signin" {
			t.Errorf("/app after sign-out → %q, want /app/signin", res.Header.Get("Location"))
		}
	})
}

// TestLoginCSRFNeedsConfirmation: an attacker opens a link of its own partner user in the
// victim's browser (a pending session), and the victim signs in. Without the confirmation
// step the attacker's partner user would be linked to the victim's account and sign into it
// by every later link.
func TestLoginCSRFNeedsConfirmation(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	attacker := mainPayload()
	attacker.EmployeeID, attacker.EmployeeFirstname, attacker.EmployeeLastname = "emp-evil", "Mallory", "Doe"
	victim := newBrowser(t, f.h)
	victim.signInByLink(f.link(t, attacker, "main")) // planted: a pending session in the victim's browser
	_, page := victim.get("/app/signin")
	res, _ := victim.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	if res.Header.Get("Location") != "/app/link" {
		t.Fatalf("sign-in → %q, want the confirmation /app/link", res.Header.Get("Location"))
	}
	// The attacker's next link still finds no account: nothing was linked by the sign-in.
	if res := serve(f.h, forwardRequest(t, "url", attacker, "main", f.now)); res.StatusCode != http.StatusOK {
		t.Fatalf("attacker link = %d", res.StatusCode)
	} else if res := newBrowser(t, f.h).signInByLink(strings.TrimPrefix(body(t, res), "http://localhost:8080")); res.Header.Get("Location") != "/app/signin" {
		t.Fatalf("attacker's link before the confirmation → %q, want /app/signin (not linked)", res.Header.Get("Location"))
	}
	_, page = victim.get("/app/link")
	if !strings.Contains(page, `id="link-employee">Mallory Doe<`) {
		t.Fatalf("link page does not name the partner user:\n%s", page)
	}
	res, _ = victim.post("/app/link", url.Values{"action": {"decline"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	if res.Header.Get("Location") != "/app" {
		t.Fatalf("decline → %q, want /app", res.Header.Get("Location"))
	}
	res, page = victim.get("/app")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="no-contact"`) || strings.Contains(page, "North Clinic") {
		t.Errorf("app page after declining = %d, want signed in without the link's organization and contact:\n%s", res.StatusCode, page)
	}
	res = serve(f.h, forwardRequest(t, "url", attacker, "main", f.now))
	if res := newBrowser(t, f.h).signInByLink(strings.TrimPrefix(body(t, res), "http://localhost:8080")); res.Header.Get("Location") != "/app/signin" {
		t.Errorf("attacker's link after declining → %q, want /app/signin (not linked)", res.Header.Get("Location"))
	}
}

func TestGoFlowAndCodeReuse(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	path := f.link(t, goPayload(), "go")
	b := newBrowser(t, f.h)
	res := b.signInByLink(path)
	if res.Header.Get("Location") != "/go" {
		t.Fatalf("Go login → %q, want /go", res.Header.Get("Location"))
	}
	_, page := b.get("/go")
	if !strings.Contains(page, `id="member">Kari Hansen<`) {
		t.Errorf("Go page lacks the member's name:\n%s", page)
	}

	t.Run("code used twice", func(t *testing.T) {
		res, page := newBrowser(t, f.h).loginPage(path)
		if res.StatusCode != http.StatusGone || !strings.Contains(page, string(problem.CodeLoginCodeUsed)) {
			t.Errorf("second use = %d, want 410 %s", res.StatusCode, string(problem.CodeLoginCodeUsed))
		}
	})
	t.Run("code expired", func(t *testing.T) {
		path := f.link(t, goPayload(), "go")
		f.now = f.now.Add(61 * time.Second)
		res, page := newBrowser(t, f.h).loginPage(path)
		if res.StatusCode != http.StatusGone || !strings.Contains(page, string(problem.CodeLoginCodeExpired)) {
			t.Errorf("expired = %d, want 410 %s", res.StatusCode, string(problem.CodeLoginCodeExpired))
		}
	})
	t.Run("code unknown", func(t *testing.T) {
		res, _ := newBrowser(t, f.h).loginPage("/app/login?code=abc")
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("unknown code = %d, want 400", res.StatusCode)
		}
	})
}

// TestCookieAttributes: over HTTPS the cookies (the device cookie too) work in a partner's
// cross-site iframe:
// SameSite=None needs Secure, and browsers that block third-party cookies keep only
// Partitioned (CHIPS) ones there. Over plain HTTP they are Lax and unpartitioned: a
// cross-site iframe cannot work without HTTPS.
func TestCookieAttributes(t *testing.T) {
	for _, tt := range []struct {
		name, public, fwd string
		secure            bool
		sameSite          http.SameSite
	}{
		{"plain HTTP localhost", "http://localhost:8080", "", false, http.SameSiteLaxMode},
		{"HTTPS through the gateway", "http://localhost:8080", "https", true, http.SameSiteNoneMode},
		{"HTTPS public URL", "https://sso.example.com", "", true, http.SameSiteNoneMode},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.public)
			res := serve(f.h, forwardRequest(t, "url", goPayload(), "go", f.now))
			u, _ := url.Parse(body(t, res))
			b := newBrowser(t, f.h)
			b.fwd = tt.fwd
			res = b.signInByLink(u.RequestURI())
			prefix := ""
			if tt.secure {
				prefix = "__Host-" // only a secure page of this host can set it: no planting
			}
			var c *http.Cookie
			for _, x := range res.Cookies() {
				if x.Name == prefix+sessionCookie {
					c = x
				}
			}
			if c == nil {
				t.Fatalf("no %s cookie set", prefix+sessionCookie)
			}
			if tt.secure {
				// A plain-named cookie (what a sibling subdomain could plant) is not read.
				r := httptest.NewRequest(http.MethodGet, "/go", nil)
				r.Header.Set("X-Forwarded-Proto", tt.fwd)
				r.AddCookie(&http.Cookie{Name: sessionCookie, Value: c.Value})
				if res := serve(f.h, r); res.StatusCode != http.StatusUnauthorized {
					t.Errorf("Go page with the session in an unprefixed cookie over HTTPS = %d, want 401", res.StatusCode)
				}
			}
			// The page sets the CSRF cookie; signing out deletes the session cookie, which
			// must carry the same attributes to reach the partitioned one.
			page := b.do(httptest.NewRequest(http.MethodGet, "/go", nil))
			tok := csrfField.FindStringSubmatch(body(t, page))
			if tok == nil {
				t.Fatal("no CSRF token on the Go page")
			}
			out := httptest.NewRequest(http.MethodPost, "/app/signout", strings.NewReader(url.Values{"csrf": {tok[1]}}.Encode()))
			out.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			signout := b.do(out)
			cookies := append(append(res.Cookies(), page.Cookies()...), signout.Cookies()...)
			if len(cookies) != 4 {
				t.Fatalf("cookies set: %v, want session, device, CSRF and session deletion", cookies)
			}
			for _, c := range cookies {
				if !strings.HasPrefix(c.Name, prefix+"pg_") {
					t.Errorf("cookie %s, want the name to start with %q", c.Name, prefix+"pg_")
				}
				if !c.HttpOnly || c.Secure != tt.secure || c.SameSite != tt.sameSite || c.Partitioned != tt.secure || c.Path != "/" {
					t.Errorf("cookie %s: HttpOnly %v Secure %v SameSite %v Partitioned %v Path %q, want true %v %v %v /",
						c.Name, c.HttpOnly, c.Secure, c.SameSite, c.Partitioned, c.Path, tt.secure, tt.sameSite, tt.secure)
				}
				// The device cookie outlives the browser's session (400 days, renewed at each
				// sign-in); the others end with it.
				if maxAge := map[bool]int{true: 400 * 24 * 3600, false: 0}[c.Name == prefix+deviceCookie]; c.Value != "" && c.MaxAge != maxAge {
					t.Errorf("cookie %s: Max-Age %d, want %d", c.Name, c.MaxAge, maxAge)
				}
			}
			if hsts := res.Header.Get("Strict-Transport-Security"); (hsts != "") != tt.secure {
				t.Errorf("Strict-Transport-Security = %q with HTTPS %v", hsts, tt.secure)
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	res, _ := newBrowser(t, f.h).get("/app/signin")
	for k, want := range map[string]string{
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "same-origin",
		"Cache-Control":          "no-store",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") || !strings.Contains(csp, "form-action 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
}

// loginForm matches the login page's form, which a browser running its script submits.
var loginForm = regexp.MustCompile(`<form method="post" action="/app/login" id="login-form">\s*<input type="hidden" name="code" value="([^"]+)">\s*<input type="hidden" name="csrf" value="([^"]+)">`)

// login opens a login URL path as a browser running the login page's script does, and
// returns the answer that ends the exchange: the redirect into the application, a refusal,
// or the page asking whether to switch accounts.
func (b *browser) login(path string) *http.Response {
	b.t.Helper()
	res, page := b.get(path)
	if m := loginForm.FindStringSubmatch(page); res.StatusCode == http.StatusOK && m != nil {
		res, page = b.post("/app/login", url.Values{"code": {m[1]}, "csrf": {m[2]}})
	}
	res.Body = io.NopCloser(strings.NewReader(page)) // read once above; readable again
	return res
}

// askForm matches the question a browser new to the link's account is asked (login-ask).
var askForm = regexp.MustCompile(`<form method="post" action="/app/login" class="choice">\s*<input type="hidden" name="code" value="([^"]+)">\s*<input type="hidden" name="csrf" value="([^"]+)">\s*<button type="submit" name="action" value="continue" id="ask-continue">`)

// signInByLink opens a login URL path as the person it was sent to does: as login, and
// when the browser is new to the link's account and asked whether to continue as it,
// Continue.
func (b *browser) signInByLink(path string) *http.Response {
	b.t.Helper()
	res := b.login(path)
	page := body(b.t, res)
	if m := askForm.FindStringSubmatch(page); res.StatusCode == http.StatusOK && m != nil {
		res, page = b.post("/app/login", url.Values{"code": {m[1]}, "csrf": {m[2]}, "action": {"continue"}})
	}
	res.Body = io.NopCloser(strings.NewReader(page))
	return res
}

// loginPage opens a login URL path without submitting the login page (as a link preview
// does) and returns the answer.
func (b *browser) loginPage(path string) (*http.Response, string) {
	b.t.Helper()
	return b.get(path)
}
