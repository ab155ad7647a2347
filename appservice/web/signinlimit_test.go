package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
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

// recordWaits replaces the sleep of the fixtures' sign-ins with one that records each wait
// and returns at once, and returns a function that reports the waits so far. With advance,
// a fixture's clock moves on by each wait, as time does for attempts one after the other.
func recordWaits(advance bool, fs ...*fixture) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	for _, f := range fs {
		f.h.signIns.sleep = func(_ context.Context, d time.Duration) bool {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, d)
			if advance {
				f.now = f.now.Add(d)
			}
			return true
		}
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(waits)
	}
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
	waits := recordWaits(false, f)
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
	if slept := waits(); len(slept) != 1 || slept[0] <= 0 || slept[0] > signInMaxDelay {
		t.Errorf("delays before the owner's check = %v, want one delay in (0, %v]", slept, signInMaxDelay)
	}
}

// TestSignInTurnsAcrossAddresses is issue 34's finding: guesses at one login name from
// many addresses at once each waited its own delay and then ran side by side, so the delay
// did not slow them. Past the login name's free attempts they take turns: each waits for
// the turn before it to end plus its own delay, and one whose turn is further away than the
// longest delay is refused. The clock stands still, as when every attempt arrives at once.
func TestSignInTurnsAcrossAddresses(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	waits := recordWaits(false, f)
	for i := range signInPerLogin {
		if res, _ := signInAttempt(t, f, "192.0.2."+strconv.Itoa(i+1), "instructor", "wrong"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("attempt %d = %d, want 401", i+1, res.StatusCode)
		}
	}
	statuses := make(chan int, 6)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _ := signInAttempt(t, f, "198.51.100."+strconv.Itoa(i+1), "instructor", "wrong")
			statuses <- res.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	refused := 0
	for st := range statuses {
		if st == http.StatusTooManyRequests {
			refused++
		}
	}
	got := waits()
	slices.Sort(got)
	// The turns end 250 ms, 750 ms, 1.75 s and 3.75 s from now; the next would be 7.75 s.
	want := []time.Duration{250 * time.Millisecond, 750 * time.Millisecond, 1750 * time.Millisecond, 3750 * time.Millisecond}
	if !slices.Equal(got, want) || refused != 2 {
		t.Errorf("six guesses at once from six addresses: waits %v and %d refused, want waits %v (one at a time) and 2 refused", got, refused, want)
	}
}

// TestSignInLimitsSharedByInstances is issue 34's finding with several app service
// instances behind the gateway (docs/operations.md): each kept its own counts, so a
// guesser got every limit once per instance. Two instances on one database now share
// them: the per-address bound and the login name's turns.
func TestSignInLimitsSharedByInstances(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, _, _ := db.open(t)
			a := newFixtureOn(t, "http://localhost:8080", dsn, nil)
			b := newFixtureOn(t, "http://localhost:8080", dsn, nil)
			instances := []*fixture{a, b}
			for i := range signInPerAddress {
				if res, _ := signInAttempt(t, instances[i%2], "198.51.100.7", "user-"+strconv.Itoa(i), "wrong"); res.StatusCode != http.StatusUnauthorized {
					t.Fatalf("attempt %d = %d, want 401", i+1, res.StatusCode)
				}
			}
			for _, f := range instances {
				if res, _ := signInAttempt(t, f, "198.51.100.7", "instructor", "pass-word-1"); res.StatusCode != http.StatusTooManyRequests {
					t.Errorf("address's attempt %d, half of them counted by the other instance = %d, want 429", signInPerAddress+1, res.StatusCode)
				}
			}

			waits := recordWaits(false, instances...)
			for i := range signInPerLogin + 3 {
				signInAttempt(t, instances[i%2], "192.0.2."+strconv.Itoa(i+1), "instructor", "wrong")
			}
			want := []time.Duration{250 * time.Millisecond, 750 * time.Millisecond, 1750 * time.Millisecond}
			if got := waits(); !slices.Equal(got, want) {
				t.Errorf("waits of a login name's guesses over two instances = %v, want %v: one queue of turns", got, want)
			}
		})
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

