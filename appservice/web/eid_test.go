package web

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/internal/harness/oidcprovider"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/nationalid"
	"github.com/partnergate/partnergate/problem"
)

// The eID tests' people: Kari, a patient of clinics A and B, with a valid Norwegian number;
// someone no clinic knows.
const (
	eidKariSSN    = "17053550088"
	eidUnknownSSN = "01013550022"
)

// eidUsers are the test eID provider's users: Kari at substantial and at low assurance,
// Kari's number in another spelling, an unknown number, and no usable number.
func eidUsers() []oidcprovider.User {
	user := func(id, pid, acr string) oidcprovider.User {
		return oidcprovider.User{ID: id, Username: id, Password: "eid-password", ACR: acr, Claims: map[string]any{"pid": pid}}
	}
	return []oidcprovider.User{
		user("kari", eidKariSSN, "idporten-loa-substantial"),
		user("kari-high", eidKariSSN, "idporten-loa-high"),
		user("kari-low", eidKariSSN, "idporten-loa-low"),
		user("kari-spaced", "170535 50088", "idporten-loa-substantial"),
		user("stranger", eidUnknownSSN, "idporten-loa-substantial"),
		user("garbled", "12345678901", "idporten-loa-substantial"),
		{ID: "no-acr", Username: "no-acr", Password: "eid-password", Claims: map[string]any{"pid": eidKariSSN}},
	}
}

