package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
)

// waitAccepted posts fresh tokens made by mintTok until one is forwarded (the key set has
// loaded), failing after 30s.
func waitAccepted(t *testing.T, g *gateway, mintTok func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := g.PostURL(t, "demo", mintTok())
		if resp.StatusCode == 200 {
			return
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("waiting for the key set: status %d body %s", resp.StatusCode, resp.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestKeyRotationAtURLIsPickedUpOnFirstToken(t *testing.T) {
	old := harness.NewKey(t, "RS256", "2026-01")
	srv := harness.NewJWKSServer(t, old)
	srv.SetCacheControl("max-age=3600")
	g := startGateway(t, "jwks_url "+srv.JWKSURL(), "", "")
	waitAccepted(t, g, func() string { return mint(t, old, harness.Token{}) })

	rotated := harness.NewKey(t, "ES256", "2026-02")
	srv.SetKeys(t, old, rotated)
	if resp := g.PostURL(t, "demo", mint(t, rotated, harness.Token{})); resp.StatusCode != 200 {
		t.Errorf("first token with the new kid: status %d body %s, want 200", resp.StatusCode, resp.Body)
	}
	if resp := g.PostURL(t, "demo", mint(t, old, harness.Token{})); resp.StatusCode != 200 {
		t.Errorf("token with the old kid after rotation: status %d body %s, want 200", resp.StatusCode, resp.Body)
	}
}

func TestKeyURLDownKeepsLastGoodKeys(t *testing.T) {
	key := harness.NewKey(t, "ES256", "k1")
	srv := harness.NewJWKSServer(t, key)
	g := startGateway(t, "jwks_url "+srv.JWKSURL()+"\n\t\t\t\trefresh_min 1s\n\t\t\t\trefresh_max 1s", "", "")
	waitAccepted(t, g, func() string { return mint(t, key, harness.Token{}) })

	failed := failedFetches(g)
	srv.SetDown(true)
	// Wait until the gateway has handled a failed scheduled refresh (it logs it at error
	// once the fetch's answer is processed; the server's counter would only show that the
	// request arrived), so the test shows the set survives the failure.
	deadline := time.Now().Add(30 * time.Second)
	for failedFetches(g) == failed {
		if time.Now().After(deadline) {
			t.Fatalf("no failed refresh logged within 30s while the key URL was down (%d fetches)\n%s", srv.Fetches(), g.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp := g.PostURL(t, "demo", mint(t, key, harness.Token{})); resp.StatusCode != 200 {
		t.Errorf("while the key URL is down: status %d body %s, want 200 with the last good set", resp.StatusCode, resp.Body)
	}
}

// failedFetches counts the error lines the gateway logged for a failed key set fetch.
func failedFetches(g *gateway) int {
	n := 0
	for _, line := range strings.Split(g.Logs(), "\n") {
		if strings.Contains(line, `"level":"error"`) && strings.Contains(line, `"msg":"fetching partner key set"`) {
			n++
		}
	}
	return n
}

func TestKeyURLDownAtStart(t *testing.T) {
	key := harness.NewKey(t, "PS256", "k1")
	srv := harness.NewJWKSServer(t, key)
	srv.SetDown(true)
	g := startGateway(t, "jwks_url "+srv.JWKSURL(), "", "")

	resp := g.PostURL(t, "demo", mint(t, key, harness.Token{}))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("before any key set loaded: status %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if p := decodeProblem(t, resp); p.Code != "keys_unavailable" {
		t.Errorf("code = %q, want keys_unavailable", p.Code)
	}
	if n := len(g.up.Requests()); n != 0 {
		t.Errorf("upstream received %d requests, want none", n)
	}
	srv.SetDown(false)
	waitAccepted(t, g, func() string { return mint(t, key, harness.Token{}) })
}

func TestUnknownKidFloodCostsOneFetchPerCooldown(t *testing.T) {
	key := harness.NewKey(t, "RS256", "k1")
	srv := harness.NewJWKSServer(t, key)
	srv.SetCacheControl("max-age=3600")
	g := startGateway(t, "jwks_url "+srv.JWKSURL()+"\n\t\t\t\trefresh_cooldown 1h", "", "")
	waitAccepted(t, g, func() string { return mint(t, key, harness.Token{}) })

	before := srv.Fetches()
	for i := 0; i < 25; i++ {
		tok := mint(t, key, harness.Token{Header: map[string]any{"kid": harness.RandomNonce()}})
		resp := g.PostURL(t, "demo", tok)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unknown kid %d: status %d body %s, want 401", i, resp.StatusCode, resp.Body)
		}
		if p := decodeProblem(t, resp); p.Code != "key_unknown" {
			t.Fatalf("unknown kid %d: code %q, want key_unknown", i, p.Code)
		}
	}
	if n := srv.Fetches() - before; n > 1 {
		t.Errorf("25 unknown kids caused %d fetches, want at most 1 per cooldown", n)
	}
	if n := len(g.up.Requests()); n != 1 {
		t.Errorf("upstream received %d requests, want only the first valid link", n)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
