package e2e

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/appservice/web"
	"github.com/partnergate/partnergate/internal/harness/appstack"
	"github.com/partnergate/partnergate/internal/harness/oidcprovider"
)

// anna is the directory's user: an instructor of North Clinic who signs in to everything
// with her organization's directory, which puts her in its staff group.
var anna = oidcprovider.User{ID: "dir-anna", Username: "anna@north-clinic.example", Password: "anna-directory-password",
	FirstName: "Anna", LastName: "Lind", Email: "anna@north-clinic.example", Claims: map[string]any{"groups": []any{"north-clinic-staff"}}}

// startDirectoryStack starts the stack with the directory "clinic" of partner demo, a real
// OpenID provider (zitadel/oidc's example provider) whose client "web" is the service.
func startDirectoryStack(t *testing.T, now func() time.Time) (*stack, *oidcprovider.Provider) {
	t.Helper()
	return startDirectoryStackWith(t, appstack.Config{DirectoryNow: now})
}

// startDirectoryStackWith is startDirectoryStack with the stack's other settings from c.
func startDirectoryStackWith(t *testing.T, c appstack.Config) (*stack, *oidcprovider.Provider) {
	t.Helper()
	var p *oidcprovider.Provider
	c.Directories = func(public string) []web.Directory {
		p = oidcprovider.Start(t, []string{public + "/app/directory/clinic/callback"}, anna)
		return []web.Directory{{Name: "clinic", Label: "North Clinic ID", Partner: "demo", Issuer: p.Issuer,
			ClientID: oidcprovider.ClientWeb, ClientSecret: oidcprovider.ClientSecret,
			RequireClaims: map[string][]string{"groups": {"north-clinic-staff"}}, Public: true}}
	}
	return startStackWith(t, c), p
}

// callbacks records the URLs the browser requested under the directory's callback and the
// provider's authorize endpoint, as a person could read them in the address bar.
type callbacks struct {
	mu        sync.Mutex
	callback  []string
	authorize []string
}

func record(t *testing.T, ctx context.Context) *callbacks {
	t.Helper()
	c := &callbacks{}
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			c.mu.Lock()
			defer c.mu.Unlock()
			switch {
			case strings.Contains(e.Request.URL, "/app/directory/clinic/callback?"):
				c.callback = append(c.callback, e.Request.URL)
			case strings.Contains(e.Request.URL, "/auth?"):
				c.authorize = append(c.authorize, e.Request.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("listening to the browser: %v", err)
	}
	return c
}

func (c *callbacks) last(t *testing.T, which *[]string) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(*which) == 0 {
		t.Fatal("the browser requested no such URL")
	}
	return (*which)[len(*which)-1]
}

// providerLogin signs anna in on the provider's own login form.
func providerLogin(t *testing.T, ctx context.Context, wait string) {
	t.Helper()
	providerLoginAs(t, ctx, anna, wait)
}

// providerLoginAs signs u in on the provider's own login form and waits for wait.
func providerLoginAs(t *testing.T, ctx context.Context, u oidcprovider.User, wait string) {
	t.Helper()
	step(t, ctx, "provider login form", chromedp.WaitVisible(`input[name="username"]`),
		chromedp.SetValue(`input[name="username"]`, u.Username),
		chromedp.SendKeys(`input[name="password"]`, u.Password),
		chromedp.Click(`button[type="submit"]`),
		chromedp.WaitVisible(wait))
}

// problemCode is the refusal page's error code line.
func problemShown(t *testing.T, ctx context.Context, code string) string {
	t.Helper()
	step(t, ctx, "refusal page "+code, chromedp.WaitVisible("#problem"))
	body := words(textOf(t, ctx, "body"))
	if !strings.Contains(body, "Error code "+code) {
		t.Fatalf("page shows %q, want the refusal with error code %s", body, code)
	}
	return body
}