// eidFixture is a fixture on SQLite with a test ID-porten (eidUsers), logging to log, and
// Kari's plans: one at clinic A, whose Go link made her member account, one at clinic B,
// which knows her by another contact id and the same number.
func eidFixture(t *testing.T, log *bytes.Buffer) (*fixture, *oidcprovider.Provider, map[string]string) {
	t.Helper()
	p := oidcprovider.StartWith(t, oidcprovider.Config{Users: eidUsers(), Clients: []oidcprovider.Client{{
		ID: oidcprovider.ClientWeb, Secret: oidcprovider.ClientSecret,
		RedirectURIs: []string{"http://localhost:8080/app/eid/idporten/callback"}, PostLogoutRedirectURIs: []string{"http://localhost:8080/go"},
	}}})
	f := newFixtureOn(t, "http://localhost:8080", filepath.Join(t.TempDir(), "app.db"), slog.New(slog.NewTextHandler(log, nil)))
	eids, err := newEIDProviders([]EIDProvider{{Name: "idporten", Label: "ID-porten", Issuer: p.Issuer, ClientID: oidcprovider.ClientWeb,
		ClientSecret: oidcprovider.ClientSecret, Country: nationalid.Norway, NumberClaim: "pid", MinACR: "idporten-loa-substantial",
		Scopes: []string{"profile"}, PostLogoutRedirect: true}})
	if err != nil {
		t.Fatal(err)
	}
	f.h.eids = eids
	ctx := context.Background()
	coach, _, err := f.st.InstructorHome(ctx, "instructor")
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string]string{}
	for _, c := range []struct {
		org, contact, ssn, plan string
		kind                    linkspec.Kind
	}{
		{"org-a", "contact-1", eidKariSSN, "Knee plan from A", linkspec.KindGo},
		{"org-b", "c-999", "170535-50088", "Shoulder plan from B", linkspec.KindMain},
	} {
		payload := &linkspec.Payload{OrganizationID: c.org, OrganizationName: "Clinic " + c.org,
			Contact: &linkspec.Contact{ID: c.contact, SSN: c.ssn, Firstname: "Kari", Lastname: "Nordmann", Email: "kari@" + c.org + ".example"}}
		if c.kind == linkspec.KindMain {
			payload.EmployeeID, payload.EmployeeFirstname, payload.EmployeeLastname = "emp-"+c.org, "Ida", "Berg"
			payload.EmployeeEmail = "ida@" + c.org + ".example"
		}
		r, err := f.st.ResolveLink(ctx, store.Link{Partner: "demo", Endpoint: "url", RequestID: "eid-" + c.org, Kind: c.kind, Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.CreateWorkout(ctx, r.OrganizationID, coach, r.PersonID, 0, c.plan); err != nil {
			t.Fatal(err)
		}
		plans[c.org] = c.plan
	}
	return f, p, plans
}

// eidSignIn signs user in at the test eID from browser b's Go start page and returns the
// callback's answer.
func eidSignIn(t *testing.T, b *browser, user string) (*http.Response, string) {
	t.Helper()
	res, page := b.get("/go")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(page, `id="eid-idporten" href="/app/eid/idporten/signin"`) ||
		!strings.Contains(page, "Sign in with ID-porten") {
		t.Fatalf("Go start page = %d, want 401 with the ID-porten button:\n%s", res.StatusCode, page)
	}
	res, _ = b.get("/app/eid/idporten/signin")
	auth, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || err != nil || auth.Query().Get("acr_values") != "idporten-loa-substantial" ||
		auth.Query().Get("code_challenge_method") != "S256" || auth.Query().Get("nonce") == "" || auth.Query().Get("state") == "" {
		t.Fatalf("eID sign-in = %d to %q, want 303 to the provider with acr_values, PKCE, nonce and state", res.StatusCode, res.Header.Get("Location"))
	}
	back := oidcprovider.SignIn(t, auth.String(), user, "eid-password")
	return b.get(back.RequestURI())
}

// TestEIDSignInSeesEveryClinic: Kari, whom clinic A's Go link made a member and clinic B
// knows by the same number, signs in with the eID (her number as the provider writes it,
// or with a space) and sees both clinics' plans; the log never holds her number.
func TestEIDSignInSeesEveryClinic(t *testing.T) {
	var log bytes.Buffer
	f, _, plans := eidFixture(t, &log)
	for _, user := range []string{"kari", "kari-spaced", "kari-high"} {
		t.Run(user, func(t *testing.T) {
			b := newBrowser(t, f.h)
			res, _ := eidSignIn(t, b, user)
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
				t.Fatalf("eID callback = %d to %q, want 303 to /go", res.StatusCode, res.Header.Get("Location"))
			}
			if res, shell := b.get("/go"); res.StatusCode != http.StatusOK || !strings.Contains(shell, `id="member"`) ||
				!strings.Contains(shell, `<meta name="go-eid" content="offered">`) {
				t.Fatalf("Go after the eID sign-in = %d, want the signed-in shell, which tells its script an eID is offered:\n%s", res.StatusCode, shell)
			}
			m := &apiClient{browser: b}
			m.status()
			res, list := m.call(http.MethodGet, "/app/api/me/workouts", "")
			if res.StatusCode != http.StatusOK || !strings.Contains(string(list), plans["org-a"]) || !strings.Contains(string(list), plans["org-b"]) {
				t.Errorf("GET /app/api/me/workouts in the eID session = %d %s, want A's and B's plans", res.StatusCode, list)
			}
		})
	}
	for _, secret := range []string{eidKariSSN, "50088", "170535"} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the log holds the identity number (%q):\n%s", secret, log.String())
		}
	}
}

