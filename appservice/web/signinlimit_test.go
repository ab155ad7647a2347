package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// signInFrom posts a sign-in with b's CSRF pair from addr (as the gateway's X-Forwarded-For).
func signInFrom(t *testing.T, b *browser, token, addr, login, password string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/app/signin", strings.NewReader(url.Values{
		"login": {login}, "password": {password}, "csrf": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-For", addr)
	res := b.do(r)
	body(t, res)
	return res
}

// TestSignInFloodDoesNotShutSignIn: one address posting 10,000 attempts with made-up login
// names within a minute (one CSRF pair, reused) must not close password sign-in for
// everyone else; the flooding address itself is refused.
func TestSignInFloodDoesNotShutSignIn(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)
	_, page := b.get("/app/signin")
	token := csrfField.FindStringSubmatch(page)[1]
	refused := 0
	for i := range 10000 {
		if signInFrom(t, b, token, "198.51.100.66", "made-up-"+strconv.Itoa(i), "x").StatusCode == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused < 10000-signInPerAddress {
		t.Errorf("flooding address refused %d of 10000 attempts, want all but %d", refused, signInPerAddress)
	}
	other := newBrowser(t, f.h)
	_, page = other.get("/app/signin")
	if res := signInFrom(t, other, csrfField.FindStringSubmatch(page)[1], "192.0.2.10", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-in from another address after the flood = %d, want 303 (signed in)", res.StatusCode)
	}
}

// TestSignInStrangerCannotLockAccount: ten wrong passwords a minute for "instructor" from
// one address must not refuse the owner's right password from another address.
func TestSignInStrangerCannotLockAccount(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	var mu sync.Mutex
	var slept []time.Duration
	f.h.signIns.sleep = func(_ context.Context, d time.Duration) bool {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
		return true
	}
	for i := range signInPerLogin {
		if res, _ := signInAttempt(t, f, "198.51.100.7", "instructor", "wrong"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("stranger's attempt %d = %d, want 401", i+1, res.StatusCode)
		}
	}
	if res, _ := signInAttempt(t, f, "192.0.2.44", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("owner's right password from another address = %d, want 303 (signed in)", res.StatusCode)
	}
	if res, _ := signInAttempt(t, f, "198.51.100.7", "instructor", "wrong"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("stranger's attempt over the account-and-address bound = %d, want 429", res.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(slept) != 1 || slept[0] <= 0 || slept[0] > signInMaxDelay {
		t.Errorf("delays before the owner's check = %v, want one delay in (0, %v]", slept, signInMaxDelay)
	}
}

// TestSignInGuardMemory: the limiter's state is bounded per address and in all. A refused
// attempt creates nothing, and a full table drops its oldest windows instead of refusing
// everyone.
func TestSignInGuardMemory(t *testing.T) {
	now := testNow
	g := newSignInGuard(1, func() time.Time { return now })
	for i := range 1000 {
		g.allow("198.51.100.1", "name-"+strconv.Itoa(i))
	}
	if got, want := len(g.windows), 1+2*signInPerAddress; got != want {
		t.Errorf("windows after 1000 attempts from one address = %d, want %d (refused attempts create none)", got, want)
	}

	g.maxKeys = 10
	for i := range 20 {
		now = now.Add(time.Millisecond)
		if ok, _, _ := g.allow("192.0.2."+strconv.Itoa(i), "x"); !ok {
			t.Fatalf("attempt from a new address %d refused with a full table", i)
		}
	}
	if len(g.windows) > g.maxKeys || g.order.Len() != len(g.windows) {
		t.Errorf("windows = %d (list %d), want at most %d", len(g.windows), g.order.Len(), g.maxKeys)
	}
	if g.windows["a\x00192.0.2.0"] != nil || g.windows["a\x00192.0.2.19"] == nil {
		t.Errorf("the oldest window was kept or the newest dropped")
	}
}

func TestAddrKey(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"192.0.2.1", "192.0.2.1"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::2", "2001:db8:1:2::/64"},
		{"not an address", "not an address"},
	} {
		if got := addrKey(tt.in); got != tt.want {
			t.Errorf("addrKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
