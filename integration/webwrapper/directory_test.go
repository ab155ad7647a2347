package webwrapper

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/appservice/web"
	"github.com/partnergate/partnergate/internal/harness/appstack"
	"github.com/partnergate/partnergate/internal/harness/oidcprovider"
)

// TestDirectorySignOn: with AdfsUrl set to the service's directory sign-in, the wrapper's
// window starts there instead of AppUrl, so the person sees the directory's (a real
// OpenID provider's) own login form; signed in there, the service links the directory
// user to the instructor's account after its password, and the window shows the
// application. Closing signs out through AdfsUrl with signout=1.
func TestDirectorySignOn(t *testing.T) {
	var provider *oidcprovider.Provider
	user := oidcprovider.User{ID: "dir-asa", Username: "asa@clinic.example", Password: "asa-directory-password",
		FirstName: "Åsa", LastName: "Berg", Email: "asa@clinic.example"}
	s := appstack.Start(t, appstack.Config{Issuer: issuer, Audience: audience, KeyID: "ww-1", Password: password,
		Directories: func(public string) []web.Directory {
			provider = oidcprovider.Start(t, []string{public + "/app/directory/clinic/callback"}, user)
			return []web.Directory{{Name: "clinic", Label: "Clinic ID", Partner: "demo", Issuer: provider.Issuer,
				ClientID: oidcprovider.ClientWeb, ClientSecret: oidcprovider.ClientSecret, AllowAnyUser: true}}
		}})
	d := newDesktop(t, s, map[string]string{"AdfsUrl": s.Gateway.URL + "/app/directory/clinic/signin"})
	w := d.start(t, arguments, "signon="+user.Username)

	login := w.attachTo(t, strings.TrimSuffix(provider.Issuer, "/"))
	login.do(t, "the directory's login form", chromedp.WaitVisible(`input[name="username"]`))
	login.screenshot(t, "directory-login")
	login.do(t, "directory sign-in",
		chromedp.SetValue(`input[name="username"]`, user.Username),
		chromedp.SendKeys(`input[name="password"]`, user.Password),
		chromedp.Click(`button[type="submit"]`),
		chromedp.WaitVisible(chromedp.ID("first-visit")))
	if got := login.text(t, "#first-visit"); !strings.HasPrefix(got, "Welcome, Åsa Berg.") {
		t.Errorf("first-sight page in the window = %q, want the directory user Åsa Berg greeted", got)
	}
	login.do(t, "service account and link",
		chromedp.SetValue(chromedp.ID("login"), "instructor"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("link-confirm")),
		chromedp.Click(chromedp.ID("link-confirm")),
		chromedp.WaitVisible(chromedp.ID("account")))
	if got := login.text(t, "#account"); got != "Coach Carter" {
		t.Errorf("the window is signed in as %q, want Coach Carter", got)
	}
	login.screenshot(t, "signed-in")
	w.close(t)
}
