// Package e2e runs the whole link flow in a real browser: headless Debian chromium, driven
// by chromedp, opens partner pages that post tokens to the real gateway (the caddy binary
// with jwt_partner), which forwards them to the real app service (SQLite). Screenshots of
// every step land in integration/artifacts/e2e/ for a person to look at.
package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/appservice"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/harness/appstack"
	"github.com/partnergate/partnergate/internal/harness/browser"
	"github.com/partnergate/partnergate/internal/linkflow"
	"github.com/partnergate/partnergate/internal/testpayload"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/partnerkit"
)

const (
	issuer   = "https://partner.example"
	audience = "partnergate-demo"
	password = "e2e-coach-password-2026"
)

func TestMain(m *testing.M) { harness.Main(m) }

// stack is a gateway in front of an app service, a partner site that serves pages posting
// link tokens, and the partner's signing key.
type stack struct {
	gateway *harness.Caddy
	app     *appservice.Server
	appLogs *harness.SyncBuffer
	partner *httptest.Server
	key     *harness.Key
	rootCA  string   // an HTTPS stack's root certificate (appstack.Stack.RootCA)
	pages   sync.Map // path → HTML
	n       int
}

// startStack starts the stack; the partner's site is the demo partner's one origin, so
// every form of these tests passes the gateway's origins check as a real browser names it.
func startStack(t *testing.T) *stack {
	t.Helper()
	return startStackWith(t, appstack.Config{})
}

// startStackWith is startStack with the stack's other settings (HeaderPrefix) from c.
func startStackWith(t *testing.T, c appstack.Config) *stack {
	t.Helper()
	s := &stack{}
	s.partner = httptest.NewServer(s.servePages())
	t.Cleanup(s.partner.Close)
	c.Issuer, c.Audience, c.KeyID, c.Password = issuer, audience, "e2e-1", password
	c.FrameAncestors, c.Origins = "'self' http://127.0.0.1:*", []string{s.partner.URL}
	st := appstack.Start(t, c)
	s.gateway, s.app, s.appLogs, s.key, s.rootCA = st.Gateway, st.App, st.AppLogs, st.Key, st.RootCA
	return s
}

// servePages serves the pages stored under their paths.
func (s *stack) servePages() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := s.pages.Load(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page.([]byte))
	})
}

