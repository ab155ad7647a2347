package web

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deviceBody is what the test's wrapper installation sends besides the credential.
const deviceBinding = `"externalUser":"CLINIC\\asa-42","installation":"inst-0123456789abcdef","computer":"DESK-SECRET-7"`

// program posts JSON to a device endpoint as the wrapper does: no cookie, no Origin;
// edit changes the request before it is sent.
func program(t *testing.T, h http.Handler, path, payload string, edit ...func(*http.Request)) (*http.Response, []byte) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://localhost:8080"+path, strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	for _, e := range edit {
		e(r)
	}
	res := serve(h, r)
	return res, []byte(body(t, res))
}

// bearer sets Authorization to the session token tok.
func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// sessionToken is the session cookie the browser holds.
func (b *browser) sessionToken() string {
	u, _ := url.Parse("http://localhost:8080/")
	for _, c := range b.jar.Cookies(u) {
		if c.Name == sessionCookie {
			return c.Value
		}
	}
	b.t.Fatal("the browser holds no session cookie")
	return ""
}

// credential reads the credential of a device endpoint's answer.
func credential(t *testing.T, res *http.Response, b []byte, status int) string {
	t.Helper()
	var out struct {
		Credential string `json:"credential"`
	}
	if err := json.Unmarshal(b, &out); err != nil || res.StatusCode != status || len(out.Credential) != 43 {
		t.Fatalf("answer = %d %s, want %d with a credential", res.StatusCode, b, status)
	}
	return out.Credential
}

// issueDevice asks for a device sign-on with the instructor's session token.
func issueDevice(t *testing.T, w *apiWorld) string {
	t.Helper()
	res, b := program(t, w.f.h, "/app/device/credential", "{"+deviceBinding+"}", bearer(w.instructor.sessionToken()))
	return credential(t, res, b, http.StatusCreated)
}

// deviceSignIn exchanges cred as the wrapper does and returns the answer.
func deviceSignIn(t *testing.T, h http.Handler, cred string) (*http.Response, []byte) {
	t.Helper()
	return program(t, h, "/app/device/signin", `{"credential":"`+cred+`",`+deviceBinding+`}`)
}

// TestDeviceSignOn: the wrapper's round: a fresh password sign-in's session token (never
// the cookie) gets a credential; the credential alone, with no cookie, gets a session
// cookie the API takes and the next credential; the used one presented again ends the
// desktop's sign-on and its session.
func TestDeviceSignOn(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, _, _ := db.open(t)
			w := newAPIWorld(t, dsn)
			w.instructor.t = t
			h := w.f.h

			res, b := program(t, h, "/app/device/credential", "{"+deviceBinding+"}")
			problemOf(t, res, b, http.StatusUnauthorized, "session_required")
			if res.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			// the page's own cookie, with the CSRF token and the site's Origin, is not enough
			res, b = w.instructor.call(http.MethodPost, "/app/device/credential", "{"+deviceBinding+"}")
			problemOf(t, res, b, http.StatusUnauthorized, "session_required")
			res, b = program(t, h, "/app/device/credential", "{"+deviceBinding+"}", bearer(w.instructor.sessionToken()),
				func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") })
			problemOf(t, res, b, http.StatusForbidden, "origin_forbidden")
			res, b = program(t, h, "/app/device/credential", `{"externalUser":"","installation":"short","computer":"a\u0007"}`, bearer(w.instructor.sessionToken()))
			if p := problemOf(t, res, b, http.StatusBadRequest, "invalid_argument"); len(p.Fields) != 3 {
				t.Errorf("fields = %+v, want externalUser, installation and computer", p.Fields)
			}

			first := issueDevice(t, w)
			res, b = deviceSignIn(t, h, first)
			second := credential(t, res, b, http.StatusOK)
			desk := newBrowser(t, h)
			desk.jar.SetCookies(&url.URL{Scheme: "http", Host: "localhost:8080", Path: "/"}, res.Cookies())
			deskAPI := &apiClient{browser: desk}
			if st := deskAPI.status(); st["signedIn"] != true || st["account"].(map[string]any)["username"] != "instructor" {
				t.Fatalf("status with the device session = %v, want the instructor signed in", st)
			}

			res, b = deviceSignIn(t, h, first)
			problemOf(t, res, b, http.StatusUnauthorized, "device_signon_invalid")
			res, b = deviceSignIn(t, h, second)
			problemOf(t, res, b, http.StatusUnauthorized, "device_signon_invalid")
			if st := deskAPI.status(); st["signedIn"] != false {
				t.Errorf("status of the device session after reuse = %v, want signed out", st)
			}
			if st := w.instructor.status(); st["signedIn"] != true {
				t.Errorf("the password sign-in after reuse = %v, want it kept", st)
			}

			// a session a device sign-on started gets no credential of its own
			res, b = program(t, h, "/app/device/credential", "{"+deviceBinding+"}", bearer(desk.sessionToken()))
			problemOf(t, res, b, http.StatusUnauthorized, "session_required")
		})
	}
}

