package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/internal/harness/appstack"
	"github.com/partnergate/partnergate/internal/harness/browser"
	"github.com/partnergate/partnergate/internal/harness/oidcprovider"
	"github.com/partnergate/partnergate/internal/testpayload"
)

// newHTTPSBrowser starts a headless chromium for an HTTPS stack: it trusts the stack's root
// as a person's computer trusts its organization's CA (browser.TrustRoot), and finds
// appstack.HTTPSHost on loopback. No certificate error is ignored.
func newHTTPSBrowser(t *testing.T, s *stack) context.Context {
	t.Helper()
	return browser.New(t, chromedp.WindowSize(1000, 760), browser.TrustRoot(t, s.rootCA), browser.Resolve(appstack.HTTPSHost, "127.0.0.1"))
}

// cookies returns the browser's cookies for the gateway's site, by name.
func cookies(t *testing.T, ctx context.Context, s *stack) map[string]*network.Cookie {
	t.Helper()
	var got []*network.Cookie
	step(t, ctx, "read cookies", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{s.gateway.URL + "/"}})
		got = res.Cookies
		return err
	}))
	out := map[string]*network.Cookie{}
	for _, c := range got {
		out[c.Name] = c
	}
	return out
}

// wantHostCookies checks that the browser holds the service's cookies names as production
// has them: __Host- (so a sibling subdomain or a plain-HTTP answer cannot set them), Secure,
// HttpOnly, Path / and SameSite sameSite, and no cookie of the service without the prefix.
func wantHostCookies(t *testing.T, ctx context.Context, s *stack, sameSite network.CookieSameSite, names ...string) {
	t.Helper()
	jar := cookies(t, ctx, s)
	for _, name := range names {
		c := jar["__Host-"+name]
		if c == nil {
			t.Errorf("the browser holds no __Host-%s cookie for %s (it holds %v)", name, s.gateway.URL, keys(jar))
			continue
		}
		if !c.Secure || !c.HTTPOnly || c.Path != "/" || c.SameSite != sameSite {
			t.Errorf("cookie %s: Secure %v HttpOnly %v Path %q SameSite %q, want Secure, HttpOnly, Path /, SameSite %s",
				c.Name, c.Secure, c.HTTPOnly, c.Path, c.SameSite, sameSite)
		}
	}
	for name := range jar {
		if strings.HasPrefix(name, "pg_") {
			t.Errorf("the browser holds the unprefixed cookie %s over HTTPS", name)
		}
	}
}

func keys(m map[string]*network.Cookie) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// wantHSTS checks that the browser keeps the site's Strict-Transport-Security: a plain-HTTP
// address of the site is taken to HTTPS by the browser itself, before any request leaves
// it (without HSTS, Caddy's HTTPS port would refuse the plain-HTTP request).
func wantHSTS(t *testing.T, ctx context.Context, s *stack, path, visible string) {
	t.Helper()
	plain := "http://" + strings.TrimPrefix(s.gateway.URL, "https://") + path
	step(t, ctx, "plain-HTTP address", chromedp.Navigate(plain), chromedp.WaitVisible(visible))
	if loc := eval[string](t, ctx, "location.href"); loc != s.gateway.URL+path {
		t.Errorf("the browser opened %s at %s, want %s (HSTS)", plain, loc, s.gateway.URL+path)
	}
}

