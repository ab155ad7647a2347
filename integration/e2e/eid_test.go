package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/appservice/web"
	"github.com/partnergate/partnergate/internal/harness/appstack"
	"github.com/partnergate/partnergate/internal/harness/oidcprovider"
	"github.com/partnergate/partnergate/nationalid"
)

// eidUser is a person at the test ID-porten: pid their identity number as the provider
// writes it, acr the level of assurance of their sign-in.
func eidUser(username, pid, acr string) oidcprovider.User {
	return oidcprovider.User{ID: username, Username: username, Password: "eid-password-" + username, ACR: acr, Claims: map[string]any{"pid": pid}}
}

var (
	eidKari     = eidUser("kari", kariSSN, "idporten-loa-substantial")
	eidSpaced   = eidUser("kari-spaced", kariSSN[:6]+" "+kariSSN[6:], "idporten-loa-high")
	eidKariLow  = eidUser("kari-low", kariSSN, "idporten-loa-low")
	eidStranger = eidUser("stranger", "01013550022", "idporten-loa-substantial")
)

// startEIDStack starts the stack with a test ID-porten (withEID).
func startEIDStack(t *testing.T, c appstack.Config) (*stack, *oidcprovider.Provider) {
	t.Helper()
	var p *oidcprovider.Provider
	c.EIDProviders = withEID(t, &p)
	return startStackWith(t, c), p
}

// withEID is the app service's eID configuration for the stack's public URL: a test
// ID-porten, a real OpenID provider (set in *p once the stack starts) whose client "web"
// is the service, with /go as its post-logout redirect.
func withEID(t *testing.T, p **oidcprovider.Provider) func(public string) []web.EIDProvider {
	return func(public string) []web.EIDProvider {
		*p = oidcprovider.StartWith(t, oidcprovider.Config{Users: []oidcprovider.User{eidKari, eidSpaced, eidKariLow, eidStranger},
			Clients: []oidcprovider.Client{{ID: oidcprovider.ClientWeb, Secret: oidcprovider.ClientSecret,
				RedirectURIs: []string{public + "/app/eid/idporten/callback"}, PostLogoutRedirectURIs: []string{public + "/go"}}}})
		return []web.EIDProvider{{Name: "idporten", Label: "ID-porten", Issuer: (*p).Issuer, ClientID: oidcprovider.ClientWeb,
			ClientSecret: oidcprovider.ClientSecret, Country: nationalid.Norway, NumberClaim: "pid", MinACR: "idporten-loa-substantial",
			Scopes: []string{"profile"}, PostLogoutRedirect: true}}
	}
}

// eidStart opens Go in a browser without a session and presses the ID-porten button: the
// provider's login form.
func eidStart(t *testing.T, s *stack, ctx context.Context, u oidcprovider.User, wait string) {
	t.Helper()
	step(t, ctx, "open Go without a session", chromedp.Navigate(s.gateway.URL+"/go"), chromedp.WaitVisible("#eid-idporten"))
	if got := words(textOf(t, ctx, "#eid-idporten")); got != "Sign in with ID-porten" {
		t.Errorf("Go start page's button = %q, want Sign in with ID-porten", got)
	}
	step(t, ctx, "press the eID button", chromedp.Click("#eid-idporten"))
	providerLoginAs(t, ctx, u, wait)
}