// TestDirectorySignIn signs an instructor in through a real OpenID Connect provider's login
// form: the first time, the directory user is linked to her service account after its
// password and the link question; later, the directory signs her in directly.
func TestDirectorySignIn(t *testing.T) {
	s, p := startDirectoryStack(t, nil)
	ctx := newBrowser(t)

	step(t, ctx, "open the sign-in page", chromedp.Navigate(s.gateway.URL+"/app/signin"), chromedp.WaitVisible("#directory-clinic"))
	if got := words(textOf(t, ctx, "#directory-clinic")); got != "Sign in with North Clinic ID" {
		t.Errorf("directory button = %q, want %q", got, "Sign in with North Clinic ID")
	}
	screenshot(t, ctx, "directory-button")

	// First sight: the provider's form, then the service's first-sight page, which wants
	// the service account's password, then the link question.
	step(t, ctx, "click the directory button", chromedp.Click("#directory-clinic"))
	providerLogin(t, ctx, "#first-visit")
	want := "Welcome, Anna Lind. This is the first time you sign in with your organization's directory. " +
		"Sign in with your service account, or create one below: later directory sign-ins will take you there directly."
	if got := words(textOf(t, ctx, "#first-visit")); got != want {
		t.Errorf("first-sight page #first-visit = %q, want %q", got, want)
	}
	want = "No service account yet? Create one for Anna Lind, whom the directory North Clinic ID knows as anna@north-clinic.example. " +
		"Later sign-ins with that directory go to it directly, so create it only if this is you."
	if got := words(textOf(t, ctx, "#signup-who")); got != want {
		t.Errorf("first-sight page #signup-who = %q, want %q", got, want)
	}
	if n := count(t, ctx, "#directory-clinic"); n != 0 {
		t.Errorf("the directory user's own first-sight page offers the directory again")
	}
	screenshot(t, ctx, "first-sight")
	step(t, ctx, "sign in with the service account",
		chromedp.SetValue("#login", "instructor"), chromedp.SendKeys("#password", password),
		chromedp.Click("#signin"), chromedp.WaitVisible("#link-confirm"))
	if got := words(textOf(t, ctx, "#link-question")); !strings.Contains(got, "Anna Lind") {
		t.Errorf("link question = %q, want it to name the directory user Anna Lind", got)
	}
	step(t, ctx, "link", chromedp.Click("#link-confirm"), chromedp.WaitVisible("#account"))
	if got := textOf(t, ctx, "#account"); got != "Coach Carter" {
		t.Errorf("signed in as %q after linking, want Coach Carter", got)
	}

	// Later: a fresh browser with the wrapper's signon hint goes straight to the account.
	later := newBrowser(t)
	step(t, later, "directory sign-in with signon",
		chromedp.Navigate(s.gateway.URL+"/app/directory/clinic/signin?signon="+url.QueryEscape(anna.Username)),
		chromedp.WaitVisible(`input[name="username"]`))
	if hint := eval[string](t, later, `document.querySelector('input[name="username"]').value`); hint != anna.Username {
		t.Errorf("the provider's form shows username %q, want the signon %q passed as its login_hint", hint, anna.Username)
	}
	providerLogin(t, later, "#account")
	if got := textOf(t, later, "#account"); got != "Coach Carter" {
		t.Errorf("later directory sign-in lands as %q, want Coach Carter directly", got)
	}
	screenshot(t, later, "later-sign-in")

	// A partner link of a partner user the service has not seen: its first-sight page
	// offers the directory too, and the directory user, linked to Coach Carter, takes the
	// partner user to the same account after the link question.
	partner := newBrowser(t)
	step(t, partner, "partner link, first sight", chromedp.Navigate(s.linkURL(t, mainPayload("emp-dir-1", "contact-dir-1", "Per", "Hansen", "1970-02-03"))),
		chromedp.WaitVisible("#directory-clinic"), chromedp.Click("#directory-clinic"))
	providerLogin(t, partner, "#link-confirm")
	if got := words(textOf(t, partner, "#link-employee-id")); got != "emp-dir-1" {
		t.Errorf("link question after the directory sign-in names partner user %q, want emp-dir-1", got)
	}
	step(t, partner, "link the partner user", chromedp.Click("#link-confirm"), chromedp.WaitVisible("#account"))
	if got := textOf(t, partner, "#account"); got != "Coach Carter" {
		t.Errorf("partner user linked through the directory lands as %q, want Coach Carter", got)
	}

	// A link to the directory's sign-out on another site's page signs nobody out: the
	// page asks, and the session stays.
	s.pages.Store("/signout-link", []byte(`<!doctype html><title>Elsewhere</title><a id="out" href="`+s.gateway.URL+`/app/directory/clinic/signin?signout=1">news</a>`))
	step(t, later, "another site's link to the sign-out", chromedp.Navigate(s.partner.URL+"/signout-link"),
		chromedp.Click("#out"), chromedp.WaitVisible("#directory-signout"))
	if got := words(textOf(t, later, "#directory-signout-question")); got != "Sign out of the service and of North Clinic ID?" {
		t.Errorf("sign-out question = %q", got)
	}
	screenshot(t, later, "signout-question")
	step(t, later, "still signed in", chromedp.Navigate(s.gateway.URL+"/app"), chromedp.WaitVisible("#account"))

	// Sign-out through the directory URL (the wrapper's AdfsUrl with signout=1), opened by
	// the browser itself as the wrapper does: the page posts its form at once, which ends
	// the service session. The provider offers RP-initiated logout: the browser ends on
	// its signed-out page.
	step(t, later, "directory sign-out", chromedp.Navigate(s.gateway.URL+"/app/directory/clinic/signin?signout=1"),
		chromedp.WaitVisible("#provider-signed-out"))
	if loc := eval[string](t, later, "location.href"); !strings.HasPrefix(loc, p.Issuer) {
		t.Errorf("after the directory sign-out the browser is at %q, want the provider's signed-out page", loc)
	}
	step(t, later, "back to the service", chromedp.Navigate(s.gateway.URL+"/app"), chromedp.WaitVisible("#directory-clinic"))
}