// TestEIDSignInRefusals: an unknown number gets the no-plans page and creates nothing; a
// level of assurance below the lowest accepted, a token without acr and a number that is
// none are refused with their codes; a callback whose state is not the browser's is
// refused. None leaves a session.
func TestEIDSignInRefusals(t *testing.T) {
	var log bytes.Buffer
	f, _, _ := eidFixture(t, &log)
	for _, tc := range []struct {
		user   string
		status int
		code   problem.Code
		shows  string
	}{
		{"stranger", http.StatusNotFound, problem.CodeEIDPersonUnknown, "No plans have been prepared for you yet: ask your clinic."},
		{"kari-low", http.StatusForbidden, problem.CodeEIDAssuranceTooLow, "does not give a high enough level of security"},
		{"no-acr", http.StatusForbidden, problem.CodeEIDAssuranceTooLow, "does not give a high enough level of security"},
		{"garbled", http.StatusUnauthorized, problem.CodeEIDNumberInvalid, "did not give a national identity number"},
	} {
		t.Run(tc.user, func(t *testing.T) {
			b := newBrowser(t, f.h)
			res, page := eidSignIn(t, b, tc.user)
			if res.StatusCode != tc.status || !strings.Contains(page, string(tc.code)) || !strings.Contains(page, tc.shows) {
				t.Errorf("eID callback of %s = %d, want %d %s saying %q:\n%s", tc.user, res.StatusCode, tc.status, tc.code, tc.shows, page)
			}
			for _, leak := range []string{eidUnknownSSN, eidKariSSN, "12345678901", "Nordmann"} {
				if strings.Contains(page, leak) {
					t.Errorf("the refusal page shows %q", leak)
				}
			}
			if res, _ := b.get("/go"); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("Go after a refused eID sign-in = %d, want 401", res.StatusCode)
			}
		})
	}

	t.Run("tampered state", func(t *testing.T) {
		b := newBrowser(t, f.h)
		_, back := eidAtProvider(t, b, "kari")
		q := back.Query()
		q.Set("state", q.Get("state")+"x")
		back.RawQuery = q.Encode()
		res, page := b.get(back.RequestURI())
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, string(problem.CodeEIDStateInvalid)) {
			t.Errorf("callback with a tampered state = %d, want 400 %s:\n%s", res.StatusCode, problem.CodeEIDStateInvalid, page)
		}
		if res, _ := b.get("/go"); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("Go after a tampered state = %d, want 401", res.StatusCode)
		}
	})

	t.Run("a directory's flow", func(t *testing.T) {
		// A flow cookie of another provider's sign-in is not this one's.
		res, back := eidAtProvider(t, newBrowser(t, f.h), "kari")
		var flow *http.Cookie
		for _, c := range res.Cookies() {
			if c.Name == directoryCookie {
				flow = c
			}
		}
		f2 := f.h.openFlowForTest(flow.Value, "clinic")
		r := httptest.NewRequest(http.MethodGet, back.RequestURI(), nil)
		r.AddCookie(&http.Cookie{Name: directoryCookie, Value: f2})
		res = serve(f.h, r)
		if page := body(t, res); res.StatusCode != http.StatusBadRequest || !strings.Contains(page, string(problem.CodeEIDStateInvalid)) {
			t.Errorf("callback with a directory's flow cookie = %d, want 400 %s", res.StatusCode, problem.CodeEIDStateInvalid)
		}
	})
	if strings.Contains(log.String(), eidUnknownSSN) || strings.Contains(log.String(), eidKariSSN) {
		t.Errorf("the log holds an identity number:\n%s", log.String())
	}
}

// eidAtProvider starts an eID sign-in in b and signs user in at the provider: the answer
// that sent b there, and the callback URL the provider sends b back to (not followed).
func eidAtProvider(t *testing.T, b *browser, user string) (*http.Response, *url.URL) {
	t.Helper()
	res, _ := b.get("/app/eid/idporten/signin")
	return res, oidcprovider.SignIn(t, res.Header.Get("Location"), user, "eid-password")
}

// openFlowForTest re-signs the flow cookie raw as one of directory name.
func (h *Handler) openFlowForTest(raw, name string) string {
	f, _ := h.openFlow(raw)
	f.Directory = name
	return h.signFlow(f)
}

