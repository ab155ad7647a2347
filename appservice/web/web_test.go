package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	f := &fixture{now: testNow}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "app.db"), store.Options{
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
		FrameAncestors: "'self' http://partner.localhost:*", Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mainPayload() *linkspec.Payload {
	return &linkspec.Payload{
		EmployeeID: "emp-1", EmployeeFirstname: "Ida", EmployeeLastname: "Berg", EmployeeEmail: "ida@partner.example",
		OrganizationID: "org-1", OrganizationName: "North Clinic",
		Contact: &linkspec.Contact{ID: "c-1", Firstname: "Åse", Lastname: "Nordmann", Birthdate: "1990-01-31", SSN: "01019012345"},
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
}

func TestAssertionRefused(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, tt := range []struct {
		name   string
		mutate func(r *http.Request)
	}{
		{"no assertion (hand-made headers)", func(r *http.Request) { r.Header.Del("X-Partner-Assertion") }},
		{"assertion signed with another secret", func(r *http.Request) {
			r.Header.Set("X-Partner-Assertion", linkspec.SignAssertion([]byte("another-secret-0123456789abcdef-xyz"), testNow, linkspec.Forwarded{Partner: "demo"}))
		}},
		{"claims changed after signing", func(r *http.Request) {
			p := mainPayload()
			p.Contact.Firstname = "Mallory"
			b, _ := json.Marshal(p)
			r.Header.Set("X-Partner-Claims", base64.RawURLEncoding.EncodeToString(b))
		}},
		{"kind changed after signing", func(r *http.Request) { r.Header.Set("X-Partner-Kind", "go") }},
		{"path names another partner", func(r *http.Request) { r.URL.Path = "/partner/other/url" }},
		{"garbage assertion", func(r *http.Request) { r.Header.Set("X-Partner-Assertion", "v2.x.y") }},
		{"request id changed after signing", func(r *http.Request) { r.Header.Set("X-Partner-Request-Id", "req-other") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := forwardRequest(t, "url", mainPayload(), "main", testNow)
			tt.mutate(r)
			res := serve(f.h, r)
			var p problemBody
			json.Unmarshal([]byte(body(t, res)), &p)
			if res.StatusCode != http.StatusForbidden || p.Code != string(problem.CodeAssertionInvalid) {
				t.Errorf("status, code = %d, %q, want 403, %q", res.StatusCode, p.Code, string(problem.CodeAssertionInvalid))
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q, want application/problem+json", ct)
			}
		})
	}
	t.Run("expired assertion", func(t *testing.T) {
		res := serve(f.h, forwardRequest(t, "url", mainPayload(), "main", testNow.Add(-2*time.Minute)))
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("status = %d, want 403", res.StatusCode)
		}
	})
	t.Run("payload endpoint answers a page", func(t *testing.T) {
		r := forwardRequest(t, "payload", mainPayload(), "main", testNow)
		r.Header.Del("X-Partner-Assertion")
		res := serve(f.h, r)
		b := body(t, res)
		if res.StatusCode != http.StatusForbidden || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(b, string(problem.CodeAssertionInvalid)) {
			t.Errorf("status %d, type %q, body has code %v; want 403 HTML with the code", res.StatusCode, res.Header.Get("Content-Type"), strings.Contains(b, string(problem.CodeAssertionInvalid)))
		}
	})
	res := serve(f.h, forwardRequest(t, "url", mainPayload(), "main", testNow))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("control: a properly forwarded link = %d, want 200", res.StatusCode)
	}
}

// TestAssertionReplayRefused: a forwarded request captured on the way (headers and all)
// and sent again within the assertion's minute mints no second login code.
func TestAssertionReplayRefused(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, endpoint := range []string{"url", "payload"} {
		t.Run(endpoint, func(t *testing.T) {
			first := forwardRequest(t, endpoint, mainPayload(), "main", testNow)
			replay := first.Clone(context.Background())
			if res := serve(f.h, first); res.StatusCode != http.StatusOK {
				t.Fatalf("first request = %d, want 200", res.StatusCode)
			}
			f.now = f.now.Add(30 * time.Second)
			res := serve(f.h, replay)
			b := body(t, res)
			if res.StatusCode != http.StatusConflict || !strings.Contains(b, string(problem.CodeAssertionReplayed)) || strings.Contains(b, "/app/login") {
				t.Errorf("replay = %d %s, want 409 %s without a login URL", res.StatusCode, b, string(problem.CodeAssertionReplayed))
			}
		})
	}
}

