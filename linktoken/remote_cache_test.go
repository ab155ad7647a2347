package linktoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/problem"
)

// startOn starts a source on srv with the given clock and cache; cancel stops it, as a
// configuration unload does.
func startOn(t *testing.T, srv *jwksServer, clock *fakeClock, cache *KeyCache, cfg RemoteConfig) (*RemoteKeys, chan FetchEvent, context.CancelFunc) {
	t.Helper()
	events := make(chan FetchEvent, 100)
	cfg.URL = srv.URL + "/jwks.json"
	cfg.Now = clock.Now
	cfg.Cache = cache
	cfg.OnFetch = func(ev FetchEvent) { events <- ev }
	r, err := NewRemoteKeys(cfg)
	if err != nil {
		t.Fatalf("NewRemoteKeys: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.Start(ctx)
	return r, events, cancel
}

// TestRemoteKeysCacheOutlivesSource: a new source on the cache of a stopped one (a config
// reload) answers from the last good set while the URL is down, until max_stale counted
// from the last good fetch, not from the new source's start.
func TestRemoteKeysCacheOutlivesSource(t *testing.T) {
	srv := newJWKSServer(t, setA(t))
	clock := &fakeClock{now: testNow}
	cache := NewKeyCache()
	_, events, stop := startOn(t, srv, clock, cache, RemoteConfig{MaxStale: 2 * time.Hour})
	if ev := nextEvent(t, events); ev.Err != nil || !ev.Loaded {
		t.Fatalf("first fetch = %+v, want a loaded set", ev)
	}
	stop()
	srv.set(http.StatusServiceUnavailable, nil)

	clock.Add(time.Hour)
	r2, events2, _ := startOn(t, srv, clock, cache, RemoteConfig{MaxStale: 2 * time.Hour})
	if k, err := r2.Key(context.Background(), "a"); err != nil || k.KeyID() != "a" {
		t.Errorf("Key(a) on the new source with the URL down = %v, %v, want the cached key", k, err)
	}
	ev := nextEvent(t, events2)
	if ev.Err == nil || ev.Loaded || !ev.FailureStarted || ev.Keys != 1 {
		t.Errorf("new source's first fetch = %+v, want a failure that starts a run, 1 key kept", ev)
	}
	if k, err := r2.Key(context.Background(), "a"); err != nil || k.KeyID() != "a" {
		t.Errorf("Key(a) after the new source's failed fetch = %v, %v, want the cached key", k, err)
	}
	if _, fetched := r2.Current(); !fetched.Equal(testNow) {
		t.Errorf("Current() fetched = %v, want the first source's fetch %v", fetched, testNow)
	}
	clock.Add(time.Hour + time.Second)
	if _, err := r2.Key(context.Background(), "a"); CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("Key(a) past max_stale from the last good fetch = %v, want %q", err, problem.CodeKeysUnavailable)
	}
}

// TestRemoteKeysEvents: each change of the key set is reported by the one fetch that made
// it, so that the gateway can log it once.
func TestRemoteKeysEvents(t *testing.T) {
	k := keys(t)
	srv := newJWKSServer(t, setA(t))
	clock := &fakeClock{now: testNow}
	r, events, _ := startOn(t, srv, clock, NewKeyCache(), RemoteConfig{MaxStale: 4 * time.Hour})
	refetch := func() FetchEvent {
		t.Helper()
		clock.Add(time.Hour) // past the cooldown: an unknown kid refetches
		_, _ = r.Key(context.Background(), "unknown")
		return nextEvent(t, events)
	}
	type want struct {
		err, loaded, refusedChanged, failureStarted, recovered, staleSoon bool
		added, removed                                                    []string
	}
	check := func(step string, ev FetchEvent, w want) {
		t.Helper()
		got := want{ev.Err != nil, ev.Loaded, ev.RefusedChanged, ev.FailureStarted, ev.Recovered, ev.StaleSoon, ev.Added, ev.Removed}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: event %+v, want %+v", step, got, w)
		}
	}
	check("first fetch", nextEvent(t, events), want{loaded: true})
	srv.set(http.StatusOK, setAB(t))
	check("b added", refetch(), want{added: []string{"b"}})
	srv.set(http.StatusOK, jwksJSON(t, jwkJSON(t, &k.EC.PublicKey, "b", "", nil)))
	check("a removed", refetch(), want{removed: []string{"a"}})
	check("same set", refetch(), want{})

	private := jwksJSON(t, jwkJSON(t, k.EC, "c", "", nil))
	srv.set(http.StatusOK, private)
	check("refused", refetch(), want{err: true, refusedChanged: true, failureStarted: true})
	check("same refusal", refetch(), want{err: true})
	srv.set(http.StatusServiceUnavailable, nil)
	// 3h since the last good fetch: a quarter of max_stale (4h) is left.
	check("down, max_stale near", refetch(), want{err: true, staleSoon: true})
	srv.set(http.StatusOK, setAB(t))
	ev := refetch() // at max_stale exactly: the set is still in use, so a kid can refetch
	check("back", ev, want{recovered: true, added: []string{"a"}})
	if !ev.RecoveredFrom.Equal(testNow.Add(4 * time.Hour)) {
		t.Errorf("RecoveredFrom = %v, want the first failure at %v", ev.RecoveredFrom, testNow.Add(4*time.Hour))
	}
	if st := r.cache.Status(); !st.Fetched.Equal(clock.Now()) || !st.Failed.Equal(testNow.Add(6*time.Hour)) || st.Keys != 2 {
		t.Errorf("Status() = %+v, want fetched now, failed at +6h, 2 keys", st)
	}
}

// TestRemoteKeysRootCAs: with RootCAs the key set's server must present a certificate of
// that pool; without it, the system's pool does not trust a private CA.
func TestRemoteKeysRootCAs(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(setA(t))
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	// httptest's servers all present one certificate: another CA is made here.
	other := x509.NewCertPool()
	other.AddCert(selfSignedCA(t))

	for _, tc := range []struct {
		name    string
		pool    *x509.CertPool
		wantErr string
	}{
		{"the server's CA", pool, ""},
		{"system pool", nil, "certificate"},
		{"another CA", other, "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := fetchOnce(t, RemoteConfig{URL: srv.URL + "/jwks.json", RootCAs: tc.pool})
			switch {
			case tc.wantErr == "" && ev.Err != nil:
				t.Errorf("fetch with %s = %v, want the set", tc.name, ev.Err)
			case tc.wantErr != "" && (ev.Err == nil || !strings.Contains(ev.Err.Error(), tc.wantErr)):
				t.Errorf("fetch with %s = %v, want an error about the %s", tc.name, ev.Err, tc.wantErr)
			}
		})
	}
}

// selfSignedCA returns a CA certificate that signed nothing the tests serve.
func selfSignedCA(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "another CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
