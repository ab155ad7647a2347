package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// takeDown makes the fixture's database stop answering: the SQLite pool is closed; the
// PostgreSQL database is dropped on its server, which ends the store's connections and
// refuses new ones, as a server that went away does.
func takeDown(t *testing.T, f *fixture, db database, dsn string) {
	t.Helper()
	if db.name == "sqlite" {
		f.st.Close()
		return
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	if _, err := rawDB(t, "pgx", u.String()).Exec("DROP DATABASE " + name + " WITH (FORCE)"); err != nil {
		t.Fatalf("dropping the database: %v", err)
	}
}

// beforeOutage signs a member in by a Go link, and opens the login page of a main link in
// another browser, whose form (code, csrf) it returns with the login URL.
func beforeOutage(t *testing.T, f *fixture) (member, opener *browser, loginPath string, form []string) {
	t.Helper()
	member = newBrowser(t, f.h)
	if res := member.signInByLink(f.link(t, goPayload(), "go")); res.Header.Get("Location") != "/go" {
		t.Fatalf("member login → %q, want /go", res.Header.Get("Location"))
	}
	opener = newBrowser(t, f.h)
	loginPath = f.link(t, mainPayload(), "main")
	_, page := opener.loginPage(loginPath)
	if form = loginForm.FindStringSubmatch(page); form == nil {
		t.Fatal("no login form before the outage")
	}
	return member, opener, loginPath, form
}

// TestDatabaseDown: while the database does not answer, the link endpoints, the login URL,
// the pages and /healthz answer 503 with Retry-After and the code unavailable, so the
// gateway, the partner and the person know to try again. Before the change a link answered
// 500 internal_error without Retry-After, and a page took the browser for signed out.
func TestDatabaseDown(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, _, _ := db.open(t)
			f := newFixtureOn(t, "http://localhost:8080", dsn, nil)

			if res := serve(f.h, httptest.NewRequest(http.MethodGet, "/healthz", nil)); res.StatusCode != http.StatusOK ||
				res.Header.Get("Retry-After") != "" || body(t, res) != "ok\n" {
				t.Fatalf("GET /healthz with the database up = %d Retry-After %q, want 200 ok", res.StatusCode, res.Header.Get("Retry-After"))
			}
			member, opener, loginPath, form := beforeOutage(t, f)
			signer := newBrowser(t, f.h)
			_, signinPage := signer.get("/app/signin")
			csrf := csrfField.FindStringSubmatch(signinPage)
			if csrf == nil {
				t.Fatal("no sign-in form before the outage")
			}

			takeDown(t, f, db, dsn)

			unavailable := func(t *testing.T, what string, res *http.Response, b string) {
				t.Helper()
				if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "5" {
					t.Errorf("%s = %d Retry-After %q, want 503 with Retry-After 5", what, res.StatusCode, res.Header.Get("Retry-After"))
				}
				if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") && !strings.Contains(b, `<code id="code">unavailable</code>`) && !strings.Contains(b, "not possible right now") {
					t.Errorf("%s page does not say unavailable:\n%s", what, b)
				}
			}
			for _, endpoint := range []string{"url", "payload"} {
				res := serve(f.h, forwardRequest(t, endpoint, mainPayload(), "main", f.now))
				b := body(t, res)
				unavailable(t, "POST /partner/demo/"+endpoint, res, b)
				if endpoint == "url" {
					var p problemBody
					if err := json.Unmarshal([]byte(b), &p); err != nil || p.Code != "unavailable" || p.Status != 503 || !strings.HasPrefix(p.RequestID, "req-") ||
						res.Header.Get("Content-Type") != "application/problem+json" {
						t.Errorf("POST /partner/demo/url = %s %s, want problem+json unavailable with the request id", res.Header.Get("Content-Type"), b)
					}
				} else if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
					t.Errorf("POST /partner/demo/payload Content-Type = %q, want the HTML page", res.Header.Get("Content-Type"))
				}
			}
			res, b := opener.get(loginPath)
			unavailable(t, "GET /app/login", res, b)
			res, b = opener.post("/app/login", url.Values{"code": {form[1]}, "csrf": {form[2]}})
			unavailable(t, "POST /app/login", res, b)
			for _, path := range []string{"/go", "/go/workouts/1", "/app/signin"} {
				res, b = member.get(path)
				unavailable(t, "GET "+path+" signed in", res, b)
			}
			res, b = signer.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrf[1]}})
			unavailable(t, "POST /app/signin", res, b)
			res = serve(f.h, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			unavailable(t, "GET /healthz", res, "")
			if b := body(t, res); b != "database unavailable\n" {
				t.Errorf("GET /healthz body = %q, want %q", b, "database unavailable\n")
			}
		})
	}
}
