package jwtpartner

// Tests of behaviour that docs/jwt_partner.md and SECURITY.md promise, each named after
// the statement it shows.

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
	"github.com/partnergate/partnergate/plugins/nonce"
)

// documentedRequest sends tok to partner's endpoint ("url" or "payload").
func documentedRequest(partner, endpoint, tok string) *http.Request {
	if endpoint == "payload" {
		return payloadRequest(partner, "payload="+url.QueryEscape(tok))
	}
	return urlRequest(partner, tok)
}

// TestDocumentedWWWAuthenticateOn401: docs/jwt_partner.md, "Errors": 401 for a well-formed
// token that does not authenticate (signature, key, algorithm, issuer, audience, time
// window), with `WWW-Authenticate: PartnerLink realm="partnergate"` (RFC 9110 §15.5.2).
// Every 401 code carries it, on both endpoints; other refusals do not.
func TestDocumentedWWWAuthenticateOn401(t *testing.T) {
	const want = `PartnerLink realm="partnergate"`
	f := newFixture(t, func(h *Handler) {
		jwks := h.Partners["demo"].JWKSFile
		h.Partners["esonly"] = &Partner{Issuer: testIssuer, Audience: "aud-esonly", Algorithms: []string{"ES256"}, JWKSFile: jwks}
		h.Partners["mainonly"] = &Partner{Issuer: testIssuer, Audience: "aud-mainonly", Kinds: []string{"main"}, JWKSFile: jwks}
	})
	tests := []struct {
		name, partner string
		tok           func() string
		status        int
		code          string
	}{
		{"algorithm not allowed", "esonly", func() string { return f.token(t, "RS256", harness.Token{Audience: "aud-esonly"}) }, 401, "algorithm_not_allowed"},
		{"unknown kid", "demo", func() string { return f.token(t, "RS256", harness.Token{Header: map[string]any{"kid": "nope"}}) }, 401, "key_unknown"},
		{"bad signature", "demo", func() string { return f.token(t, "ES256", harness.Token{CorruptSignature: true}) }, 401, "signature_invalid"},
		{"wrong issuer", "demo", func() string { return f.token(t, "ES256", harness.Token{Issuer: "https://other.example"}) }, 401, "issuer_invalid"},
		{"wrong audience", "demo", func() string { return f.token(t, "ES256", harness.Token{Audience: "someone-else"}) }, 401, "audience_invalid"},
		{"not yet valid", "demo", func() string { return f.token(t, "ES256", harness.Token{Now: f.now.Add(2 * time.Minute)}) }, 401, "token_not_yet_valid"},
		{"expired", "demo", func() string { return f.token(t, "ES256", harness.Token{Now: f.now.Add(-10 * time.Minute)}) }, 401, "token_expired"},
		// other refusals: no challenge
		{"malformed", "demo", func() string { return "not a token" }, 400, "token_malformed"},
		{"kind not allowed", "mainonly", func() string {
			return f.token(t, "ES256", harness.Token{Audience: "aud-mainonly", Payload: testpayload.Go()})
		}, 403, "kind_not_allowed"},
	}
	for _, endpoint := range []string{"url", "payload"} {
		for _, tt := range tests {
			t.Run(endpoint+"/"+tt.name, func(t *testing.T) {
				w, next, _, err := f.serve(documentedRequest(tt.partner, endpoint, tt.tok()))
				if err != nil || next.called {
					t.Fatalf("ServeHTTP = %v, forwarded %v; want a written refusal", err, next.called)
				}
				if w.Code != tt.status {
					t.Fatalf("status = %d, want %d for %s (body %s)", w.Code, tt.status, tt.code, w.Body)
				}
				got := w.Header().Values("WWW-Authenticate")
				switch {
				case tt.status == http.StatusUnauthorized && (len(got) != 1 || got[0] != want):
					t.Errorf("%s: WWW-Authenticate = %q, want [%q]", tt.code, got, want)
				case tt.status != http.StatusUnauthorized && len(got) != 0:
					t.Errorf("%s (%d): WWW-Authenticate = %q, want none: only a 401 challenges", tt.code, tt.status, got)
				}
			})
		}
	}
}