// TestDirectoryRefusals: a tampered state, a replayed callback, a code used before and an
// expired ID token are refused with a clear page and a stable code.
func TestDirectoryRefusals(t *testing.T) {
	s, _ := startDirectoryStack(t, nil)

	t.Run("wrong state", func(t *testing.T) {
		ctx := newBrowser(t)
		step(t, ctx, "start", chromedp.Navigate(s.gateway.URL+"/app/directory/clinic/signin"), chromedp.WaitVisible(`input[name="username"]`))
		step(t, ctx, "tampered callback", chromedp.Navigate(s.gateway.URL+"/app/directory/clinic/callback?code=abc&state=tampered"))
		body := problemShown(t, ctx, "directory_state_invalid")
		if !strings.Contains(body, "Directory sign-in not valid") {
			t.Errorf("refusal page = %q, want the title Directory sign-in not valid", body)
		}
		screenshot(t, ctx, "wrong-state")
	})

	t.Run("replayed code", func(t *testing.T) {
		ctx := newBrowser(t)
		rec := record(t, ctx)
		step(t, ctx, "start", chromedp.Navigate(s.gateway.URL+"/app/directory/clinic/signin"))
		providerLogin(t, ctx, "#first-visit")
		used := rec.last(t, &rec.callback)

		// The same callback again: its sign-in is over, so its state is no longer valid.
		step(t, ctx, "same callback again", chromedp.Navigate(used))
		problemShown(t, ctx, "directory_state_invalid")

		// The used code with the state of a new sign-in of this browser: the provider
		// refuses the code.
		step(t, ctx, "new sign-in", chromedp.Navigate(s.gateway.URL+"/app/directory/clinic/signin"), chromedp.WaitVisible(`input[name="username"]`))
		az, err := url.Parse(rec.last(t, &rec.authorize))
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(used)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("state", az.Query().Get("state"))
		u.RawQuery = q.Encode()
		step(t, ctx, "used code, fresh state", chromedp.Navigate(u.String()))
		problemShown(t, ctx, "directory_refused")
		screenshot(t, ctx, "replayed-code")

		// The log tells the outcomes, never the code or the state.
		logs := s.appLogs.String()
		for _, secret := range []string{q.Get("code"), q.Get("state")} {
			if strings.Contains(logs, secret) {
				t.Errorf("the app service's log carries a code or state of the sign-in")
			}
		}
		for _, outcome := range []string{`"outcome":"directory_state_invalid"`, `"outcome":"directory_refused"`} {
			if !strings.Contains(logs, outcome) {
				t.Errorf("the app service's log lacks %s", outcome)
			}
		}
	})
}

// TestDirectoryExpiredToken: the provider's real ID token, read by a service whose clock is
// two hours ahead (past the token's one-hour lifetime), is refused.
func TestDirectoryExpiredToken(t *testing.T) {
	s, _ := startDirectoryStack(t, func() time.Time { return time.Now().Add(2 * time.Hour) })
	ctx := newBrowser(t)
	step(t, ctx, "start", chromedp.Navigate(s.gateway.URL+"/app/directory/clinic/signin"))
	providerLogin(t, ctx, "#problem")
	body := problemShown(t, ctx, "directory_token_expired")
	if !strings.Contains(body, "Directory answer expired") {
		t.Errorf("refusal page = %q, want the title Directory answer expired", body)
	}
	screenshot(t, ctx, "expired-token")
}

