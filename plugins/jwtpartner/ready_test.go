package jwtpartner

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/plugins/nonce"
)

// pingStore is a nonce store that answers Ping with err and counts the pings.
type pingStore struct {
	mu    sync.Mutex
	err   error
	pings int
}

func (s *pingStore) Claim(context.Context, nonce.Entry) (bool, error) { return true, nil }

func (s *pingStore) Ping(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pings++
	return s.err
}

func (s *pingStore) set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *pingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pings
}

// clock is a settable clock that the key fetchers' goroutines may read.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Unix(1_800_000_000, 0).UnixNano())
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// readyConfig is one loaded configuration: its context and what was provisioned in it.
type readyConfig struct {
	ctx   caddy.Context
	clock *clock
}

func newReadyConfig(t *testing.T) *readyConfig {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return &readyConfig{ctx: ctx, clock: newClock()}
}

// handler provisions a jwt_partner handler with the given partners and store in the
// configuration, and cleans it up with the test.
func (c *readyConfig) handler(t *testing.T, partners map[string]*Partner, store *pingStore) *Handler {
	t.Helper()
	h := &Handler{Partners: partners, store: store, now: c.clock.now}
	if err := h.Provision(c.ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	h.logger = zap.NewNop()
	t.Cleanup(func() { _ = h.Cleanup() })
	return h
}

func (c *readyConfig) ready(t *testing.T, r *Ready) *Ready {
	t.Helper()
	if err := r.Provision(c.ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if err := r.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return r
}

func filePartner(t *testing.T, aud string) *Partner {
	t.Helper()
	jwks := harness.WriteJWKS(t, t.TempDir(), harness.NewKey(t, "ES256", "k1"))
	return &Partner{Issuer: testIssuer, Audience: aud, JWKSFile: jwks}
}

// deadURL is a key set URL on loopback where nothing listens: the set never loads.
const deadURL = "http://127.0.0.1:1/jwks.json"

func askReady(t *testing.T, r *Ready) (int, readiness, http.Header) {
	t.Helper()
	w := httptest.NewRecorder()
	next := &recorder{}
	if err := r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ready", nil), next); err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	if next.called {
		t.Fatal("the next handler was called without forward")
	}
	var ans readiness
	if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	return w.Code, ans, w.Header()
}

func TestReadyAnswers(t *testing.T) {
	down := errors.New("connection refused")
	tests := []struct {
		name     string
		partners map[string]*Partner
		storeErr error
		filter   []string
		status   int
		want     []notReady
	}{
		{"file keys and a store that answers", map[string]*Partner{"acme": nil}, nil, nil, 200, nil},
		{"store down", map[string]*Partner{"acme": nil, "beta": nil}, down, nil, 503,
			[]notReady{{"acme", checkNonceStore}, {"beta", checkNonceStore}}},
		{"key set never loaded", map[string]*Partner{"acme": nil, "beta": {JWKSURL: deadURL}}, nil, nil, 503,
			[]notReady{{"beta", checkKeys}}},
		{"both", map[string]*Partner{"beta": {JWKSURL: deadURL}}, down, nil, 503,
			[]notReady{{"beta", checkKeys}, {"beta", checkNonceStore}}},
		{"filter leaves the failing partner out", map[string]*Partner{"acme": nil, "beta": {JWKSURL: deadURL}}, nil, []string{"acme"}, 200, nil},
		{"filter names a partner no handler serves", map[string]*Partner{"acme": nil}, nil, []string{"acme", "zeta"}, 503,
			[]notReady{{"zeta", checkConfigured}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newReadyConfig(t)
			partners := map[string]*Partner{}
			for name, p := range tt.partners {
				fp := filePartner(t, "aud-"+name)
				if p != nil && p.JWKSURL != "" {
					fp.JWKSFile, fp.JWKSURL = "", p.JWKSURL
				}
				partners[name] = fp
			}
			c.handler(t, partners, &pingStore{err: tt.storeErr})
			r := c.ready(t, &Ready{Partners: tt.filter})
			status, ans, header := askReady(t, r)
			if status != tt.status || ans.Ready != (tt.status == 200) || !reflect.DeepEqual(ans.NotReady, tt.want) {
				t.Errorf("ready = %d %+v, want %d %+v", status, ans, tt.status, tt.want)
			}
			if got := header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
			if got := header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
		})
	}
}

func TestReadyWithoutHandler(t *testing.T) {
	c := newReadyConfig(t)
	r := c.ready(t, &Ready{})
	status, ans, _ := askReady(t, r)
	if want := []notReady{{Check: checkHandler}}; status != 503 || !reflect.DeepEqual(ans.NotReady, want) {
		t.Errorf("ready without a jwt_partner handler = %d %+v, want 503 %+v", status, ans, want)
	}
}

// TestReadyReadsItsOwnConfiguration: during a reload the old configuration's handlers are
// still registered; a check sees only the handlers of its own configuration, and a handler
// cleaned up is gone.
func TestReadyReadsItsOwnConfiguration(t *testing.T) {
	old := newReadyConfig(t)
	oldHandler := old.handler(t, map[string]*Partner{"acme": filePartner(t, "aud-acme")}, &pingStore{err: errors.New("down")})
	cur := newReadyConfig(t)
	cur.handler(t, map[string]*Partner{"beta": filePartner(t, "aud-beta")}, &pingStore{})

	if status, ans, _ := askReady(t, cur.ready(t, &Ready{})); status != 200 {
		t.Errorf("new configuration's check = %d %+v, want 200: the old configuration's store is not its own", status, ans)
	}
	oldReady := old.ready(t, &Ready{})
	if status, ans, _ := askReady(t, oldReady); status != 503 {
		t.Errorf("old configuration's check = %d %+v, want 503", status, ans)
	}
	if err := oldHandler.Cleanup(); err != nil {
		t.Fatal(err)
	}
	status, ans, _ := askReady(t, oldReady)
	if want := []notReady{{Check: checkHandler}}; status != 503 || !reflect.DeepEqual(ans.NotReady, want) {
		t.Errorf("check after its handler's Cleanup = %d %+v, want 503 %+v", status, ans, want)
	}
}

// TestReadyCachesThePing: checks within readyPingTTL share one ping, by the handler's clock.
func TestReadyCachesThePing(t *testing.T) {
	c := newReadyConfig(t)
	store := &pingStore{err: errors.New("down")}
	c.handler(t, map[string]*Partner{"acme": filePartner(t, "aud-acme")}, store)
	r := c.ready(t, &Ready{})

	for range 3 {
		if status, _, _ := askReady(t, r); status != 503 {
			t.Fatalf("ready with the store down = %d, want 503", status)
		}
	}
	if n := store.count(); n != 1 {
		t.Errorf("pings for 3 checks within %s = %d, want 1", readyPingTTL, n)
	}
	store.set(nil)
	if status, _, _ := askReady(t, r); status != 503 {
		t.Errorf("ready within %s of a failed ping = %d, want the cached 503", readyPingTTL, status)
	}
	c.clock.advance(readyPingTTL)
	if status, ans, _ := askReady(t, r); status != 200 {
		t.Errorf("ready %s later with the store back = %d %+v, want 200", readyPingTTL, status, ans)
	}
	if n := store.count(); n != 2 {
		t.Errorf("pings = %d, want 2", n)
	}
}

// TestReadyKeysMaxStale: a jwks_url set is usable until max_stale after its last
// successful fetch, as on the request path.
func TestReadyKeysMaxStale(t *testing.T) {
	jwks := harness.JWKS(t, harness.NewKey(t, "ES256", "k1"))
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	defer srv.Close()

	c := newReadyConfig(t)
	p := &Partner{Issuer: testIssuer, Audience: testAudience, JWKSURL: srv.URL + "/jwks.json", MaxStale: caddy.Duration(time.Hour)}
	h := c.handler(t, map[string]*Partner{"acme": p}, &pingStore{})
	r := c.ready(t, &Ready{})

	deadline := time.Now().Add(10 * time.Second)
	for !h.keysUsable("acme") {
		if time.Now().After(deadline) {
			t.Fatal("the key set did not load within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status, ans, _ := askReady(t, r); status != 200 {
		t.Fatalf("ready with the set loaded = %d %+v, want 200", status, ans)
	}
	fail.Store(true)
	c.clock.advance(time.Hour)
	if status, ans, _ := askReady(t, r); status != 200 {
		t.Errorf("ready at max_stale = %d %+v, want 200", status, ans)
	}
	c.clock.advance(time.Second)
	status, ans, _ := askReady(t, r)
	if want := []notReady{{"acme", checkKeys}}; status != 503 || !reflect.DeepEqual(ans.NotReady, want) {
		t.Errorf("ready past max_stale = %d %+v, want 503 %+v", status, ans, want)
	}
}

func TestReadyForward(t *testing.T) {
	c := newReadyConfig(t)
	store := &pingStore{}
	c.handler(t, map[string]*Partner{"acme": filePartner(t, "aud-acme")}, store)
	r := c.ready(t, &Ready{Forward: true})

	w := httptest.NewRecorder()
	next := &recorder{}
	if err := r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil), next); err != nil {
		t.Fatal(err)
	}
	if !next.called || next.path != "/healthz" {
		t.Errorf("ready with forward: next called %v with %q, want called with /healthz", next.called, next.path)
	}

	store.set(errors.New("down"))
	c.clock.advance(readyPingTTL)
	w = httptest.NewRecorder()
	next = &recorder{}
	if err := r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil), next); err != nil {
		t.Fatal(err)
	}
	if next.called || w.Code != 503 {
		t.Errorf("not ready with forward: status %d, next called %v; want 503 and the next handler not asked", w.Code, next.called)
	}
}

func TestUnmarshalCaddyfileReady(t *testing.T) {
	tests := []struct {
		name, input string
		want        Ready
		err         string
	}{
		{"bare", `jwt_partner_ready`, Ready{}, ""},
		{"partners and forward", "jwt_partner_ready acme beta {\n forward\n}", Ready{Partners: []string{"acme", "beta"}, Forward: true}, ""},
		{"bad partner name", `jwt_partner_ready Acme`, Ready{}, `partner name "Acme"`},
		{"duplicate partner", `jwt_partner_ready acme acme`, Ready{}, "partner acme: given more than once"},
		{"forward with argument", "jwt_partner_ready {\n forward yes\n}", Ready{}, "wrong argument count"},
		{"forward twice", "jwt_partner_ready {\n forward\n forward\n}", Ready{}, "forward: given more than once"},
		{"unknown option", "jwt_partner_ready {\n nope\n}", Ready{}, `unknown subdirective "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Ready
			err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("UnmarshalCaddyfile(%q) error = %v, want one containing %q", tt.input, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("UnmarshalCaddyfile(%q) = %+v, %v; want %+v", tt.input, got, err, tt.want)
			}
		})
	}
}
