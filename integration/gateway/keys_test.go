package gateway

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	// Wait until the gateway has handled a failed scheduled refresh (it logs it at debug
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

// failedFetches counts the debug lines the gateway logged for a failed key set fetch.
func failedFetches(g *gateway) int {
	return len(logLines(g, "fetching partner key set", `"error":`))
}

// logLines returns the gateway's log lines with message msg that contain every one of subs.
func logLines(g *gateway, msg string, subs ...string) []string {
	var out []string
next:
	for _, line := range strings.Split(g.Logs(), "\n") {
		if !strings.Contains(line, `"msg":"`+msg+`"`) {
			continue
		}
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// waitLog waits up to 30s for a log line with message msg containing every one of subs.
func waitLog(t *testing.T, g *gateway, msg string, subs ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if lines := logLines(g, msg, subs...); len(lines) > 0 {
			return lines[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line %q with %q within 30s:\n%s", msg, subs, g.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReloadWithKeyURLDownKeepsKeys: issue 18. A reload while a partner's key URL is down
// starts the new configuration from the last good set, whose age still counts from the
// last good fetch: tokens pass after the reload, and stop passing at max_stale. The new
// configuration's own fetch is seen to fail first, so the token is answered from the kept
// set, not from a fetch.
func TestReloadWithKeyURLDownKeepsKeys(t *testing.T) {
	key := harness.NewKey(t, "ES256", "k1")
	srv := harness.NewJWKSServer(t, key)
	const maxStale = "max_stale 30s"
	g := startGateway(t, "jwks_url "+srv.JWKSURL(), maxStale, "")
	waitAccepted(t, g, func() string { return mint(t, key, harness.Token{}) })
	waitLog(t, g, "partner key set loaded", `"partner":"demo"`, `"keys":1`)

	srv.SetDown(true)
	g.Reload(t, gatewayCaddyfile, map[string]string{
		"keys": "jwks_url " + srv.JWKSURL(), "partner": maxStale + "\n\t\t\t\tleeway 20s",
		"handler": "", "site": "", "upstream": g.up.Addr(),
	})
	waitLog(t, g, "partner key set fetch failing", `"partner":"demo"`, `"keys_in_use":1`)
	if resp := g.PostURL(t, "demo", mint(t, key, harness.Token{})); resp.StatusCode != 200 {
		t.Fatalf("after a reload with the key URL down: status %d body %s, want 200 from the kept set", resp.StatusCode, resp.Body)
	}
	if n := len(logLines(g, "partner key set loaded", `"partner":"demo"`)); n != 1 {
		t.Errorf("%d \"partner key set loaded\" lines for demo, want 1 (the reload keeps the set)", n)
	}

	m := scrape(t, g)
	for _, want := range []string{
		`partnergate_key_set_age_seconds{partner="demo"}`,
		`partnergate_key_set_last_success_timestamp_seconds{partner="demo"}`,
		`partnergate_key_set_last_failure_timestamp_seconds{partner="demo"}`,
		`partnergate_keys{partner="demo"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics after the reload lacks %s:\n%s", want, grep(m, "partnergate_key"))
		}
	}

	// max_stale, counted from the first configuration's fetch, runs out.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp := g.PostURL(t, "demo", mint(t, key, harness.Token{}))
		if resp.StatusCode == http.StatusServiceUnavailable {
			if p := decodeProblem(t, resp); p.Code != "keys_unavailable" {
				t.Errorf("past max_stale: code %q, want keys_unavailable", p.Code)
			}
			break
		}
		if resp.StatusCode != 200 || time.Now().After(deadline) {
			t.Fatalf("waiting for max_stale to run out: status %d body %s", resp.StatusCode, resp.Body)
		}
		time.Sleep(250 * time.Millisecond)
	}
	// The URL back: the set loads again, which is logged as a recovery, not a first load.
	srv.SetDown(false)
	waitAccepted(t, g, func() string { return mint(t, key, harness.Token{}) })
	waitLog(t, g, "partner key set fetch recovered", `"partner":"demo"`)
}

// TestKeySetChangesLoggedOnce: a rotation at the key URL is logged once at info with the
// kids added and removed, and a burst of unknown kids is one warning with its count.
func TestKeySetChangesLoggedOnce(t *testing.T) {
	old := harness.NewKey(t, "RS256", "2026-01")
	srv := harness.NewJWKSServer(t, old)
	g := startGateway(t, "jwks_url "+srv.JWKSURL(), "refresh_cooldown 1h", "")
	waitAccepted(t, g, func() string { return mint(t, old, harness.Token{}) })

	rotated := harness.NewKey(t, "ES256", "2026-02")
	srv.SetKeys(t, rotated)
	if resp := g.PostURL(t, "demo", mint(t, rotated, harness.Token{})); resp.StatusCode != 200 {
		t.Fatalf("first token with the new kid: status %d body %s", resp.StatusCode, resp.Body)
	}
	line := waitLog(t, g, "partner key set rotated", `"partner":"demo"`)
	if !strings.Contains(line, `"added":["2026-02"]`) || !strings.Contains(line, `"removed":["2026-01"]`) || !strings.Contains(line, `"level":"info"`) {
		t.Errorf("rotation line = %s, want info with added [2026-02] and removed [2026-01]", line)
	}
	for i := 0; i < 5; i++ {
		tok := mint(t, rotated, harness.Token{Header: map[string]any{"kid": harness.RandomNonce()}})
		if resp := g.PostURL(t, "demo", tok); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unknown kid: status %d body %s, want 401", resp.StatusCode, resp.Body)
		}
	}
	waitLog(t, g, "partner tokens name kids not in the key set", `"partner":"demo"`)
	waitLog(t, g, "partner key set rotated", `"partner":"demo"`)
	if lines := logLines(g, "partner tokens name kids not in the key set", `"partner":"demo"`); len(lines) != 1 || !strings.Contains(lines[0], `"count":1`) {
		t.Errorf("unknown kid lines = %q, want one with count 1 (the rest wait for the cooldown)", lines)
	}
	if n := len(logLines(g, "partner key set rotated", `"partner":"demo"`)); n != 1 {
		t.Errorf("%d rotation lines, want 1", n)
	}
	for _, line := range strings.Split(g.Logs(), "\n") {
		if strings.Contains(line, "partner key set") && (strings.Contains(line, `"n":`) || strings.Contains(line, `"x":`)) {
			t.Errorf("a key-set line carries key material: %s", line)
		}
	}
}

// TestUnknownKidBurstWrittenAtCooldownEnd: a burst of unknown kids is one warning at once
// and, when refresh_cooldown has run out, one with the count held since, although no
// further token names an unknown kid.
func TestUnknownKidBurstWrittenAtCooldownEnd(t *testing.T) {
	const msg = "partner tokens name kids not in the key set"
	key := harness.NewKey(t, "ES256", "k1")
	srv := harness.NewJWKSServer(t, key)
	g := startGateway(t, "jwks_url "+srv.JWKSURL(), "refresh_cooldown 3s", "")
	waitAccepted(t, g, func() string { return mint(t, key, harness.Token{}) })

	const burst = 4
	var toks []string
	for range burst {
		toks = append(toks, mint(t, key, harness.Token{Header: map[string]any{"kid": harness.RandomNonce()}}))
	}
	start := time.Now()
	for _, tok := range toks {
		if resp := g.PostURL(t, "demo", tok); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unknown kid: status %d body %s, want 401", resp.StatusCode, resp.Body)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the burst took %s, want it within the 3s cooldown", took)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		lines := logLines(g, msg, `"partner":"demo"`)
		if len(lines) == 2 {
			if !strings.Contains(lines[0], `"count":1`) || !strings.Contains(lines[1], fmt.Sprintf(`"count":%d`, burst-1)) {
				t.Errorf("unknown kid lines = %q, want count 1 at once, then count %d", lines, burst-1)
			}
			break
		}
		if len(lines) > 2 || time.Now().After(deadline) {
			t.Fatalf("unknown kid lines = %q, want 2: the held count is written when the cooldown ends", lines)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrape returns the admin endpoint's /metrics.
func scrape(t *testing.T, g *gateway) string {
	t.Helper()
	resp, err := http.Get("http://" + g.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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

// TestJWKSCAFile: a partner's key server on a private CA (httptest's self-signed
// certificate) is trusted through jwks_ca_file alone; the same server without it is not.
func TestJWKSCAFile(t *testing.T) {
	key := harness.NewKey(t, "ES256", "k1")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(harness.JWKS(t, key))
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "partner-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	g := startGateway(t, "jwks_url "+srv.URL+"/jwks.json\n\t\t\t\tjwks_ca_file "+ca, "", "")
	waitAccepted(t, g, func() string { return mint(t, key, harness.Token{}) })

	untrusted := startGateway(t, "jwks_url "+srv.URL+"/jwks.json", "", "")
	line := waitLog(t, untrusted, "partner key set fetch failing", `"partner":"demo"`)
	if !strings.Contains(line, "certificate") {
		t.Errorf("fetch failure without jwks_ca_file = %s, want a certificate error", line)
	}
	resp := untrusted.PostURL(t, "demo", mint(t, key, harness.Token{}))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("without jwks_ca_file: status %d body %s, want 503", resp.StatusCode, resp.Body)
	}
}