// TestEIDSignOutAtProvider: the eID session's sign-out ends the service session and sends
// the browser to the provider's end_session_endpoint with the ID token as hint and the Go
// start page to come back to.
func TestEIDSignOutAtProvider(t *testing.T) {
	var log bytes.Buffer
	f, p, _ := eidFixture(t, &log)
	b := newBrowser(t, f.h)
	eidSignIn(t, b, "kari")
	res, shell := b.get("/go")
	// The sign-out form's answer goes on to the provider's logout: the page's CSP must
	// let the form end there, or the browser stays on the page.
	provider, _ := url.Parse(p.Issuer)
	if csp, want := res.Header.Get("Content-Security-Policy"), "form-action 'self' http://"+provider.Host+";"; !strings.Contains(csp, want) {
		t.Errorf("the eID session's Go page CSP = %q, want %q", csp, want)
	}
	tok := csrfField.FindStringSubmatch(shell)
	if tok == nil {
		t.Fatal("no CSRF token on the Go page")
	}
	res, _ = b.post("/app/signout", url.Values{"csrf": {tok[1]}})
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(loc.String(), p.Issuer) ||
		loc.Query().Get("id_token_hint") == "" || loc.Query().Get("client_id") != oidcprovider.ClientWeb ||
		loc.Query().Get("post_logout_redirect_uri") != "http://localhost:8080/go" {
		t.Errorf("sign-out of the eID session = %d to %q, want 303 to the provider's end_session with id_token_hint, client_id and /go", res.StatusCode, loc)
	}
	if res, _ := b.get("/go"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("Go after the sign-out = %d, want 401", res.StatusCode)
	}
	// A provider without end_session_endpoint: the sign-out ends the service session and
	// comes back to Go's start page.
	idporten := f.h.eids.byName["idporten"]
	if _, err := idporten.discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	idporten.logout = ""
	eidSignIn(t, b, "kari")
	_, shell = b.get("/go")
	tok = csrfField.FindStringSubmatch(shell)
	if res, _ := b.post("/app/signout", url.Values{"csrf": {tok[1]}}); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
		t.Errorf("sign-out of an eID session whose provider offers no logout = %d to %q, want 303 to /go", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := b.get("/go"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("Go after the sign-out = %d, want 401", res.StatusCode)
	}
	// A browser with a session does not start an eID sign-in: it goes to its landing,
	// so another site's link to the sign-in cannot swap its session.
	linked := newBrowser(t, f.h)
	linked.signInByLink(f.link(t, goPayload(), "go"))
	if res, _ := linked.get("/app/eid/idporten/signin"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/go" {
		t.Errorf("eID sign-in in a browser with a Go link's session = %d to %q, want 303 to /go", res.StatusCode, res.Header.Get("Location"))
	}

	// A Go link's session that took an eID session's place in the browser signs out as a
	// link's does: not at the provider.
	idporten.logout = "http://" + provider.Host + "/end_session"
	eidSignIn(t, b, "kari")
	// The link asks first whether to leave the eID session for its account: yes.
	page := body(t, b.login(f.link(t, goPayload(), "go")))
	m := switchForm.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no switch question for a Go link in the eID session's browser:\n%s", page)
	}
	if res, _ := b.post("/app/login", url.Values{"code": {m[1]}, "csrf": {m[2]}, "switch": {"yes"}}); res.Header.Get("Location") != "/go" {
		t.Fatalf("switching to the Go link's account → %q, want /go", res.Header.Get("Location"))
	}
	res, shell = b.get("/go")
	tok = csrfField.FindStringSubmatch(shell)
	if csp := res.Header.Get("Content-Security-Policy"); strings.Contains(csp, provider.Host) {
		t.Errorf("a Go link's session's page lets its form end at the eID provider: %q", csp)
	}
	if res, _ := b.post("/app/signout", url.Values{"csrf": {tok[1]}}); res.Header.Get("Location") != "/app/signed-out" {
		t.Errorf("sign-out of a Go link's session after an eID session → %q, want /app/signed-out", res.Header.Get("Location"))
	}
	// A Go link's session signs out as before: no eID cookie, no provider.
	b2 := newBrowser(t, f.h)
	b2.signInByLink(f.link(t, goPayload(), "go"))
	_, shell = b2.get("/go")
	tok = csrfField.FindStringSubmatch(shell)
	if res, _ := b2.post("/app/signout", url.Values{"csrf": {tok[1]}}); res.Header.Get("Location") != "/app/signed-out" {
		t.Errorf("sign-out of a Go link's session → %q, want /app/signed-out", res.Header.Get("Location"))
	}
}

