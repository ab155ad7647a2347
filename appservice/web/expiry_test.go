package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/problem"
)

// TestPendingSessionExpiresAfter15Minutes: a first-time employee's pending session still
// greets and leads to the link question at 14:59; at 15:01 it is gone, and signing in
// then links nothing.
func TestPendingSessionExpiresAfter15Minutes(t *testing.T) {
	for _, tt := range []struct {
		after   time.Duration
		greeted bool
		landing string
	}{
		{14*time.Minute + 59*time.Second, true, "/app/link"},
		{15*time.Minute + 1*time.Second, false, "/app"},
	} {
		t.Run(tt.after.String(), func(t *testing.T) {
			f := newFixture(t, "http://localhost:8080")
			b := newBrowser(t, f.h)
			if res := b.signInByLink(f.link(t, mainPayload(), "main")); res.Header.Get("Location") != "/app/signin" {
				t.Fatalf("first-sight login → %q, want /app/signin", res.Header.Get("Location"))
			}
			f.now = f.now.Add(tt.after)
			_, page := b.get("/app/signin")
			if got := strings.Contains(page, `id="first-visit"`); got != tt.greeted {
				t.Errorf("sign-in page greets the employee after %v: %v, want %v", tt.after, got, tt.greeted)
			}
			res, _ := b.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
			if res.Header.Get("Location") != tt.landing {
				t.Errorf("sign-in after %v → %q, want %q", tt.after, res.Header.Get("Location"), tt.landing)
			}
		})
	}
}

// TestLoginCodeDeadAfterItsLifetime: a code whose page was opened in time but that was not
// exchanged within its minute is dead, also when the person took that long to answer
// the question of a browser new to the account; it works once within it.
func TestLoginCodeDeadAfterItsLifetime(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	path := f.link(t, goPayload(), "go")
	b := newBrowser(t, f.h)
	_, page := b.get(path)
	m := askForm.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no question:\n%s", page)
	}
	f.now = f.now.Add(60 * time.Second)
	res, page := b.post("/app/login", url.Values{"code": {m[1]}, "csrf": {m[2]}, "action": {"continue"}})
	if res.StatusCode != http.StatusGone || !strings.Contains(page, string(problem.CodeLoginCodeExpired)) {
		t.Errorf("exchange at 60s = %d, want 410 %s", res.StatusCode, string(problem.CodeLoginCodeExpired))
	}

	path = f.link(t, goPayload(), "go")
	f.now = f.now.Add(59 * time.Second)
	if res := b.signInByLink(path); res.Header.Get("Location") != "/go" {
		t.Errorf("exchange at 59s → %q, want /go", res.Header.Get("Location"))
	}
	if res := newBrowser(t, f.h).signInByLink(path); res.StatusCode != http.StatusGone {
		t.Errorf("second exchange = %d, want 410 (single use)", res.StatusCode)
	}
}
