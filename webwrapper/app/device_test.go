package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/engine/enginetest"
	"github.com/partnergate/partnergate/webwrapper/signon"
)

// deviceService stands in for the service's device endpoints: it records what it was
// asked and issues credential-<n> to the session fresh-session.
type deviceService struct {
	mu       sync.Mutex
	issued   int
	signins  int
	signouts []string
}

func (f *deviceService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var body map[string]string
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch r.URL.Path {
	case "/app/device/credential":
		if r.Header.Get("Authorization") != "Bearer fresh-session" {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"code":"device_signon_refused"}`)
			return
		}
		f.issued++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"credential":"credential-%d","id":1}`, f.issued)
	case "/app/device/signin":
		// The newest credential is exchanged for a session and the next credential.
		if body["credential"] != fmt.Sprintf("credential-%d", f.issued) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"code":"device_signon_invalid"}`)
			return
		}
		f.issued++
		f.signins++
		http.SetCookie(w, &http.Cookie{Name: "pg_session", Value: fmt.Sprintf("resumed-%d", f.signins), Path: "/"})
		fmt.Fprintf(w, `{"credential":"credential-%d"}`, f.issued)
	case "/app/device/signout":
		f.signouts = append(f.signouts, body["credential"])
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// waitCredential waits until links holds want as external's device sign-on ("" none).
func waitCredential(t *testing.T, links *signon.Store, external, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, got, _, _ := links.Credential(external); got == want {
			return
		}
	}
	_, got, _, err := links.Credential(external)
	t.Fatalf("device sign-on of %s = %q (%v), want %q", external, got, err, want)
}

// signedInWithDevice starts the wrapper's app with a device sign-on for DOMAIN\asa on
// computer PC-17, against a service that issues one (deviceService), and signs the page in
// with a fresh session: the link then holds credential-1.
func signedInWithDevice(t *testing.T) (*deviceService, *signon.Store, *App, *enginetest.Engine) {
	t.Helper()
	f := &deviceService{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	links := signon.Open(filepath.Join(wintest.TempDir(t), signon.FileName))
	device := &signon.Device{Store: links, Client: &signon.Client{Service: srv.URL}, Computer: "PC-17"}
	a, eng := start(t, Options{Links: links, Device: device, External: `DOMAIN\asa`, Wait: 5 * time.Second})
	eng.SetCookies([]*http.Cookie{{Name: "pg_csrf", Value: "x"}, {Name: "pg_session", Value: "fresh-session"}})
	signIn(eng, 7)
	waitCredential(t, links, `DOMAIN\asa`, "credential-1")
	return f, links, a, eng
}

// TestDeviceSignOnIssued: the page's sign-in of a linked external user gets the device
// sign-on with the window's session token, once; the page's sign-out ends it at the
// service and forgets it, and so does close.
func TestDeviceSignOnIssued(t *testing.T) {
	f, links, a, eng := signedInWithDevice(t)
	signIn(eng, 7) // a page loaded again: the device sign-on is held already
	waitState(t, a, true)
	eng.Emit("signedOut", map[string]any{})
	waitCredential(t, links, `DOMAIN\asa`, "")
	if _, ok, _ := links.Get(`DOMAIN\asa`); ok {
		t.Error("the page's sign-out kept the link")
	}
	f.mu.Lock()
	if f.issued != 1 || len(f.signouts) != 1 || f.signouts[0] != "credential-1" {
		t.Errorf("the service issued %d and signed out %q; want one issued and credential-1 signed out", f.issued, f.signouts)
	}
	f.mu.Unlock()

	signIn(eng, 7)
	waitCredential(t, links, `DOMAIN\asa`, "credential-2")
	eng.Handle("signOut", func([]any) (any, error) { return nil, nil })
	if _, _, err := a.Do(context.Background(), cmd(t, "close", nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := links.Get(`DOMAIN\asa`); ok {
		t.Error("close kept the link")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.signouts) != 2 || f.signouts[1] != "credential-2" {
		t.Errorf("the service signed out %q; want credential-2 at close", f.signouts)
	}
}

// TestSignOutRunsOn: the tray's "Sign out" signs the page out and ends the device
// sign-on at the service with the link, and the wrapper runs on.
func TestSignOutRunsOn(t *testing.T) {
	f, links, a, eng := signedInWithDevice(t)
	eng.Handle("signOut", func([]any) (any, error) { return nil, nil })
	a.SignOut(context.Background())
	if _, ok, _ := links.Get(`DOMAIN\asa`); ok {
		t.Error("Sign out kept the link")
	}
	calls := eng.Calls()
	if len(calls) == 0 || calls[len(calls)-1].Fn != "signOut" {
		t.Errorf("page calls = %+v, want signOut last", calls)
	}
	f.mu.Lock()
	if len(f.signouts) != 1 || f.signouts[0] != "credential-1" {
		t.Errorf("the service signed out %q; want credential-1", f.signouts)
	}
	f.mu.Unlock()
	select {
	case <-a.Done():
		t.Fatal("the wrapper ended at Sign out")
	default:
	}
	if out, _, err := a.Do(context.Background(), cmd(t, "version", nil)); err != nil || string(out) != "2.1.5.0" {
		t.Errorf("version after Sign out = %q, %v", out, err)
	}
}

// TestSessionEndedSignsInAgain: a session that ends by itself (the page's signedOut with
// reason "ended": the wrapper was left open past the session's hours) keeps the link and
// its device sign-on, which signs the window in again at once, the start page opened on
// the new session; a session that ends again within a minute is left to the password;
// the person's own sign-out (reason "signout") still ends the device sign-on.
func TestSessionEndedSignsInAgain(t *testing.T) {
	f, links, a, eng := signedInWithDevice(t)

	eng.Emit("signedOut", map[string]any{"reason": "ended"})
	waitCredential(t, links, `DOMAIN\asa`, "credential-2")
	for deadline := time.Now().Add(5 * time.Second); len(eng.Navigated()) == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the window is opened again right after the credential is kept
	}
	if _, ok, _ := links.Get(`DOMAIN\asa`); !ok {
		t.Error("a session that ended by itself ended the link")
	}
	if got := signon.SessionToken(mustCookies(t, eng)); got != "resumed-1" {
		t.Errorf("the window's session after it ended = %q, want the device sign-on's resumed-1", got)
	}
	if nav := eng.Navigated(); len(nav) != 1 || nav[0] != "http://app/" {
		t.Errorf("navigated %q, want the start page opened again", nav)
	}
	signIn(eng, 7)
	waitState(t, a, true)

	// Ended again at once: not signed in again, the device sign-on kept for the next start.
	eng.Emit("signedOut", map[string]any{"reason": "ended"})
	signIn(eng, 7) // events are handled in order: once this one is, so is the signedOut
	waitState(t, a, true)
	f.mu.Lock()
	if f.signins != 1 || len(f.signouts) != 0 {
		t.Errorf("after a second end within a minute: %d device sign-ins, sign-outs %q; want 1 and none", f.signins, f.signouts)
	}
	f.mu.Unlock()
	waitCredential(t, links, `DOMAIN\asa`, "credential-2")

	eng.Emit("signedOut", map[string]any{"reason": "signout"})
	waitCredential(t, links, `DOMAIN\asa`, "")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.signouts) != 1 || f.signouts[0] != "credential-2" {
		t.Errorf("the person's sign-out signed out %q at the service, want credential-2", f.signouts)
	}
}

func mustCookies(t *testing.T, eng interface {
	Cookies(context.Context) ([]*http.Cookie, error)
}) []*http.Cookie {
	t.Helper()
	c, err := eng.Cookies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
