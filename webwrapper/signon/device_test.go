package signon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
)

// fakeService answers the device endpoints as the service does (the real one runs in
// integration/webwrapper): one session token may get a credential, each credential is
// used once, and a used one comes back refused.
type fakeService struct {
	mu       sync.Mutex
	fresh    string          // the session token that may get a credential
	valid    map[string]bool // credentials not used yet
	used     map[string]bool
	n        int
	requests []string // method, path, Authorization and body of each request
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var body map[string]string
	_ = json.NewDecoder(r.Body).Decode(&body)
	b, _ := json.Marshal(body)
	f.requests = append(f.requests, r.Method+" "+r.URL.String()+" "+r.Header.Get("Authorization")+" "+string(b))
	problem := func(status int, code string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"code":%q}`, code)
	}
	next := func() string {
		f.n++
		c := fmt.Sprintf("credential-%d", f.n)
		f.valid[c] = true
		return c
	}
	switch r.URL.Path {
	case "/app/device/credential":
		if r.Header.Get("Authorization") != "Bearer "+f.fresh {
			problem(http.StatusForbidden, "device_signon_refused")
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"credential":%q,"id":1}`, next())
	case "/app/device/signin":
		c := body["credential"]
		if !f.valid[c] || body["externalUser"] == "" || body["installation"] == "" {
			problem(http.StatusUnauthorized, "device_signon_invalid")
			return
		}
		delete(f.valid, c)
		f.used[c] = true
		http.SetCookie(w, &http.Cookie{Name: "pg_session", Value: "session-of-" + c, Path: "/", HttpOnly: true})
		fmt.Fprintf(w, `{"credential":%q}`, next())
	case "/app/device/signout":
		delete(f.valid, body["credential"])
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// TestDevice: a password sign-in gets a device sign-on, kept sealed; the next start
// exchanges it for a session and keeps the next one; a refused one is dropped and the
// user signs in with the password; forgetting ends it at the service. The secret goes in
// bodies only, never in a URL or the log.
func TestDevice(t *testing.T) {
	f := &fakeService{fresh: "fresh-session", valid: map[string]bool{}, used: map[string]bool{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var logs bytes.Buffer
	store := Open(filepath.Join(wintest.TempDir(t), FileName))
	d := &Device{Store: store, Client: &Client{Service: srv.URL}, Computer: "PC-17",
		Log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	acc := Link{AccountID: 7, Username: "instructor"}

	if got := d.SignIn(ctx, `CLINIC\asa`); got != nil {
		t.Fatalf("SignIn without a device sign-on = %v, want none", got)
	}
	d.Issued(ctx, `CLINIC\asa`, acc, "old-session") // refused: not a fresh sign-in
	d.Issued(ctx, `CLINIC\asa`, acc, "old-session") // not asked again
	d.Issued(ctx, `CLINIC\asa`, acc, "fresh-session")
	if _, secret, ok, err := store.Credential(`CLINIC\asa`); !ok || err != nil || secret != "credential-1" {
		t.Fatalf("after the sign-in the store holds %q, %v, %v; want credential-1", secret, ok, err)
	}
	d.Issued(ctx, `CLINIC\asa`, acc, "fresh-session") // held already: not asked again
	if n := len(f.requests); n != 2 {
		t.Errorf("the service was asked %d times, want 2 (a refused session once, the fresh one once):\n%s", n, strings.Join(f.requests, "\n"))
	}
	if !strings.Contains(f.requests[1], `Bearer fresh-session`) || !strings.Contains(f.requests[1], `"externalUser":"CLINIC\\asa"`) ||
		!strings.Contains(f.requests[1], `"computer":"PC-17"`) {
		t.Errorf("the issue request = %s; want the session as Bearer, the external user and the computer", f.requests[1])
	}

	cookies := d.SignIn(ctx, `clinic\ASA`)
	if SessionToken(cookies) != "session-of-credential-1" {
		t.Fatalf("SignIn = %v, want the session of credential-1", cookies)
	}
	if _, secret, _, _ := store.Credential(`CLINIC\asa`); secret != "credential-2" {
		t.Errorf("after the exchange the store holds %q, want the next one, credential-2", secret)
	}
	inst, _ := store.Installation()
	if !strings.Contains(f.requests[2], `"installation":"`+inst+`"`) {
		t.Errorf("the exchange = %s; want the installation %s", f.requests[2], inst)
	}

	// The service refuses it (revoked, expired, the password changed): dropped, the
	// link kept, and the next sign-in asks for a new one.
	f.mu.Lock()
	clear(f.valid)
	f.mu.Unlock()
	if got := d.SignIn(ctx, `CLINIC\asa`); got != nil {
		t.Errorf("SignIn with a refused credential = %v, want none", got)
	}
	if l, _, ok, _ := store.Credential(`CLINIC\asa`); ok || l.AccountID != 7 {
		t.Errorf("after a refusal: link %+v, credential %v; want the link without one", l, ok)
	}
	d.Issued(ctx, `CLINIC\asa`, acc, "fresh-session")
	if _, secret, _, _ := store.Credential(`CLINIC\asa`); secret != "credential-3" {
		t.Errorf("after signing in again the store holds %q, want credential-3", secret)
	}

	d.Forget(ctx, `CLINIC\asa`)
	if _, ok, _ := store.Get(`CLINIC\asa`); ok {
		t.Error("Forget kept the link")
	}
	if last := f.requests[len(f.requests)-1]; !strings.HasPrefix(last, "POST /app/device/signout ") || !strings.Contains(last, "credential-3") {
		t.Errorf("Forget's request = %s; want the sign-out of credential-3", last)
	}
	for _, r := range f.requests {
		if u := strings.Fields(r)[1]; strings.Contains(u, "credential") && u != "/app/device/credential" || strings.Contains(u, "?") {
			t.Errorf("a request carries something in its URL: %s", r)
		}
	}
	for _, secret := range []string{"credential-1", "credential-2", "credential-3", "fresh-session", "old-session", `CLINIC\asa`, "PC-17"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}
}

// TestForgetAll: turning RememberLoggedInUser off ends every device sign-on kept at the
// service, not only here, and removes every link, one without a device sign-on as well.
func TestForgetAll(t *testing.T) {
	f := &fakeService{valid: map[string]bool{"credential-a": true, "credential-b": true}, used: map[string]bool{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	store := Open(filepath.Join(wintest.TempDir(t), FileName))
	d := &Device{Store: store, Client: &Client{Service: srv.URL}, Computer: "PC-17"}
	for external, secret := range map[string]string{`CLINIC\asa`: "credential-a", `CLINIC\bo`: "credential-b"} {
		if err := store.SetCredential(external, Link{AccountID: 7, Username: "instructor"}, secret); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Remember(`CLINIC\cai`, Link{AccountID: 8, Username: "other"}); err != nil {
		t.Fatal(err)
	}

	if err := d.ForgetAll(context.Background()); err != nil {
		t.Fatalf("ForgetAll: %v", err)
	}
	if len(f.valid) != 0 {
		t.Errorf("after ForgetAll the service still accepts %v", f.valid)
	}
	if n := len(f.requests); n != 2 {
		t.Errorf("the service was asked %d times, want a sign-out of each device sign-on:\n%s", n, strings.Join(f.requests, "\n"))
	}
	for _, external := range []string{`CLINIC\asa`, `CLINIC\bo`, `CLINIC\cai`} {
		if l, ok, err := store.Get(external); ok || err != nil {
			t.Errorf("after ForgetAll %s is still linked: %+v, %v", external, l, err)
		}
	}
}