// signInAttempt posts a sign-in from addr (as the gateway's X-Forwarded-For) with a fresh
// browser and returns the answer.
func signInAttempt(t *testing.T, f *fixture, addr, login, password string) (*http.Response, string) {
	t.Helper()
	b := newBrowser(t, f.h)
	_, page := b.get("/app/signin")
	r := httptest.NewRequest(http.MethodPost, "/app/signin", strings.NewReader(url.Values{
		"login": {login}, "password": {password}, "csrf": {csrfField.FindStringSubmatch(page)[1]}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Forwarded-For", "203.0.113.250, "+addr) // the first entry is the client's own claim
	res := b.do(r)
	return res, body(t, res)
}

// TestSignInRateLimited: password guesses are bounded per address and per login name, with
// a readable page and Retry-After, and allowed again once the window has passed.
func TestSignInRateLimited(t *testing.T) {
	t.Run("per address", func(t *testing.T) {
		f := newFixture(t, "http://localhost:8080")
		for i := range signInPerAddress {
			if res, _ := signInAttempt(t, f, "198.51.100.7", "user-"+strconv.Itoa(i), "wrong"); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("attempt %d = %d, want 401", i+1, res.StatusCode)
			}
		}
		res, page := signInAttempt(t, f, "198.51.100.7", "instructor", "pass-word-1")
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(page, "Too many sign-in attempts") {
			t.Errorf("attempt over the bound = %d, Retry-After %q, want 429 with a readable page:\n%s", res.StatusCode, res.Header.Get("Retry-After"), page)
		}
		if res, _ := signInAttempt(t, f, "198.51.100.8", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
			t.Errorf("another address = %d, want 303 (signed in)", res.StatusCode)
		}
		f.now = f.now.Add(signInWindow)
		if res, _ := signInAttempt(t, f, "198.51.100.7", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
			t.Errorf("after the window = %d, want 303 (signed in)", res.StatusCode)
		}
	})
	t.Run("per login from one address", func(t *testing.T) {
		f := newFixture(t, "http://localhost:8080")
		for i := range signInPerLogin {
			if res, _ := signInAttempt(t, f, "192.0.2.1", "Instructor", "wrong"); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("attempt %d = %d, want 401", i+1, res.StatusCode)
			}
		}
		if res, _ := signInAttempt(t, f, "192.0.2.1", "instructor", "pass-word-1"); res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("login over its bound from the same address = %d, want 429", res.StatusCode)
		}
	})
	t.Run("per login from many addresses: growing delays, no refusal", func(t *testing.T) {
		f := newFixture(t, "http://localhost:8080")
		waits := recordWaits(true, f) // the attempts come one after the other
		for i := range signInPerLogin + 6 {
			if res, _ := signInAttempt(t, f, "192.0.2."+strconv.Itoa(i+1), "Instructor", "wrong"); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("attempt %d = %d, want 401", i+1, res.StatusCode)
			}
		}
		want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
		if got := waits(); !slices.Equal(got, want) {
			t.Errorf("delays before the checks = %v, want %v (none for the first %d)", got, want, signInPerLogin)
		}
		if res, _ := signInAttempt(t, f, "192.0.2.200", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
			t.Errorf("right password after the guesses = %d, want 303 (signed in after a delay)", res.StatusCode)
		}
		f.now = f.now.Add(signInWindow)
		before := len(waits())
		if res, _ := signInAttempt(t, f, "192.0.2.201", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther || len(waits()) != before {
			t.Errorf("after the window = %d with delays %v, want 303 without delay", res.StatusCode, waits()[before:])
		}
	})
}

// TestSignInConcurrencyBounded: when every password-check slot is taken, a sign-in waits
// briefly and then gets a readable 503, without hashing.
func TestSignInConcurrencyBounded(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	f.h.signIns.wait = 50 * time.Millisecond
	for range cap(f.h.signIns.slots) {
		f.h.signIns.slots <- struct{}{}
	}
	res, page := signInAttempt(t, f, "198.51.100.9", "instructor", "pass-word-1")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(page, "Sign-in is busy") {
		t.Errorf("sign-in with every slot taken = %d, Retry-After %q, want 503 with a readable page:\n%s", res.StatusCode, res.Header.Get("Retry-After"), page)
	}
	f.h.signIns.release()
	if res, _ := signInAttempt(t, f, "198.51.100.9", "instructor", "pass-word-1"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-in with a free slot = %d, want 303", res.StatusCode)
	}
	if got := len(f.h.signIns.slots); got != cap(f.h.signIns.slots)-1 {
		t.Errorf("slots taken after the sign-in = %d, want %d: the slot is given back", got, cap(f.h.signIns.slots)-1)
	}
}

func TestClientAddr(t *testing.T) {
	for _, tt := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"connection only", "192.0.2.1:5000", nil, "192.0.2.1"},
		{"gateway appended", "127.0.0.1:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"client's claim before it", "127.0.0.1:5000", []string{"10.0.0.1, 198.51.100.1"}, "198.51.100.1"},
		{"two header lines", "127.0.0.1:5000", []string{"10.0.0.1", "198.51.100.1"}, "198.51.100.1"},
		{"garbage", "127.0.0.1:5000", []string{"nonsense"}, "127.0.0.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientAddr(r); got != tt.want {
				t.Errorf("clientAddr(%q, %q) = %q, want %q", tt.remote, tt.xff, got, tt.want)
			}
		})
	}
}

// TestSignInConcurrencyConfigured: the bound is the configured one (cmd/appservice's
// -signin-concurrency), and the default when unset.
func TestSignInConcurrencyConfigured(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, tt := range []struct{ set, want int }{{0, DefaultSignInConcurrency}, {5, 5}} {
		cfg := f.h.cfg
		cfg.SignInConcurrency = tt.set
		h, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := cap(h.signIns.slots); got != tt.want {
			t.Errorf("SignInConcurrency %d: %d password checks at once, want %d", tt.set, got, tt.want)
		}
	}
}