// TestDirectoryEntitlement: two clinics' directories share one issuer (one tenant, an
// application registration per clinic, "assignment required" off), and the provider signs
// every one of its users in to either. Each directory admits only the users its claim
// rule names (the clinic's staff group): North's user and Bob, whom no clinic knows, are
// refused at South with directory_user_not_allowed, through the real gateway, in a real
// browser; North's user is admitted at North and South's at South.
func TestDirectoryEntitlement(t *testing.T) {
	ida := oidcprovider.User{ID: "dir-ida", Username: "ida@north.example", Password: "ida-directory-password", FirstName: "Ida", LastName: "North",
		Claims: map[string]any{"tid": "tenant-1", "groups": []any{"north-staff"}}}
	sven := oidcprovider.User{ID: "dir-sven", Username: "sven@south.example", Password: "sven-directory-password", FirstName: "Sven", LastName: "South",
		Claims: map[string]any{"tid": "tenant-1", "groups": []any{"south-staff"}}}
	bob := oidcprovider.User{ID: "dir-bob", Username: "bob@tenant.example", Password: "bob-directory-password", FirstName: "Bob", LastName: "Nobody",
		Claims: map[string]any{"tid": "tenant-1"}}
	s := startStackWith(t, appstack.Config{Directories: func(public string) []web.Directory {
		p := oidcprovider.StartWith(t, oidcprovider.Config{Users: []oidcprovider.User{ida, sven, bob}, Clients: []oidcprovider.Client{
			{ID: "north-app", Secret: "north-secret", RedirectURIs: []string{public + "/app/directory/north/callback"}},
			{ID: "south-app", Secret: "south-secret", RedirectURIs: []string{public + "/app/directory/south/callback"}},
		}})
		return []web.Directory{
			{Name: "north", Label: "North Clinic ID", Partner: "demo", Organization: "org-north", Issuer: p.Issuer, ClientID: "north-app",
				ClientSecret: "north-secret", RequireClaims: map[string][]string{"tid": {"tenant-1"}, "groups": {"north-staff"}}},
			{Name: "south", Label: "South Clinic ID", Partner: "demo", Organization: "org-south", Issuer: p.Issuer, ClientID: "south-app",
				ClientSecret: "south-secret", RequireClaims: map[string][]string{"tid": {"tenant-1"}, "groups": {"south-staff"}}},
		}
	}})
	for _, tc := range []struct {
		directory string
		user      oidcprovider.User
		admitted  bool
	}{
		{"south", ida, false},
		{"south", bob, false},
		{"north", ida, true},
		{"south", sven, true},
	} {
		t.Run(tc.user.FirstName+" at "+tc.directory, func(t *testing.T) {
			ctx := newBrowser(t)
			step(t, ctx, "start", chromedp.Navigate(s.gateway.URL+"/app/directory/"+tc.directory+"/signin"))
			if !tc.admitted {
				providerLoginAs(t, ctx, tc.user, "#problem")
				body := problemShown(t, ctx, "directory_user_not_allowed")
				if !strings.Contains(body, "Not allowed by this directory") {
					t.Errorf("refusal page = %q, want the title Not allowed by this directory", body)
				}
				screenshot(t, ctx, "refused")
				step(t, ctx, "the application", chromedp.Navigate(s.gateway.URL+"/app"), chromedp.WaitVisible("#password"))
				return
			}
			providerLoginAs(t, ctx, tc.user, "#first-visit")
			if got := words(textOf(t, ctx, "#first-visit")); !strings.HasPrefix(got, "Welcome, "+tc.user.FirstName+" "+tc.user.LastName+".") {
				t.Errorf("first-sight page = %q, want %s %s welcomed", got, tc.user.FirstName, tc.user.LastName)
			}
		})
	}
	logs := s.appLogs.String()
	if n := strings.Count(logs, `"outcome":"directory_user_not_allowed","claim":"groups"`); n != 2 {
		t.Errorf("the app service logged %d refusals naming the groups claim, want 2", n)
	}
	for _, u := range []oidcprovider.User{ida, bob} {
		if strings.Contains(logs, u.Username) || strings.Contains(logs, u.LastName) {
			t.Errorf("the app service's log names the refused user %s", u.ID)
		}
	}
}