// TestHTTPS runs what people do over HTTPS, as the service is deployed: Caddy with its own
// CA (tls internal) in front of the app service, a browser that trusts that CA. The
// partner's main link, the Go link and the directory sign-in each end where they do over
// plain HTTP, with __Host- cookies, Secure and HSTS as in production.
func TestHTTPS(t *testing.T) {
	var eid *oidcprovider.Provider
	s, _ := startDirectoryStackWith(t, appstack.Config{HTTPS: true, EIDProviders: withEID(t, &eid)})
	if !strings.HasPrefix(s.gateway.URL, "https://"+appstack.HTTPSHost+":") {
		t.Fatalf("gateway at %s, want https://%s", s.gateway.URL, appstack.HTTPSHost)
	}

	t.Run("main link", func(t *testing.T) {
		ctx := newHTTPSBrowser(t, s)
		// The partner page's form posts the link to the gateway over HTTPS.
		step(t, ctx, "partner page", chromedp.Navigate(s.partnerForm(t, mainPayload("emp-https-1", "c-https-1", "Zoë", "Þórsdóttir", "1980-02-29"), false)),
			chromedp.Click(chromedp.ID("open")), chromedp.WaitVisible(chromedp.ID("password")))
		linkAtFirstSight(t, ctx)
		if got := text(t, ctx, "contact-name"); got != "Zoë Þórsdóttir" {
			t.Errorf("app page over HTTPS shows contact %q, want Zoë Þórsdóttir", got)
		}
		screenshot(t, ctx, "main-link")
		wantHostCookies(t, ctx, s, network.CookieSameSiteNone, "pg_session", "pg_csrf", "pg_device")
		wantHSTS(t, ctx, s, "/app", "#contact-name")
	})

	t.Run("Go link", func(t *testing.T) {
		ctx := newHTTPSBrowser(t, s)
		// A browser new to the member's account asks once (issue 34).
		step(t, ctx, "open Go link", chromedp.Navigate(s.linkURL(t, testpayload.Go())))
		continueAs(t, ctx, goMemberQuestion, "member")
		if got := text(t, ctx, "member"); got != "Jürgen Müller-Łukasz" {
			t.Errorf("Go page over HTTPS shows member %q, want Jürgen Müller-Łukasz", got)
		}
		if loc := eval[string](t, ctx, "location.href"); loc != s.gateway.URL+"/go" {
			t.Errorf("Go link landed on %s, want %s/go", loc, s.gateway.URL)
		}
		waitView(t, ctx, "my-plans")
		screenshot(t, ctx, "go-link")
		wantHostCookies(t, ctx, s, network.CookieSameSiteNone, "pg_session", "pg_csrf", "pg_device")
		wantHSTS(t, ctx, s, "/go", "#member")
		// Go installs over HTTPS as on localhost, and its worker keeps the shell and the
		// list of the page it did not load (issue 36). Over HTTPS the worker most often
		// takes over this page while it boots: before the fix the page then told it
		// nothing, and the shell was not kept. Whether Chrome lets the worker answer a
		// later navigation varies from run to run here (the controller stays null in about
		// one run of five over HTTPS, with the worker active), so what a controlled page
		// reads offline is TestGoOnThePhone's.
		step(t, ctx, "Go again", chromedp.Navigate(s.gateway.URL+"/go"))
		waitView(t, ctx, "my-plans")
		installable(t, ctx, "en")
		waitTrue(t, ctx, "Go's shell and list kept", `await caches.match("/go") && await caches.match("/app/api/me/workouts")`)
	})

	t.Run("directory sign-in", func(t *testing.T) {
		ctx := newHTTPSBrowser(t, s)
		step(t, ctx, "sign-in page", chromedp.Navigate(s.gateway.URL+"/app/signin"), chromedp.WaitVisible("#directory-clinic"))
		step(t, ctx, "directory button", chromedp.Click("#directory-clinic"), chromedp.WaitVisible(`input[name="username"]`))
		// At the provider's form: the flow's cookie waits for the callback.
		wantHostCookies(t, ctx, s, network.CookieSameSiteLax, "pg_directory")
		providerLogin(t, ctx, "#first-visit")
		if got := words(textOf(t, ctx, "#first-visit")); !strings.HasPrefix(got, "Welcome, Anna Lind.") {
			t.Errorf("first-sight page after the directory over HTTPS = %q, want it to welcome Anna Lind", got)
		}
		if _, ok := cookies(t, ctx, s)["__Host-pg_directory"]; ok {
			t.Errorf("the flow's cookie outlived its callback")
		}
		step(t, ctx, "sign in with the service account",
			chromedp.SetValue("#login", "instructor"), chromedp.SendKeys("#password", password),
			chromedp.Click("#signin"), chromedp.WaitVisible("#link-confirm"))
		step(t, ctx, "link", chromedp.Click("#link-confirm"), chromedp.WaitVisible("#account"))
		if got := textOf(t, ctx, "#account"); got != "Coach Carter" {
			t.Errorf("signed in over HTTPS as %q after linking, want Coach Carter", got)
		}
		screenshot(t, ctx, "directory")
		wantHostCookies(t, ctx, s, network.CookieSameSiteNone, "pg_session", "pg_csrf", "pg_device")
	})

	t.Run("eID sign-in", func(t *testing.T) {
		clinicGoLink(t, s, newHTTPSBrowser(t, s), "a")
		ctx := newHTTPSBrowser(t, s)
		step(t, ctx, "Go start page", chromedp.Navigate(s.gateway.URL+"/go"), chromedp.WaitVisible("#eid-idporten"))
		step(t, ctx, "eID button", chromedp.Click("#eid-idporten"), chromedp.WaitVisible(`input[name="username"]`))
		wantHostCookies(t, ctx, s, network.CookieSameSiteLax, "pg_directory")
		providerLoginAs(t, ctx, eidKari, "#greeting")
		if got := text(t, ctx, "greeting"); got != "Hi Kari Nordmann" {
			t.Errorf("Go after the eID over HTTPS greets %q, want Hi Kari Nordmann", got)
		}
		// The sealed ID token for the provider's logout, Lax as the flow's; the flow's
		// cookie ended with its callback.
		wantHostCookies(t, ctx, s, network.CookieSameSiteLax, "pg_eid")
		if _, ok := cookies(t, ctx, s)["__Host-pg_directory"]; ok {
			t.Errorf("the flow's cookie outlived its callback")
		}
		screenshot(t, ctx, "eid")
		step(t, ctx, "sign out", chromedp.Click("#signout"), chromedp.WaitVisible("#eid-idporten"))
		if loc := eval[string](t, ctx, "location.href"); loc != s.gateway.URL+"/go" {
			t.Errorf("after the eID sign-out over HTTPS the browser is at %q, want %s/go", loc, s.gateway.URL)
		}
		if _, ok := cookies(t, ctx, s)["__Host-pg_eid"]; ok {
			t.Errorf("the eID cookie outlived the sign-out")
		}
	})
}