// TestDeviceSignOnFreshOnly: ten minutes after the password sign-in its session gets no
// device sign-on, nor does a session the device sign-on started.
func TestDeviceSignOnFreshOnly(t *testing.T) {
	w := newAPIWorld(t, t.TempDir()+"/app.db")
	w.instructor.t = t
	cred := issueDevice(t, w)
	res, b := deviceSignIn(t, w.f.h, cred)
	credential(t, res, b, http.StatusOK)
	var tok string
	for _, c := range res.Cookies() {
		if c.Name == sessionCookie {
			tok = c.Value
		}
	}
	res, b = program(t, w.f.h, "/app/device/credential", "{"+deviceBinding+"}", bearer(tok))
	problemOf(t, res, b, http.StatusForbidden, "device_signon_refused")
	w.f.now = w.f.now.Add(10*time.Minute + time.Second)
	res, b = program(t, w.f.h, "/app/device/credential", "{"+deviceBinding+"}", bearer(w.instructor.sessionToken()))
	problemOf(t, res, b, http.StatusForbidden, "device_signon_refused")
}

// TestDeviceSignOnList: the instructor sees the desktop (external user, computer, last
// use) and revokes it; its credential is then refused. The wrapper's own sign-out ends
// another. Nothing of it reaches the log: no credential, external user or computer.
func TestDeviceSignOnList(t *testing.T) {
	w := newAPIWorld(t, t.TempDir()+"/app.db")
	var logs strings.Builder
	h, err := New(Config{Store: w.f.st, UpstreamSecret: upstreamSecret, AppSecret: appSecret, PublicURL: "http://localhost:8080",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Now: func() time.Time { return w.f.now }})
	if err != nil {
		t.Fatal(err)
	}
	c := w.instructor
	c.t, c.h, w.f.h = t, h, h

	cred := issueDevice(t, w)
	res, b := deviceSignIn(t, h, cred)
	cred = credential(t, res, b, http.StatusOK)
	res, b = c.call(http.MethodGet, "/app/api/me/devices", "")
	var list struct {
		Devices []deviceJSON `json:"devices"`
	}
	if err := json.Unmarshal(b, &list); err != nil || res.StatusCode != http.StatusOK || len(list.Devices) != 1 {
		t.Fatalf("GET /app/api/me/devices = %d %s, want one desktop", res.StatusCode, b)
	}
	d := list.Devices[0]
	if d.ExternalUser != `CLINIC\asa-42` || d.Computer != "DESK-SECRET-7" || d.LastUsedAt != timeOut(w.f.now) || d.ExpiresAt != timeOut(w.f.now.Add(30*24*time.Hour)) {
		t.Errorf("desktop = %+v, want CLINIC\\asa-42 on DESK-SECRET-7 used now, ending in 30 days", d)
	}
	id := strconv.FormatInt(d.ID, 10)
	res, b = c.call(http.MethodPost, "/app/api/me/devices/"+id+"/revoke", "{}", func(r *http.Request) { r.Header.Set("X-CSRF-Token", "forged") })
	problemOf(t, res, b, http.StatusForbidden, "csrf_invalid")
	res, b = c.call(http.MethodPost, "/app/api/me/devices/"+strconv.FormatInt(d.ID+1000, 10)+"/revoke", "{}")
	problemOf(t, res, b, http.StatusNotFound, "not_found")
	if res, b = c.call(http.MethodPost, "/app/api/me/devices/"+id+"/revoke", "{}"); res.StatusCode != http.StatusOK {
		t.Fatalf("revoke = %d %s", res.StatusCode, b)
	}
	res, b = deviceSignIn(t, h, cred)
	problemOf(t, res, b, http.StatusUnauthorized, "device_signon_invalid")
	if _, b = c.call(http.MethodGet, "/app/api/me/devices", ""); !strings.Contains(string(b), `"devices":[]`) {
		t.Errorf("list after revoke = %s, want none", b)
	}

	cred = issueDevice(t, w)
	if res, b = program(t, h, "/app/device/signout", `{"credential":"`+cred+`"}`); res.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /app/device/signout = %d %s, want 204", res.StatusCode, b)
	}
	res, b = deviceSignIn(t, h, cred)
	problemOf(t, res, b, http.StatusUnauthorized, "device_signon_invalid")

	for _, secret := range []string{cred, "asa-42", "DESK-SECRET-7", c.sessionToken()} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "outcome=device_signon_invalid") || !strings.Contains(logs.String(), "outcome=revoked") {
		t.Errorf("the log lacks the refusal or the revocation:\n%s", logs.String())
	}
}
