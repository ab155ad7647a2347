package linktoken

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnergate/partnergate/problem"
)

// fakeClock is the injected clock of the cooldown and staleness rules.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// jwksServer serves a key set that the test can change, break or hold back.
type jwksServer struct {
	*httptest.Server
	fetches atomic.Int64

	mu     sync.Mutex
	body   []byte
	status int
	header http.Header
	// hold, when set, blocks each request until it is closed; arrived receives a value
	// when a held request has arrived.
	hold    chan struct{}
	arrived chan struct{}
}

func newJWKSServer(t *testing.T, body []byte) *jwksServer {
	s := &jwksServer{body: body, status: http.StatusOK, header: http.Header{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		hold, arrived := s.hold, s.arrived
		s.mu.Unlock()
		if hold != nil {
			if arrived != nil {
				arrived <- struct{}{}
			}
			<-hold
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for k, v := range s.header {
			w.Header()[k] = v
		}
		if etag := s.header.Get("ETag"); etag != "" && r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.WriteHeader(s.status)
		w.Write(s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(status int, body []byte) {
	s.mu.Lock()
	s.status, s.body = status, body
	s.mu.Unlock()
}

// startRemote starts a source on srv with a fake clock and returns it with its events.
func startRemote(t *testing.T, srv *jwksServer, cfg RemoteConfig) (*RemoteKeys, *fakeClock, chan FetchEvent) {
	t.Helper()
	clock := &fakeClock{now: testNow}
	events := make(chan FetchEvent, 100)
	cfg.URL = srv.URL + "/.well-known/jwks.json"
	cfg.Now = clock.Now
	cfg.OnFetch = func(ev FetchEvent) { events <- ev }
	r, err := NewRemoteKeys(cfg)
	if err != nil {
		t.Fatalf("NewRemoteKeys: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.Start(ctx)
	return r, clock, events
}

// nextEvent waits for the next fetch outcome; the timeout only keeps a broken test from
// hanging.
func nextEvent(t *testing.T, events chan FetchEvent) FetchEvent {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no fetch event")
		return FetchEvent{}
	}
}

func setA(t *testing.T) []byte {
	k := keys(t)
	return jwksJSON(t, jwkJSON(t, &k.RSA.PublicKey, "a", "", nil))
}

func setAB(t *testing.T) []byte {
	k := keys(t)
	return jwksJSON(t, jwkJSON(t, &k.RSA.PublicKey, "a", "", nil), jwkJSON(t, &k.EC.PublicKey, "b", "", nil))
}

func TestRemoteKeysFirstFetchInBackground(t *testing.T) {
	srv := newJWKSServer(t, setA(t))
	srv.hold, srv.arrived = make(chan struct{}), make(chan struct{}, 10)
	r, _, events := startRemote(t, srv, RemoteConfig{})
	<-srv.arrived // the first fetch is under way and held

	if _, err := r.Key(context.Background(), "a"); CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("Key(a) during the first fetch = %v, want %q", err, problem.CodeKeysUnavailable)
	}
	srv.mu.Lock()
	close(srv.hold)
	srv.hold = nil
	srv.mu.Unlock()
	if ev := nextEvent(t, events); ev.Err != nil || ev.Reason != FetchStart || ev.Keys != 1 {
		t.Fatalf("first fetch = %+v, want a start fetch with 1 key", ev)
	}
	if k, err := r.Key(context.Background(), "a"); err != nil || k.KeyID() != "a" {
		t.Errorf("Key(a) after the first fetch = %v, %v, want the key", k, err)
	}
}

func TestRemoteKeysNotStarted(t *testing.T) {
	r, err := NewRemoteKeys(RemoteConfig{URL: "https://keys.example/jwks.json"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Key(context.Background(), "a"); CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("Key() before Start = %v, want %q", err, problem.CodeKeysUnavailable)
	}
}

func TestRemoteKeysRotation(t *testing.T) {
	srv := newJWKSServer(t, setA(t))
	r, _, events := startRemote(t, srv, RemoteConfig{})
	nextEvent(t, events)
	srv.set(http.StatusOK, setAB(t))

	k, err := r.Key(context.Background(), "b")
	if err != nil || k.KeyID() != "b" {
		t.Fatalf("Key(b) after rotation = %v, %v, want the new key", k, err)
	}
	if ev := nextEvent(t, events); ev.Reason != FetchUnknownKid || ev.Keys != 2 {
		t.Errorf("rotation fetch = %+v, want an unknown_kid fetch with 2 keys", ev)
	}
	if got := srv.fetches.Load(); got != 2 {
		t.Errorf("fetches = %d, want 2 (start, rotation)", got)
	}
	// The rotated set verifies a token of the new key end to end.
	tok := signRaw(t, headerJSON(ES256, "b"), claimsJSON(t, mainClaims()), ES256, keys(t).EC)
	if _, err := newTestVerifier(t, Rules{}).Verify(context.Background(), []byte(tok), r); err != nil {
		t.Errorf("Verify(token of the rotated key) = %v", err)
	}
}

// TestRemoteKeysUnknownKidFlood: random kids cost one fetch per cooldown, and requests
// for a new kid that arrive while its fetch is under way wait for it and get the key.
func TestRemoteKeysUnknownKidFlood(t *testing.T) {
	srv := newJWKSServer(t, setA(t))
	r, clock, events := startRemote(t, srv, RemoteConfig{Cooldown: 30 * time.Second})
	nextEvent(t, events)

	srv.set(http.StatusOK, setAB(t))
	srv.mu.Lock()
	srv.hold, srv.arrived = make(chan struct{}), make(chan struct{}, 100)
	srv.mu.Unlock()

	var wg sync.WaitGroup
	var gotB, unknown, other atomic.Int64
	for i := 0; i < 200; i++ {
		kid := "b"
		if i%2 == 1 {
			kid = fmt.Sprintf("random-%d", i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := r.Key(context.Background(), kid)
			switch {
			case err == nil && k.KeyID() == "b":
				gotB.Add(1)
			case CodeOf(err) == problem.CodeKeyUnknown && kid != "b":
				unknown.Add(1)
			default:
				other.Add(1)
			}
		}()
	}
	<-srv.arrived
	srv.mu.Lock()
	close(srv.hold)
	srv.hold = nil
	srv.mu.Unlock()
	wg.Wait()
	nextEvent(t, events)

	if got := srv.fetches.Load(); got != 2 {
		t.Errorf("fetches after 200 lookups = %d, want 2 (start and one refetch)", got)
	}
	if gotB.Load() != 100 || unknown.Load() != 100 || other.Load() != 0 {
		t.Errorf("lookups: %d got b, %d unknown, %d other; want 100, 100, 0", gotB.Load(), unknown.Load(), other.Load())
	}

	// Within the cooldown, more random kids fetch nothing.
	clock.Add(29 * time.Second)
	for i := 0; i < 50; i++ {
		if _, err := r.Key(context.Background(), fmt.Sprintf("again-%d", i)); CodeOf(err) != problem.CodeKeyUnknown {
			t.Fatalf("Key(random) = %v, want %q", err, problem.CodeKeyUnknown)
		}
	}
	if got := srv.fetches.Load(); got != 2 {
		t.Errorf("fetches within the cooldown = %d, want 2", got)
	}
	// After it, one more.
	clock.Add(time.Second)
	for i := 0; i < 50; i++ {
		r.Key(context.Background(), fmt.Sprintf("later-%d", i))
	}
	if got := srv.fetches.Load(); got != 3 {
		t.Errorf("fetches after the cooldown = %d, want 3", got)
	}
}

// TestRemoteKeysKeepsLastGoodSet: a failed fetch and a refused set leave the last good set
// in use. A kid that set lacks is key_unknown after a failed fetch, and keys_unavailable
// with the refusal's reason after a refused one (the partner's key is most likely in the
// set it published), until a good set loads again.
func TestRemoteKeysKeepsLastGoodSet(t *testing.T) {
	k := keys(t)
	for _, tc := range []struct {
		name     string
		status   int
		body     []byte
		wantErr  string
		wantCode problem.Code
	}{
		{"server down", http.StatusServiceUnavailable, nil, "status 503", problem.CodeKeyUnknown},
		{"not found", http.StatusNotFound, []byte("no"), "status 404", problem.CodeKeyUnknown},
		{"garbage", http.StatusOK, []byte("<html>oops</html>"), "parsing key set", problem.CodeKeysUnavailable},
		{"empty set", http.StatusOK, []byte(`{"keys":[]}`), "no keys", problem.CodeKeysUnavailable},
		{"private key", http.StatusOK, jwksJSON(t, jwkJSON(t, k.RSA, "a", "", nil)), `key 0 (kid "a"): key holds private key material (member "d")`, problem.CodeKeysUnavailable},
		{"weak key", http.StatusOK, jwksJSON(t, jwkJSON(t, fakeRSAKey(t, 1024, 65537), "a", "", nil)), "1024 bits", problem.CodeKeysUnavailable},
		{"too large", http.StatusOK, []byte(`{"keys":[],"pad":"` + strings.Repeat("x", MaxKeySetSize) + `"}`), "larger", problem.CodeKeysUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newJWKSServer(t, setA(t))
			r, clock, events := startRemote(t, srv, RemoteConfig{})
			nextEvent(t, events)
			srv.set(tc.status, tc.body)

			clock.Add(time.Hour) // past the cooldown: the unknown kid refetches
			_, err := r.Key(context.Background(), "new")
			if CodeOf(err) != tc.wantCode {
				t.Errorf("Key(new) = %v, want %q", err, tc.wantCode)
			}
			ev := nextEvent(t, events)
			if ev.Err == nil || !strings.Contains(ev.Err.Error(), tc.wantErr) {
				t.Errorf("fetch error = %v, want it to contain %q", ev.Err, tc.wantErr)
			}
			var e *Error
			if tc.wantCode == problem.CodeKeysUnavailable && (!errors.As(err, &e) ||
				!strings.HasPrefix(e.Detail, "the partner's published key set is refused: ") || !strings.Contains(e.Detail, tc.wantErr)) {
				t.Errorf("Key(new) = %v, want the refusal's reason %q in the detail", err, tc.wantErr)
			}
			if ev.Keys != 1 {
				t.Errorf("fetch event Keys = %d, want 1 (the last good set)", ev.Keys)
			}
			if key, err := r.Key(context.Background(), "a"); err != nil || key.KeyID() != "a" {
				t.Errorf("Key(a) with the source failing = %v, %v, want the last good key", key, err)
			}
			// A good set again: the refusal is forgotten, an unknown kid is key_unknown.
			srv.set(http.StatusOK, jwksJSON(t, jwkJSON(t, &k.RSA.PublicKey, "a", "", nil)))
			clock.Add(time.Hour)
			if _, err := r.Key(context.Background(), "other"); CodeOf(err) != problem.CodeKeyUnknown {
				t.Errorf("Key(other) after a good set loaded = %v, want %q", err, problem.CodeKeyUnknown)
			}
			if ev := nextEvent(t, events); ev.Err != nil {
				t.Errorf("fetch of the good set: %v", ev.Err)
			}
		})
	}
}

// TestRemoteKeysRefusedFirstSet: a partner whose first published set is refused gets
// keys_unavailable with the reason for every kid, the same answer RefusedKeySet gives.
func TestRemoteKeysRefusedFirstSet(t *testing.T) {
	body := jwksJSON(t, jwkJSON(t, keys(t).EC, "ec-2026", "", nil))
	srv := newJWKSServer(t, setA(t))
	srv.set(http.StatusOK, body)
	r, _, events := startRemote(t, srv, RemoteConfig{})
	if ev := nextEvent(t, events); ev.Err == nil {
		t.Fatal("the first fetch of a private key set succeeded")
	}
	_, perr := ParseKeySet(body)
	_, want := RefusedKeySet(perr).Key(context.Background(), "ec-2026")
	for _, kid := range []string{"ec-2026", "a"} {
		_, err := r.Key(context.Background(), kid)
		if !reflect.DeepEqual(err, want) {
			t.Errorf("Key(%s) = %v, want %v", kid, err, want)
		}
	}
	if e := (*Error)(nil); !errors.As(want, &e) || e.Code != problem.CodeKeysUnavailable ||
		e.Detail != `the partner's published key set is refused: key 0 (kid "ec-2026"): key holds private key material (member "d"): publish only the public key, and replace this key since its private part is exposed` {
		t.Errorf("RefusedKeySet answer = %v", want)
	}
}

func TestRemoteKeysMaxStale(t *testing.T) {
	srv := newJWKSServer(t, setA(t))
	r, clock, events := startRemote(t, srv, RemoteConfig{MaxStale: 2 * time.Hour})
	nextEvent(t, events)
	srv.set(http.StatusServiceUnavailable, nil)

	clock.Add(2 * time.Hour)
	if _, err := r.Key(context.Background(), "a"); err != nil {
		t.Errorf("Key(a) at exactly max stale = %v, want the key", err)
	}
	clock.Add(time.Second)
	if _, err := r.Key(context.Background(), "a"); CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("Key(a) past max stale = %v, want %q", err, problem.CodeKeysUnavailable)
	}
	// Back up: the next successful fetch makes the set current again.
	srv.set(http.StatusOK, setAB(t))
	if k, err := r.Key(context.Background(), "a"); CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("Key(a) stale, before a fetch = %v, %v, want %q", k, err, problem.CodeKeysUnavailable)
	}
}

func TestRemoteKeysNotModified(t *testing.T) {
	srv := newJWKSServer(t, setA(t))
	srv.header.Set("ETag", `"v1"`)
	r, clock, events := startRemote(t, srv, RemoteConfig{})
	nextEvent(t, events)
	clock.Add(time.Hour)
	if _, err := r.Key(context.Background(), "x"); CodeOf(err) != problem.CodeKeyUnknown {
		t.Errorf("Key(x) = %v, want %q", err, problem.CodeKeyUnknown)
	}
	if ev := nextEvent(t, events); ev.Err != nil || !ev.NotModified || ev.Keys != 1 {
		t.Errorf("conditional fetch = %+v, want not modified with 1 key", ev)
	}
	if _, fetched := r.Current(); !fetched.Equal(clock.Now()) {
		t.Errorf("Current() fetched = %v, want %v (a 304 confirms the set)", fetched, clock.Now())
	}
}

func TestRemoteKeysRefreshInterval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"max-age within bounds", map[string]string{"Cache-Control": "public, max-age=600"}, 10 * time.Minute},
		{"max-age under min", map[string]string{"Cache-Control": "max-age=5"}, time.Minute},
		{"max-age over max", map[string]string{"Cache-Control": "max-age=86400"}, time.Hour},
		{"no-cache", map[string]string{"Cache-Control": "no-cache"}, time.Minute},
		{"no-store", map[string]string{"Cache-Control": "no-store, max-age=600"}, time.Minute},
		{"invalid max-age", map[string]string{"Cache-Control": "max-age=soon"}, time.Minute},
		{"max-age beats Expires", map[string]string{"Cache-Control": "max-age=300", "Expires": "Sun, 01 Mar 2026 14:00:00 GMT"}, 5 * time.Minute},
		{"Expires minus Date", map[string]string{"Date": "Sun, 01 Mar 2026 12:00:00 GMT", "Expires": "Sun, 01 Mar 2026 12:15:00 GMT"}, 15 * time.Minute},
		{"Expires in the past", map[string]string{"Date": "Sun, 01 Mar 2026 12:00:00 GMT", "Expires": "Sun, 01 Mar 2026 11:00:00 GMT"}, time.Minute},
		{"Expires invalid", map[string]string{"Expires": "0"}, time.Minute},
		{"no header", nil, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			if got := refreshInterval(h, testNow, time.Minute, time.Hour); got != tc.want {
				t.Errorf("refreshInterval(%v) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}

	// The fetch reports the interval it scheduled.
	srv := newJWKSServer(t, setA(t))
	srv.header.Set("Cache-Control", "max-age=120")
	_, _, events := startRemote(t, srv, RemoteConfig{MinRefresh: time.Minute, MaxRefresh: time.Hour})
	if ev := nextEvent(t, events); ev.Next != 2*time.Minute {
		t.Errorf("fetch with max-age=120: Next = %v, want 2m", ev.Next)
	}
}

// TestRemoteKeysWaitingRequestCancelled: a request waiting for the refetch of its kid
// gives up when its own context ends, without cancelling the fetch for the others.
func TestRemoteKeysWaitingRequestCancelled(t *testing.T) {
	srv := newJWKSServer(t, setA(t))
	r, _, events := startRemote(t, srv, RemoteConfig{})
	nextEvent(t, events)
	srv.set(http.StatusOK, setAB(t))
	srv.mu.Lock()
	srv.hold, srv.arrived = make(chan struct{}), make(chan struct{}, 10)
	srv.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		_, err := r.Key(ctx, "b")
		result <- err
	}()
	<-srv.arrived
	cancel()
	if err := <-result; CodeOf(err) != problem.CodeKeysUnavailable || !errors.Is(err, context.Canceled) {
		t.Errorf("Key(b) with its context cancelled = %v, want %q wrapping context.Canceled", err, problem.CodeKeysUnavailable)
	}
	srv.mu.Lock()
	close(srv.hold)
	srv.hold = nil
	srv.mu.Unlock()
	if ev := nextEvent(t, events); ev.Err != nil || ev.Keys != 2 {
		t.Errorf("refetch after the request gave up = %+v, want 2 keys loaded", ev)
	}
	if k, err := r.Key(context.Background(), "b"); err != nil || k.KeyID() != "b" {
		t.Errorf("Key(b) after the refetch = %v, %v, want the key", k, err)
	}
}

func TestRemoteKeysRetryBackoff(t *testing.T) {
	r, err := NewRemoteKeys(RemoteConfig{URL: "https://keys.example/jwks.json", MinRefresh: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second},
		{5, 10 * time.Second}, {50, 10 * time.Second},
	} {
		if got := r.retryAfter(tc.failures); got != tc.want {
			t.Errorf("retryAfter(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

// TestRemoteKeysRetriesFirstFetch: a URL that is down at start is retried in the
// background, and the keys arrive without any request asking for them.
func TestRemoteKeysRetriesFirstFetch(t *testing.T) {
	srv := newJWKSServer(t, nil)
	srv.set(http.StatusServiceUnavailable, nil)
	r, _, events := startRemote(t, srv, RemoteConfig{})
	if ev := nextEvent(t, events); ev.Err == nil || ev.Reason != FetchStart || ev.Next != time.Second {
		t.Fatalf("first fetch = %+v, want a failed start fetch retried after 1s", ev)
	}
	if _, err := r.Key(context.Background(), "a"); CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("Key(a) while the URL is down = %v, want %q", err, problem.CodeKeysUnavailable)
	}
	srv.set(http.StatusOK, setA(t))
	if ev := nextEvent(t, events); ev.Err != nil || ev.Reason != FetchRetry || ev.Keys != 1 {
		t.Fatalf("retry = %+v, want a successful retry with 1 key", ev)
	}
	if _, err := r.Key(context.Background(), "a"); err != nil {
		t.Errorf("Key(a) after the retry = %v", err)
	}
}

// fetchOnce starts a source with cfg and returns the outcome of its first fetch.
func fetchOnce(t *testing.T, cfg RemoteConfig) FetchEvent {
	t.Helper()
	events := make(chan FetchEvent, 10)
	cfg.OnFetch = func(ev FetchEvent) { events <- ev }
	r, err := NewRemoteKeys(cfg)
	if err != nil {
		t.Fatalf("NewRemoteKeys(%q): %v", cfg.URL, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.Start(ctx)
	return nextEvent(t, events)
}