// TestDocumentedRetryAfterOn503: docs/jwt_partner.md, "Errors": 503 with `Retry-After: 5` when a
// dependency of the gateway failed (keys not loaded, nonce store down or full).
func TestDocumentedRetryAfterOn503(t *testing.T) {
	keysDown := harness.NewJWKSServer(t)
	keysDown.SetDown(true)
	f := newFixture(t, func(h *Handler) {
		h.Partners["keysdown"] = &Partner{Issuer: testIssuer, Audience: "aud-keysdown", JWKSURL: keysDown.JWKSURL()}
	})
	tests := []struct {
		name, partner string
		storeErr      error
		code          string
	}{
		{"keys not loaded", "keysdown", nil, "keys_unavailable"},
		{"nonce store down", "demo", errors.New("dial tcp: connection refused"), "nonce_store_unavailable"},
		{"nonce store full", "demo", nonce.ErrFull, "nonce_store_full"},
	}
	for _, endpoint := range []string{"url", "payload"} {
		for _, tt := range tests {
			t.Run(endpoint+"/"+tt.name, func(t *testing.T) {
				f.store.mu.Lock()
				f.store.err = tt.storeErr
				f.store.mu.Unlock()
				aud := testAudience
				if tt.partner != "demo" {
					aud = "aud-" + tt.partner
				}
				w, next, _, err := f.serve(documentedRequest(tt.partner, endpoint, f.token(t, "ES256", harness.Token{Audience: aud})))
				if err != nil || next.called {
					t.Fatalf("ServeHTTP = %v, forwarded %v; want a written refusal", err, next.called)
				}
				if w.Code != http.StatusServiceUnavailable {
					t.Fatalf("status = %d, want 503 %s (body %s)", w.Code, tt.code, w.Body)
				}
				if endpoint == "url" {
					if p := decodeProblem(t, w); p.Code != tt.code {
						t.Errorf("code = %q, want %q", p.Code, tt.code)
					}
				}
				if got := w.Header().Values("Retry-After"); len(got) != 1 || got[0] != "5" {
					t.Errorf("%s: Retry-After = %q, want [\"5\"]", tt.code, got)
				}
			})
		}
	}
}

// keyRefreshes reads partnergate_key_refreshes_total from reg by its labels, as
// "partner/result" → count.
func keyRefreshes(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "partnergate_key_refreshes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(labels) != 2 {
				t.Errorf("partnergate_key_refreshes_total labels = %v, want partner and result", labels)
			}
			got[labels["partner"]+"/"+labels["result"]] = m.GetCounter().GetValue()
		}
	}
	return got
}

// waitForRefreshes polls the counter until cond holds, for up to 30s: the fetches run in
// the key sources' own goroutines.
func waitForRefreshes(t *testing.T, reg *prometheus.Registry, what string, cond func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := keyRefreshes(t, reg)
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: partnergate_key_refreshes_total = %v after 30s", what, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDocumentedKeyRefreshesMetric: docs/jwt_partner.md, the metrics table:
// `partnergate_key_refreshes_total`, labels `partner` and `result` (`ok`, `error`), counts
// `jwks_url` fetches: the first one, a refetch for an unknown kid, and failed ones.
func TestDocumentedKeyRefreshesMetric(t *testing.T) {
	first := harness.NewKey(t, "ES256", "rotate-1")
	second := harness.NewKey(t, "ES256", "rotate-2")
	keys := harness.NewJWKSServer(t, first)
	down := harness.NewJWKSServer(t)
	down.SetDown(true)

	store := &fakeStore{}
	now := time.Unix(1_800_000_000, 0)
	h := &Handler{
		Partners: map[string]*Partner{
			"acme":   {Issuer: testIssuer, Audience: "aud-acme", JWKSURL: keys.JWKSURL()},
			"globex": {Issuer: testIssuer, Audience: "aud-globex", JWKSURL: down.JWKSURL()},
			// a jwks_file partner fetches nothing and is never counted
			"initech": {Issuer: testIssuer, Audience: "aud-initech", JWKSFile: harness.WriteJWKS(t, t.TempDir(), first)},
		},
		UpstreamSecret: "0123456789abcdef0123456789abcdef",
		store:          store,
		now:            func() time.Time { return now },
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: t.Context()})
	t.Cleanup(cancel)
	if err := h.Provision(ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	reg := ctx.GetMetricsRegistry()

	// the first fetches, in the background from the start
	waitForRefreshes(t, reg, "first fetches", func(m map[string]float64) bool {
		return m["acme/ok"] == 1 && m["globex/error"] >= 1
	})

	// a token signed with a key the set gained since: an unknown kid, refetched at once
	keys.SetKeys(t, first, second)
	tok := second.Sign(t, harness.Token{Issuer: testIssuer, Audience: "aud-acme", Now: now})
	f := &fixture{h: h, store: store, now: now}
	w, next, _, err := f.serve(urlRequest("acme", tok))
	if err != nil || !next.called {
		t.Fatalf("token of the new key: ServeHTTP = %v, forwarded %v (status %d, body %s); want it accepted after the refetch", err, next.called, w.Code, w.Body)
	}
	got := waitForRefreshes(t, reg, "refetch for the unknown kid", func(m map[string]float64) bool { return m["acme/ok"] >= 2 })

	for key, n := range got {
		switch key {
		case "acme/ok":
			if n != 2 {
				t.Errorf("partnergate_key_refreshes_total{partner=acme,result=ok} = %v, want 2: the first fetch and the refetch", n)
			}
		case "globex/error":
		default:
			t.Errorf("partnergate_key_refreshes_total{%s} = %v, want no such series: acme never failed, globex never loaded, initech has no jwks_url", key, n)
		}
	}
	if n := keys.Fetches(); n != 2 {
		t.Errorf("acme's key server answered %d fetches, want 2 as counted", n)
	}
	if n, fetched := got["globex/error"], down.Fetches(); n < 1 || int64(n) > fetched {
		t.Errorf("partnergate_key_refreshes_total{partner=globex,result=error} = %v, want between 1 and the %d fetches its server answered", n, fetched)
	}
}