func TestPayloadRevalidated(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, tt := range []struct {
		name    string
		payload *linkspec.Payload
		kind    string
		field   string
	}{
		{"kind disagrees with payload", goPayload(), "main", "employeeId"},
		{"missing contact firstname", func() *linkspec.Payload { p := mainPayload(); p.Contact.Firstname = ""; return p }(), "main", "contact.firstname"},
		{"bad birthdate", func() *linkspec.Payload { p := mainPayload(); p.Contact.Birthdate = "1990-02-30"; return p }(), "main", "contact.birthdate"},
		{"unknown kind", mainPayload(), "desktop", "kind"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := forwardRequest(t, "url", tt.payload, tt.kind, testNow)
			id := r.Header.Get("X-Partner-Request-Id")
			res := serve(f.h, r)
			var p problemBody
			json.Unmarshal([]byte(body(t, res)), &p)
			if res.StatusCode != http.StatusBadRequest || p.Code != string(problem.CodePayloadInvalid) || len(p.Fields) == 0 || p.Fields[0].Field != tt.field {
				t.Errorf("= %d %q %+v, want 400 %q naming %s", res.StatusCode, p.Code, p.Fields, string(problem.CodePayloadInvalid), tt.field)
			}
			if p.RequestID != id || p.Type != "urn:partnergate:problem:payload_invalid" {
				t.Errorf("request_id, type = %q, %q, want the gateway's %q and the problem URN", p.RequestID, p.Type, id)
			}
		})
	}
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

func TestURLAnswer(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	t.Run("text", func(t *testing.T) {
		res := serve(f.h, forwardRequest(t, "url", mainPayload(), "main", testNow))
		b := body(t, res)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") || !loginURL.MatchString(b) {
			t.Errorf("= %d %q %q, want 200 text/plain login URL", res.StatusCode, res.Header.Get("Content-Type"), b)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := forwardRequest(t, "url", mainPayload(), "main", testNow)
		r.Header.Set("Accept", "application/json")
		res := serve(f.h, r)
		var out struct{ URL string }
		json.Unmarshal([]byte(body(t, res)), &out)
		if res.Header.Get("Content-Type") != "application/json" || !loginURL.MatchString(out.URL) {
			t.Errorf("= %q %q, want application/json with a login url", res.Header.Get("Content-Type"), out.URL)
		}
	})
	t.Run("payload page", func(t *testing.T) {
		res := serve(f.h, forwardRequest(t, "payload", mainPayload(), "main", testNow))
		b := body(t, res)
		m := regexp.MustCompile(`<meta http-equiv="refresh" content="0; url=(http://localhost:8080/app/login\?code=[A-Za-z0-9_-]{43})">`).FindStringSubmatch(b)
		if res.StatusCode != 200 || m == nil || !strings.Contains(b, `<a id="continue" href="`+m[1]+`">`) {
			t.Errorf("payload page = %d\n%s\nwant a meta refresh and a link to the login URL", res.StatusCode, b)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self' http://partner.localhost:*") || strings.Contains(csp, "script-src") {
			t.Errorf("CSP = %q, want the configured frame-ancestors and no script source", csp)
		}
	})
}

// browser is a cookie-keeping client that does not follow redirects, so each step's answer
// can be checked.
type browser struct {
	t   *testing.T
	h   http.Handler
	jar *cookiejar.Jar
	fwd string // X-Forwarded-Proto
}

func newBrowser(t *testing.T, h http.Handler) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, h: h, jar: jar}
}