// TestEIDSignIn is issue 36 through the real gateway and app service in a browser: Kari,
// whose member account clinic A's Go link made and for whom clinic B (same ssn, another
// contact id) prepared a plan too, comes back with her national eID and sees both clinics'
// plans, also when the provider writes her number with a space; a stranger's number gets
// the no-plans page; a sign-in below the lowest level of assurance and a tampered state
// are refused; the sign-out ends the provider's session and comes back to Go's start page.
func TestEIDSignIn(t *testing.T) {
	s, p := startEIDStack(t, appstack.Config{})

	// The clinics' plans: A's instructor and B's (the same service account, linked at
	// first sight from each clinic's main link).
	actx := newBrowser(t)
	signInFirstSight(t, s, actx, clinicLink("a"))
	waitView(t, actx, "person")
	var planA, planB svcWorkout
	mustSvc(t, actx, `svcApp.createWorkout({title: "Knee plan from A"})`, &planA)
	bctx := newBrowser(t)
	signInFirstSight(t, s, bctx, clinicLink("b"))
	waitView(t, bctx, "person")
	mustSvc(t, bctx, `svcApp.createWorkout({title: "Back plan from B"})`, &planB)

	// Kari's Go link from A made her member account; it sees A's plan only.
	mctx := newBrowser(t)
	clinicGoLink(t, s, mctx, "a")
	checkMemberPlans(t, mctx, "Kari Nordmann", map[string]string{planA.Name: "Clinic A · for Kari Nordmann"})

	both := map[string]string{planA.Name: "Clinic A · for Kari Nordmann", planB.Name: "Clinic B · for Kari Berg"}
	for _, u := range []oidcprovider.User{eidKari, eidSpaced} {
		ctx := newBrowser(t)
		eidStart(t, s, ctx, u, "#greeting")
		waitView(t, ctx, "my-plans")
		checkMemberPlans(t, ctx, "Kari Nordmann", both)
		screenshot(t, ctx, "plans-"+u.Username)
		if u.Username != eidKari.Username {
			// The session ends while the page is open (signed out elsewhere): the
			// ended view leads back to Go's start page and its eID.
			if !eval[bool](t, ctx, `fetch("/app/signout", {method: "POST", redirect: "manual",
	body: new URLSearchParams(new FormData(document.getElementById("signout-form")))}).then((r) => r.type === "opaqueredirect" || r.ok)`) {
				t.Fatal("signing out by the page's form failed")
			}
			if err := svc(t, ctx, `svcApp.openWorkout(`+strconv.FormatInt(planB.ID, 10)+`)`, nil); err == nil || err.Code != "session_required" {
				t.Errorf("openWorkout after the sign-out = %v, want session_required", err)
			}
			waitView(t, ctx, "session-ended")
			step(t, ctx, "sign in again from the ended view", chromedp.Click("#session-ended-eid"), chromedp.WaitVisible("#eid-idporten"))
			continue
		}
		// Sign-out: the service session ends, and the provider's, which sends the
		// browser back to Go's start page.
		step(t, ctx, "sign out", chromedp.Click("#signout"), chromedp.WaitVisible("#eid-idporten"))
		if loc := eval[string](t, ctx, "location.href"); loc != s.gateway.URL+"/go" {
			t.Errorf("after the sign-out the browser is at %q, want the Go start page", loc)
		}
		// The provider's session ended too: a new sign-in asks for the password again.
		step(t, ctx, "sign in again", chromedp.Click("#eid-idporten"), chromedp.WaitVisible(`input[name="username"]`))
		if loc := eval[string](t, ctx, "location.href"); !strings.HasPrefix(loc, p.Issuer) {
			t.Errorf("a new eID sign-in after the sign-out is at %q, want the provider's login form", loc)
		}
	}

	t.Run("unknown number", func(t *testing.T) {
		ctx := newBrowser(t)
		eidStart(t, s, ctx, eidStranger, "#problem")
		body := problemShown(t, ctx, "eid_person_unknown")
		if !strings.Contains(body, "No plans have been prepared for you yet: ask your clinic.") {
			t.Errorf("unknown number's page = %q, want it to say no plans were prepared", body)
		}
		for _, leak := range []string{"01013550022", "Kari", "Clinic"} {
			if strings.Contains(body, leak) {
				t.Errorf("unknown number's page shows %q", leak)
			}
		}
		screenshot(t, ctx, "unknown")
	})

	t.Run("level of assurance too low", func(t *testing.T) {
		ctx := newBrowser(t)
		eidStart(t, s, ctx, eidKariLow, "#problem")
		problemShown(t, ctx, "eid_assurance_too_low")
		step(t, ctx, "Go", chromedp.Navigate(s.gateway.URL+"/go"), chromedp.WaitVisible("#eid-idporten"))
	})

	t.Run("tampered state", func(t *testing.T) {
		ctx := newBrowser(t)
		step(t, ctx, "start", chromedp.Navigate(s.gateway.URL+"/app/eid/idporten/signin"), chromedp.WaitVisible(`input[name="username"]`))
		step(t, ctx, "tampered callback", chromedp.Navigate(s.gateway.URL+"/app/eid/idporten/callback?code=abc&state=tampered"))
		problemShown(t, ctx, "eid_state_invalid")
	})

	logs := s.appLogs.String()
	for _, secret := range []string{kariSSN, kariSSN[:6] + " " + kariSSN[6:], "01013550022"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the app service's log holds an identity number")
		}
	}
	for _, outcome := range []string{`"outcome":"eid_person_unknown"`, `"outcome":"eid_assurance_too_low"`, `"outcome":"eid_state_invalid"`} {
		if !strings.Contains(logs, outcome) {
			t.Errorf("the app service's log lacks %s", outcome)
		}
	}
	checkNoPersonalData(t, s)
}