// TestEIDProviderConfig: a provider whose lowest level is not one of its levels, or whose
// country or number claim is missing, does not load.
func TestEIDProviderConfig(t *testing.T) {
	good := EIDProvider{Name: "bankid", Label: "BankID", Issuer: "https://broker.example/", ClientID: "c", Country: nationalid.Sweden,
		NumberClaim: "ssn", MinACR: "urn:broker:loa:high", ACRLevels: []string{"urn:broker:loa:low", "urn:broker:loa:high"}}
	if _, err := newEIDProviders([]EIDProvider{good}); err != nil {
		t.Fatalf("a good provider = %v", err)
	}
	for name, change := range map[string]func(*EIDProvider){
		"min_acr not a level":   func(p *EIDProvider) { p.MinACR = "urn:broker:loa:substantial" },
		"no min_acr":            func(p *EIDProvider) { p.MinACR = "" },
		"unknown ladder":        func(p *EIDProvider) { p.ACRLevels = nil },
		"no country":            func(p *EIDProvider) { p.Country = "" },
		"another country":       func(p *EIDProvider) { p.Country = "FI" },
		"no number claim":       func(p *EIDProvider) { p.NumberClaim = "" },
		"a name not a URL word": func(p *EIDProvider) { p.Name = "Bank ID" },
	} {
		p := good
		change(&p)
		if _, err := newEIDProviders([]EIDProvider{p}); err == nil {
			t.Errorf("%s: loaded, want an error", name)
		}
	}
	idporten := EIDProvider{Name: "idporten", Label: "ID-porten", Issuer: "https://idporten.no", ClientID: "c", Country: nationalid.Norway,
		NumberClaim: "pid", MinACR: "idporten-loa-substantial"}
	ps, err := newEIDProviders([]EIDProvider{idporten})
	if err != nil {
		t.Fatalf("ID-porten without acr_levels = %v", err)
	}
	for acr, want := range map[string]bool{"idporten-loa-low": false, "idporten-loa-substantial": true, "idporten-loa-high": true, "": false, "Level4": false} {
		if got := ps.byName["idporten"].assured(acr); got != want {
			t.Errorf("assured(%q) = %v, want %v", acr, got, want)
		}
	}
}

// TestEIDStartPageLanguages: the Go start page offers the eID in the browser's language,
// and the page for a number no clinic knows says so in it too.
func TestEIDStartPageLanguages(t *testing.T) {
	var log bytes.Buffer
	f, _, _ := eidFixture(t, &log)
	for lang, want := range map[string][2]string{
		"en": {"Sign in with ID-porten", "No plans have been prepared for you yet: ask your clinic."},
		"nb": {"Logg inn med ID-porten", "Det er ikke laget noen program til deg ennå: spør klinikken din."},
		"sv": {"Logga in med ID-porten", "Inga program har gjorts åt dig än: fråga din klinik."},
		"da": {"Log ind med ID-porten", "Der er ikke lavet nogen programmer til dig endnu: spørg din klinik."},
		"de": {"Mit ID-porten anmelden", "Für Sie wurden noch keine Pläne erstellt: Fragen Sie Ihre Praxis."},
	} {
		b := newBrowser(t, f.h)
		if _, page := b.getWith("/go", lang); !strings.Contains(page, want[0]) {
			t.Errorf("Go start page in %s lacks %q:\n%s", lang, want[0], page)
		}
		_, back := eidAtProvider(t, b, "stranger")
		if res, page := b.getWith(back.RequestURI(), lang); res.StatusCode != http.StatusNotFound || !strings.Contains(page, want[1]) {
			t.Errorf("unknown number's page in %s = %d, want 404 saying %q:\n%s", lang, res.StatusCode, want[1], page)
		}
	}
}