var partnerPage = template.Must(template.New("partner").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Partner EHR</title>
<style>body{font-family:sans-serif;margin:1rem}iframe{border:2px solid #888;width:880px;height:520px}</style></head>
<body>
<h1>Partner EHR · patient record</h1>
<form method="post" action="{{.Action}}"{{if .Frame}} target="app"{{end}}>
<input type="hidden" name="payload" value="{{.Token}}">
<button id="open" type="submit">Open exercise plans</button>
</form>
{{if .Frame}}<iframe name="app" id="app" title="exercise plans"></iframe>{{end}}
</body></html>`))

// partnerForm mints a token for payload and serves the partner page that posts it to the
// gateway's /payload endpoint, in the page itself or into an iframe. It returns the URL.
func (s *stack) partnerForm(t *testing.T, payload map[string]any, frame bool) string {
	t.Helper()
	return s.formPage(t, s.partner, s.key.Sign(t, harness.Token{Issuer: issuer, Audience: audience, Payload: payload}), frame)
}

// formPage serves, on site, a page whose form posts tok to the gateway's /payload, and
// returns its URL; site's handler must be servePages.
func (s *stack) formPage(t *testing.T, site *httptest.Server, tok string, frame bool) string {
	t.Helper()
	var b bytes.Buffer
	if err := partnerPage.Execute(&b, map[string]any{"Action": s.gateway.URL + "/partner/demo/payload", "Token": tok, "Frame": frame}); err != nil {
		t.Fatal(err)
	}
	s.n++
	path := fmt.Sprintf("/page/%d", s.n)
	s.pages.Store(path, b.Bytes())
	return site.URL + path
}

// linkURL signs payload as the partner (with the harness's key, which signs any payload:
// the gateway drops a malformed optional value that the partner kit would refuse to sign)
// and sends it to /url as a partner's back end would (internal/linkflow, as ./run.sh
// --check does), and returns the login URL.
func (s *stack) linkURL(t *testing.T, payload map[string]any) string {
	t.Helper()
	tok := s.key.Sign(t, harness.Token{Issuer: issuer, Audience: audience, Payload: payload})
	u, err := linkflow.Send(context.Background(), s.partnerClient(t), tok)
	if err != nil {
		t.Fatalf("sending a link: %v", err)
	}
	return u
}

// partnerClient is the partner kit's client of the stack's partner, signing with its key.
func (s *stack) partnerClient(t *testing.T) *partnerkit.Client {
	t.Helper()
	signer, err := partnerkit.NewSigner(s.key.Private, s.key.Kid, s.key.Alg, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	return &partnerkit.Client{Gateway: s.gateway.URL, Partner: "demo", Signer: signer,
		HTTPClient: &http.Client{Transport: s.gateway.Transport, Timeout: 30 * time.Second}}
}

// partnerPayload is payload as the partner kit reads it.
func partnerPayload(t *testing.T, payload map[string]any) *partnerkit.Payload {
	t.Helper()
	data, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partnerkit.ParsePayload(data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newBrowser starts a headless chromium with a fresh profile; the browser ends with the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	return browser.New(t, chromedp.WindowSize(1000, 760))
}

// step runs actions with a timeout, failing the test with the step's name.
func step(t *testing.T, ctx context.Context, name string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("step %s: %v", name, time.Since(start)) }()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		screenshot(t, ctx, "failed-"+name)
		t.Fatalf("%s: %v (page %s)", name, err, loc)
	}
}

func text(t *testing.T, ctx context.Context, id string, opts ...chromedp.QueryOption) string {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Text(chromedp.CSS("#"+id), opts...))
	if err != nil {
		t.Fatalf("reading #%s: %v", id, err)
	}
	return strings.TrimSpace(s)
}

// screenshot saves what the browser shows to integration/artifacts/e2e/<test>-<name>.png.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	harness.SaveArtifact(t, "e2e", strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".png", buf)
}

// continueAs answers the question of a browser that has never signed in to the link's
// account, after checking that it names want ("Continue as <account>, <organization>?"),
// with Continue, and waits for the element with id landing.
func continueAs(t *testing.T, ctx context.Context, want, landing string) {
	t.Helper()
	step(t, ctx, "asked", chromedp.WaitVisible(chromedp.ID("ask-continue")))
	if got := text(t, ctx, "ask-question"); got != want {
		t.Errorf("question = %q, want %q", got, want)
	}
	step(t, ctx, "continue", chromedp.Click(chromedp.ID("ask-continue")), chromedp.WaitVisible(chromedp.ID(landing)))
}

// openLink opens the login URL u as the person it was sent to does, whether or not the
// browser has signed in to the link's account before: Continue when asked. It waits for
// the element with id landing. The tests of the question itself do not use it.
func openLink(t *testing.T, ctx context.Context, u, landing string) {
	t.Helper()
	step(t, ctx, "open link", chromedp.Navigate(u))
	waitFor(t, ctx, "the landing or the question", `document.getElementById("ask-continue") || document.getElementById(`+strconv.Quote(landing)+`)`)
	if eval[bool](t, ctx, `!!document.getElementById("ask-continue")`) {
		step(t, ctx, "continue", chromedp.Click(chromedp.ID("ask-continue")))
	}
	step(t, ctx, "landing", chromedp.WaitVisible(chromedp.ID(landing)))
}

func mainPayload(employee, contactID, first, last, birthdate string) map[string]any {
	p := testpayload.Main()
	p["employeeId"] = employee
	c := p["contact"].(map[string]any)
	c["id"], c["firstname"], c["lastname"], c["birthdate"] = contactID, first, last, birthdate
	return p
}

func TestFirstSightSignInThenSingleSignOn(t *testing.T) {
	s := startStack(t)
	ctx := newBrowser(t)

	// First link for employee emp-1001 (Åsa Ångström): the gateway answers the URL, the
	// browser opens it and lands on the sign-in page, prefilled with her e-mail.
	step(t, ctx, "open first link", chromedp.Navigate(s.linkURL(t, mainPayload("emp-1001", "c-7", "Zoë", "Þórsdóttir", "1980-02-29"))),
		chromedp.WaitVisible(chromedp.ID("password")))
	if got := text(t, ctx, "first-visit"); !strings.Contains(got, "Welcome, Åsa Ångström") {
		t.Errorf("sign-in page greeting = %q, want it to welcome Åsa Ångström", got)
	}
	login, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("login")))
	if err != nil || login != "asa@partner.example" {
		t.Errorf("login field = %q, %v, want prefilled asa@partner.example", login, err)
	}
	screenshot(t, ctx, "1-signin")

	// She signs in with her service account (username, not the prefilled e-mail), and is
	// asked whether the partner user is her before it is linked (login CSRF).
	step(t, ctx, "sign in",
		chromedp.Clear(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), "instructor"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("link-confirm")))
	if got := text(t, ctx, "link-question"); !strings.Contains(got, "Åsa Ångström") || !strings.Contains(got, "Kliniken Öst") {
		t.Errorf("link question = %q, want it to name Åsa Ångström at Kliniken Öst", got)
	}
	screenshot(t, ctx, "1b-confirm-link")
	step(t, ctx, "confirm link", chromedp.Click(chromedp.ID("link-confirm")), chromedp.WaitVisible(chromedp.ID("contact-name")))
	for id, want := range map[string]string{
		"account": "Coach Carter", "organization": "Kliniken Öst",
		"contact-name": "Zoë Þórsdóttir", "contact-birthdate": "1980-02-29",
	} {
		if got := text(t, ctx, id); got != want {
			t.Errorf("app page #%s = %q, want %q", id, got, want)
		}
	}
	screenshot(t, ctx, "2-app")

	// The next link for the same employee goes straight in where the account signed in.
	step(t, ctx, "next link, same browser", chromedp.Navigate(s.linkURL(t, mainPayload("emp-1001", "c-8", "Per", "Olsen", "1975-06-01"))),
		chromedp.WaitVisible(chromedp.ID("contact-name")))
	if got := text(t, ctx, "contact-name"); got != "Per Olsen" {
		t.Errorf("app page after the next link: contact %q, want Per Olsen", got)
	}

	// The second link for the same employee, as the partner page's hidden payload form, in
	// a browser that has never seen the application: asked once by the account's name
	// (issue 34), then into the app page (SSO).
	ctx2 := newBrowser(t)
	step(t, ctx2, "open partner page", chromedp.Navigate(s.partnerForm(t, mainPayload("emp-1001", "c-99", "Kari", "Nordmann", "2001-12-24"), false)))
	screenshot(t, ctx2, "3-partner-page")
	step(t, ctx2, "submit payload form", chromedp.Click(chromedp.ID("open")))
	continueAs(t, ctx2, "Continue as Coach Carter, Kliniken Öst?", "contact-name")
	loc, _ := chromedp.Run(ctx2, chromedp.Location())
	if !strings.HasSuffix(loc, "/app") {
		t.Errorf("second link landed on %s, want the app page", loc)
	}
	for id, want := range map[string]string{"account": "Coach Carter", "contact-name": "Kari Nordmann", "contact-birthdate": "2001-12-24"} {
		if got := text(t, ctx2, id); got != want {
			t.Errorf("app page after SSO #%s = %q, want %q", id, got, want)
		}
	}
	screenshot(t, ctx2, "4-app-sso")

	// Sign out ends the session.
	step(t, ctx2, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signed-out")))
	step(t, ctx2, "app after sign-out", chromedp.Navigate(s.gateway.URL+"/app"), chromedp.WaitVisible(chromedp.ID("password")))

	checkNoPersonalData(t, s)
}

func TestGoLinkCreatesMemberAndSignsIn(t *testing.T) {
	s := startStack(t)
	ctx := newBrowser(t)
	step(t, ctx, "open partner page", chromedp.Navigate(s.partnerForm(t, testpayload.Go(), false)))
	step(t, ctx, "submit Go form", chromedp.Click(chromedp.ID("open")))
	continueAs(t, ctx, "Continue as Jürgen Müller-Łukasz, Kliniken Öst?", "member")
	if got := text(t, ctx, "member"); got != "Jürgen Müller-Łukasz" {
		t.Errorf("Go page member = %q, want %q", got, "Jürgen Müller-Łukasz")
	}
	if got := text(t, ctx, "organization"); got != "Kliniken Öst" {
		t.Errorf("Go page organization = %q, want %q", got, "Kliniken Öst")
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if loc != s.gateway.URL+"/go" {
		t.Errorf("Go link landed on %s, want %s/go", loc, s.gateway.URL)
	}
	screenshot(t, ctx, "go-member")
	checkNoPersonalData(t, s)
}

func TestLoginCodeWorksOnce(t *testing.T) {
	s := startStack(t)
	u := s.linkURL(t, testpayload.Go())

	ctx := newBrowser(t)
	openLink(t, ctx, u, "member")

	// The same URL again, even in another browser (a copied link): refused.
	ctx2 := newBrowser(t)
	step(t, ctx2, "second use", chromedp.Navigate(u), chromedp.WaitVisible(chromedp.ID("problem")))
	if got := text(t, ctx2, "code"); got != "login_code_used" {
		t.Errorf("second use error code = %q, want login_code_used", got)
	}
	if title, _ := chromedp.Run(ctx2, chromedp.Title()); !strings.Contains(title, "Link already used") {
		t.Errorf("second use page title = %q, want it to say the link was used", title)
	}
	screenshot(t, ctx2, "code-reused")
}

func TestPayloadFormInIframe(t *testing.T) {
	s := startStack(t)
	// The employee is known and linked already: sign in once through /url.
	ctx := newBrowser(t)
	step(t, ctx, "first link", chromedp.Navigate(s.linkURL(t, mainPayload("emp-7", "c-1", "Ola", "Hansen", "1970-05-05"))),
		chromedp.WaitVisible(chromedp.ID("password")),
		chromedp.Clear(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), "instructor"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("link-confirm")),
		chromedp.Click(chromedp.ID("link-confirm")),
		chromedp.WaitVisible(chromedp.ID("contact-name")))

	// The partner page posts the hidden form into its iframe; the app opens inside it. The
	// browser has never signed in to the account: the question shows in the frame, once.
	ctx2 := newBrowser(t)
	step(t, ctx2, "open partner page with iframe", chromedp.Navigate(s.partnerForm(t, mainPayload("emp-7", "c-2", "Nora", "Lie", "1999-09-09"), true)),
		chromedp.Click(chromedp.ID("open")))
	if got := inFrame(t, ctx2, "ask-question"); got != "Continue as Coach Carter, Kliniken Öst?" {
		t.Errorf("question in the iframe = %q", got)
	}
	screenshot(t, ctx2, "iframe-asked")
	frameClick(t, ctx2, "ask-continue")
	if got := inFrame(t, ctx2, "contact-name"); got != "Nora Lie" {
		t.Fatalf("contact in the iframe = %q, want %q", got, "Nora Lie")
	}
	loc, _ := chromedp.Run(ctx2, chromedp.Location())
	if !strings.HasPrefix(loc, s.partner.URL) {
		t.Errorf("top page = %s, want the partner page to stay", loc)
	}
	screenshot(t, ctx2, "iframe")

	// Signed out in the frame, the next link in the frame goes straight in: the device
	// cookie was set in it.
	frameClick(t, ctx2, "signout")
	inFrame(t, ctx2, "signed-out")
	step(t, ctx2, "open the next link's page", chromedp.Navigate(s.partnerForm(t, mainPayload("emp-7", "c-3", "Siri", "Dahl", "1988-08-08"), true)),
		chromedp.Click(chromedp.ID("open")))
	if got := inFrame(t, ctx2, "contact-name"); got != "Siri Dahl" {
		t.Errorf("contact in the iframe after the next link = %q, want Siri Dahl without a question", got)
	}
}

// inFrame waits for the element with id in the page's iframe#app and returns its text.
func inFrame(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	var got string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		frames, err := chromedp.Run(c, chromedp.Nodes(chromedp.CSS("iframe#app")))
		if err == nil && len(frames) == 1 {
			got, err = chromedp.Run(c, chromedp.Text(chromedp.CSS("#"+id), chromedp.FromNode(frames[0])))
		}
		cancel()
		if err == nil && got != "" {
			return strings.TrimSpace(got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	screenshot(t, ctx, "failed-iframe-"+id)
	t.Fatalf("no #%s in the iframe", id)
	return ""
}

// frameClick clicks the element with id in the page's iframe#app.
func frameClick(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	frames, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("iframe#app")))
	if err != nil || len(frames) != 1 {
		t.Fatalf("iframe#app: %v", err)
	}
	step(t, ctx, "click #"+id+" in the iframe", chromedp.Click(chromedp.CSS("#"+id), chromedp.FromNode(frames[0])))
}

// checkNoPersonalData asserts that neither log holds the ssn or a contact's name.
func checkNoPersonalData(t *testing.T, s *stack) {
	t.Helper()
	for name, logs := range map[string]string{"app service": s.appLogs.String(), "gateway": s.gateway.Logs()} {
		for _, secret := range []string{"20400229-1237", "20450115-1239", "Þórsdóttir", "Müller", "asa@partner.example"} {
			if strings.Contains(logs, secret) {
				t.Errorf("%s log contains the personal value %q", name, secret)
			}
		}
	}
}

// TestDirectRequestRefused plays a client that reaches the app service without the gateway
// and sets the gateway's headers by hand: refused, and no login URL comes back.
func TestDirectRequestRefused(t *testing.T) {
	s := startStack(t)
	claims, err := json.Marshal(testpayload.Main())
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret := linkspec.SignAssertion([]byte("not-the-gateway-secret-0123456789abcdef"), time.Now(), linkspec.Forwarded{
		Partner: "demo", Endpoint: "url", Kind: "main", Issuer: issuer, KeyID: "e2e-1", Claims: base64.RawURLEncoding.EncodeToString(claims)})
	for _, assertion := range []string{"", "v1.1795321069.forged", wrongSecret} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.app.Addr+"/partner/demo/url", nil)
		req.Header.Set("X-Partner-Name", "demo")
		req.Header.Set("X-Partner-Endpoint", "url")
		req.Header.Set("X-Partner-Kind", "main")
		req.Header.Set("X-Partner-Issuer", url.QueryEscape(issuer))
		req.Header.Set("X-Partner-Key-Id", "e2e-1")
		req.Header.Set("X-Partner-Claims", base64.RawURLEncoding.EncodeToString(claims))
		if assertion != "" {
			req.Header.Set("X-Partner-Assertion", assertion)
		}
		res := harness.Do(t, req)
		var p struct{ Code string }
		json.Unmarshal(res.Body, &p)
		if res.StatusCode != http.StatusForbidden || p.Code != "gateway_assertion_invalid" || bytes.Contains(res.Body, []byte("/app/login")) {
			t.Errorf("direct request with assertion %q = %d %s, want 403 gateway_assertion_invalid", assertion, res.StatusCode, res.Body)
		}
	}
}

// TestLoginCSRFFormFromAnotherSite: issue 25's login CSRF through /payload, in a real
// browser. Someone copies the unspent token of their own Go link from the partner's form
// into a page of theirs; a victim who opens it must not end up signed in as them. The
// gateway lists the partner's site (its origins), so the browser's Origin names the other
// site and the form is refused with origin_not_allowed; the victim's browser holds no
// session, and the token, not spent, still opens the link from the partner's page.
func TestLoginCSRFFormFromAnotherSite(t *testing.T) {
	s := startStack(t)
	evil := httptest.NewServer(s.servePages())
	t.Cleanup(evil.Close)
	tok := s.key.Sign(t, harness.Token{Issuer: issuer, Audience: audience, Payload: testpayload.Go()})

	victim := newBrowser(t)
	step(t, victim, "open the other site's page", chromedp.Navigate(s.formPage(t, evil, tok, false)))
	step(t, victim, "submit its form", chromedp.Click(chromedp.ID("open")), chromedp.WaitVisible(chromedp.ID("code")))
	if got := text(t, victim, "code"); got != "origin_not_allowed" {
		t.Errorf("form from another site: error code = %q, want origin_not_allowed", got)
	}
	if title, _ := chromedp.Run(victim, chromedp.Title()); title != "Form from a site the partner did not register" {
		t.Errorf("refusal page title = %q", title)
	}
	screenshot(t, victim, "login-csrf-refused")
	step(t, victim, "Go page after the refusal", chromedp.Navigate(s.gateway.URL+"/go"), chromedp.WaitVisible(chromedp.ID("session-ended")))

	// The token's owner, from the partner's page: its nonce was not spent.
	owner := newBrowser(t)
	step(t, owner, "open the partner's page", chromedp.Navigate(s.formPage(t, s.partner, tok, false)))
	step(t, owner, "submit the same token", chromedp.Click(chromedp.ID("open")))
	continueAs(t, owner, "Continue as Jürgen Müller-Łukasz, Kliniken Öst?", "member")
	if got := text(t, owner, "member"); got != "Jürgen Müller-Łukasz" {
		t.Errorf("Go page member = %q, want %q", got, "Jürgen Müller-Łukasz")
	}
}