func (b *browser) do(r *http.Request) *http.Response {
	u, _ := url.Parse("http://localhost:8080" + r.URL.RequestURI())
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

	res := b.login(f.link(t, mainPayload(), "main"))
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
	if strings.Contains(page, "01019012345") {
		t.Errorf("app page shows the identity number")
	}

	t.Run("second link signs in directly", func(t *testing.T) {
		p := mainPayload()
		p.Contact = &linkspec.Contact{ID: "c-3", Firstname: "Per", Lastname: "Olsen"}
		b2 := newBrowser(t, f.h)
		res := b2.login(f.link(t, p, "main"))
		if res.Header.Get("Location") != "/app" {
			t.Fatalf("second link → %q, want /app", res.Header.Get("Location"))
		}
		_, page := b2.get("/app")
		if !strings.Contains(page, `id="contact-name">Per Olsen<`) || !strings.Contains(page, `id="contact-birthdate">not given<`) {
			t.Errorf("app page after SSO lacks the new contact:\n%s", page)
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
	victim.login(f.link(t, attacker, "main")) // planted: a pending session in the victim's browser
	_, page := victim.get("/app/signin")
	res, _ := victim.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	if res.Header.Get("Location") != "/app/link" {
		t.Fatalf("sign-in → %q, want the confirmation /app/link", res.Header.Get("Location"))
	}
	// The attacker's next link still finds no account: nothing was linked by the sign-in.
	if res := serve(f.h, forwardRequest(t, "url", attacker, "main", f.now)); res.StatusCode != http.StatusOK {
		t.Fatalf("attacker link = %d", res.StatusCode)
	} else if res := newBrowser(t, f.h).login(strings.TrimPrefix(body(t, res), "http://localhost:8080")); res.Header.Get("Location") != "/app/signin" {
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
	if res := newBrowser(t, f.h).login(strings.TrimPrefix(body(t, res), "http://localhost:8080")); res.Header.Get("Location") != "/app/signin" {
		t.Errorf("attacker's link after declining → %q, want /app/signin (not linked)", res.Header.Get("Location"))
	}
}

func TestGoFlowAndCodeReuse(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	path := f.link(t, goPayload(), "go")
	b := newBrowser(t, f.h)
	res := b.login(path)
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

// TestCookieAttributes: over HTTPS the cookies work in a partner's cross-site iframe:
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
			res = b.login(u.RequestURI())
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
			if len(cookies) != 3 {
				t.Fatalf("cookies set: %v, want session, CSRF and session deletion", cookies)
			}
			for _, c := range cookies {
				if !strings.HasPrefix(c.Name, prefix+"pg_") {
					t.Errorf("cookie %s, want the name to start with %q", c.Name, prefix+"pg_")
				}
				if !c.HttpOnly || c.Secure != tt.secure || c.SameSite != tt.sameSite || c.Partitioned != tt.secure || c.Path != "/" {
					t.Errorf("cookie %s: HttpOnly %v Secure %v SameSite %v Partitioned %v Path %q, want true %v %v %v /",
						c.Name, c.HttpOnly, c.Secure, c.SameSite, c.Partitioned, c.Path, tt.secure, tt.sameSite, tt.secure)
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

// signInAttempt posts a sign-in from addr (as the gateway's X-Forwarded-For) with a fresh
// browser and returns the answer.
func signInAttempt(t *testing.T, f *fixture, addr, login, password string) (*http.Response, string) {
	t.Helper()
	b := newBrowser(t, f.h)
	_, page := b.get("/app/signin")
	r := httptest.NewRequest(http.MethodPost, "/app/signin", strings.NewReader(url.Values{
		"login": {login}, "password": {password}, "csrf": {csrfField.FindStringSubmatch(page)[1]}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-For", "203.0.113.250, "+addr) // the first entry is the client's own claim
	res := b.do(r)
	return res, body(t, res)
}

// TestSignInRateLimited: password guesses are bounded per address and per login name, with
// a readable page and Retry-After, and allowed again once the window has passed.
func TestSignInRateLimited(t *testing.T) {
	t.Run("per address", func(t *testing.T) {
		f := newFixture(t, "http://localhost:8080")
		for i := range signInPerAddress {
			if res, _ := signInAttempt(t, f, "198.51.100.7", "user-"+strconv.Itoa(i), "wrong"); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("attempt %d = %d, want 401", i+1, res.StatusCode)
			}
		}
		res, page := signInAttempt(t, f, "198.51.100.7", "instructor", "pass-word-1")
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(page, "Too many sign-in attempts") {
			t.Errorf("attempt over the bound = %d, Retry-After %q, want 429 with a readable page:\n%s", res.StatusCode, res.Header.Get("Retry-After"), page)
		}
		if res, _ := signInAttempt(t, f, "198.51.100.8", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
			t.Errorf("another address = %d, want 303 (signed in)", res.StatusCode)
		}
		f.now = f.now.Add(signInWindow)
		if res, _ := signInAttempt(t, f, "198.51.100.7", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
			t.Errorf("after the window = %d, want 303 (signed in)", res.StatusCode)
		}
	})
	t.Run("per login from one address", func(t *testing.T) {
		f := newFixture(t, "http://localhost:8080")
		for i := range signInPerLogin {
			if res, _ := signInAttempt(t, f, "192.0.2.1", "Instructor", "wrong"); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("attempt %d = %d, want 401", i+1, res.StatusCode)
			}
		}
		if res, _ := signInAttempt(t, f, "192.0.2.1", "instructor", "pass-word-1"); res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("login over its bound from the same address = %d, want 429", res.StatusCode)
		}
	})
	t.Run("per login from many addresses: growing delays, no refusal", func(t *testing.T) {
		f := newFixture(t, "http://localhost:8080")
		var mu sync.Mutex
		var slept []time.Duration
		f.h.signIns.sleep = func(_ context.Context, d time.Duration) bool {
			mu.Lock()
			defer mu.Unlock()
			slept = append(slept, d)
			return true
		}
		for i := range signInPerLogin + 6 {
			if res, _ := signInAttempt(t, f, "192.0.2."+strconv.Itoa(i+1), "Instructor", "wrong"); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("attempt %d = %d, want 401", i+1, res.StatusCode)
			}
		}
		want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
		mu.Lock()
		if !slices.Equal(slept, want) {
			t.Errorf("delays before the checks = %v, want %v (none for the first %d)", slept, want, signInPerLogin)
		}
		mu.Unlock()
		if res, _ := signInAttempt(t, f, "192.0.2.200", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
			t.Errorf("right password after the guesses = %d, want 303 (signed in after a delay)", res.StatusCode)
		}
		f.now = f.now.Add(signInWindow)
		slept = nil
		if res, _ := signInAttempt(t, f, "192.0.2.201", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther || len(slept) != 0 {
			t.Errorf("after the window = %d with delays %v, want 303 without delay", res.StatusCode, slept)
		}
	})
}

// TestSignInConcurrencyBounded: when every password-check slot is taken, a sign-in waits
// briefly and then gets a readable 503, without hashing.
func TestSignInConcurrencyBounded(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	f.h.signIns.wait = 50 * time.Millisecond
	for range cap(f.h.signIns.slots) {
		f.h.signIns.slots <- struct{}{}
	}
	res, page := signInAttempt(t, f, "198.51.100.9", "instructor", "pass-word-1")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(page, "Sign-in is busy") {
		t.Errorf("sign-in with every slot taken = %d, Retry-After %q, want 503 with a readable page:\n%s", res.StatusCode, res.Header.Get("Retry-After"), page)
	}
	f.h.signIns.release()
	if res, _ := signInAttempt(t, f, "198.51.100.9", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-in with a free slot = %d, want 303", res.StatusCode)
	}
	if got := len(f.h.signIns.slots); got != cap(f.h.signIns.slots)-1 {
		t.Errorf("slots taken after the sign-in = %d, want %d: the slot is given back", got, cap(f.h.signIns.slots)-1)
	}
}

func TestClientAddr(t *testing.T) {
	for _, tt := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"connection only", "192.0.2.1:5000", nil, "192.0.2.1"},
		{"gateway appended", "127.0.0.1:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"client's claim before it", "127.0.0.1:5000", []string{"10.0.0.1, 198.51.100.1"}, "198.51.100.1"},
		{"two header lines", "127.0.0.1:5000", []string{"10.0.0.1", "198.51.100.1"}, "198.51.100.1"},
		{"garbage", "127.0.0.1:5000", []string{"nonsense"}, "127.0.0.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientAddr(r); got != tt.want {
				t.Errorf("clientAddr(%q, %q) = %q, want %q", tt.remote, tt.xff, got, tt.want)
			}
		})
	}
}

// TestSignInConcurrencyConfigured: the bound is the configured one (cmd/appservice's
// -signin-concurrency), and the default when unset.
func TestSignInConcurrencyConfigured(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, tt := range []struct{ set, want int }{{0, DefaultSignInConcurrency}, {5, 5}} {
		cfg := f.h.cfg
		cfg.SignInConcurrency = tt.set
		h, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := cap(h.signIns.slots); got != tt.want {
			t.Errorf("SignInConcurrency %d: %d password checks at once, want %d", tt.set, got, tt.want)
		}
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

// loginPage opens a login URL path without submitting the login page (as a link preview
// does) and returns the answer.
func (b *browser) loginPage(path string) (*http.Response, string) {
	b.t.Helper()
	return b.get(path)
}
