package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/bench/wrk"
)

func TestCaddyfileDiffersOnlyInTheHandler(t *testing.T) {
	base := caddyConfig{Admin: "127.0.0.1:2", Listen: "127.0.0.1:3", Upstream: "127.0.0.1:4",
		Partner: benchPartner, Issuer: benchIssuer, Audience: benchAudience}
	tests := []struct {
		name    string
		cfg     func(c caddyConfig) caddyConfig
		want    []string
		notWant []string
	}{
		{name: "baseline", cfg: func(c caddyConfig) caddyConfig { return c },
			want: []string{"admin 127.0.0.1:2", "http://127.0.0.1:3", "reverse_proxy 127.0.0.1:4"}, notWant: []string{"jwt_partner", "/floor/"}},
		{name: "memory store with jwks_file", cfg: func(c caddyConfig) caddyConfig {
			c.Gateway, c.JWKSFile = true, "/tmp/jwks.json"
			return c
		}, want: []string{"order jwt_partner before reverse_proxy", "nonce_store memory", "jwks_file  /tmp/jwks.json", "reverse_proxy 127.0.0.1:4"}, notWant: []string{"redis", "jwks_url"}},
		{name: "redis store with jwks_url", cfg: func(c caddyConfig) caddyConfig {
			c.Gateway, c.JWKSURL, c.Cooldown, c.Redis = true, "https://127.0.0.1:5/jwks.json", "2s", "127.0.0.1:6"
			return c
		}, want: []string{"nonce_store redis {", "address 127.0.0.1:6", "jwks_url   https://127.0.0.1:5/jwks.json", "refresh_cooldown 2s"}, notWant: []string{"nonce_store memory", "jwks_file"}},
		{name: "floor beside the gateway", cfg: func(c caddyConfig) caddyConfig {
			c.Gateway, c.JWKSFile, c.Floor = true, "/tmp/jwks.json", true
			return c
		}, want: []string{"route /floor/* {", "respond `" + floorBody + "` 401", "jwt_partner {", "reverse_proxy 127.0.0.1:4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.cfg(base).render()
			if err != nil {
				t.Fatalf("render() error = %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("render() = %q, want it to contain %q", out, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(string(out), w) {
					t.Errorf("render() = %q, want it without %q", out, w)
				}
			}
		})
	}
}

func TestMintedTokensVerifyAndFloodTokensDoNot(t *testing.T) {
	p, err := newPartner(defaultMix)
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(p.jwks)
	if err != nil {
		t.Fatalf("jwk.Parse(jwks) error = %v", err)
	}
	tokens, err := p.mint(3)
	if err != nil {
		t.Fatalf("mint(3) error = %v", err)
	}
	nonces := map[string]bool{}
	for _, tok := range tokens {
		payload, err := jws.Verify(tok, jws.WithKeySet(set))
		if err != nil {
			t.Fatalf("jws.Verify(minted token) error = %v", err)
		}
		var c claims
		if err := json.Unmarshal(payload, &c); err != nil {
			t.Fatal(err)
		}
		if c.Issuer != benchIssuer || c.Audience != benchAudience || c.NotBefore != c.IssuedAt ||
			time.Duration(c.Expiry-c.NotBefore)*time.Second != tokenLifetime || c.Payload.Contact == nil {
			t.Errorf("minted claims = %+v, want the bench issuer, audience, iat = nbf, a 5m lifetime and a contact", c)
		}
		nonces[c.Nonce] = true
	}
	if len(nonces) != len(tokens) {
		t.Errorf("mint(3) gave %d distinct nonces, want %d", len(nonces), len(tokens))
	}

	flood, err := floodTokens(tokens[0], 2)
	if err != nil {
		t.Fatalf("floodTokens() error = %v", err)
	}
	kids := map[string]bool{}
	for _, f := range flood {
		msg, err := jws.Parse(f)
		if err != nil {
			t.Fatalf("jws.Parse(flood token) error = %v", err)
		}
		kid := msg.Signatures()[0].ProtectedHeaders().KeyID()
		if _, known := set.LookupKeyID(kid); known || kid == "" {
			t.Errorf("flood token kid = %q, want one the key set does not hold", kid)
		}
		kids[kid] = true
		if _, err := jws.Verify(f, jws.WithKeySet(set, jws.WithRequireKid(false), jws.WithUseDefault(true))); err == nil {
			t.Errorf("jws.Verify(flood token) error = nil, want a signature failure")
		}
		if got, want := strings.SplitN(string(f), ".", 2)[1], strings.SplitN(string(tokens[0]), ".", 2)[1]; got != want {
			t.Errorf("flood token payload and signature differ from the template's; want only the header changed")
		}
		hdr, _ := base64.RawURLEncoding.DecodeString(strings.SplitN(string(f), ".", 2)[0])
		if !strings.Contains(string(hdr), `"typ":"JWT"`) {
			t.Errorf("flood header = %s, want typ JWT so that only the kid is wrong", hdr)
		}
	}
	if len(kids) != len(flood) {
		t.Errorf("floodTokens(2) gave %d distinct kids, want %d", len(kids), len(flood))
	}
}

// TestFloodReportPairsRounds: d is compared with b, e, f and g of its own round, so a
// round where the whole machine ran slower does not read as a cliff.
func TestFloodReportPairsRounds(t *testing.T) {
	load := func(rps float64, reqs int64) *wrk.Result {
		return &wrk.Result{Requests: reqs, RPS: rps, Elapsed: 6 * time.Second, Status: map[int]int64{200: reqs}}
	}
	flood := func(rps float64, reqs int64) *wrk.Result {
		return &wrk.Result{Requests: reqs, RPS: rps, Elapsed: 6 * time.Second, Status: map[int]int64{401: reqs}}
	}
	s := &suite{cooldown: 2 * time.Second, results: []phaseResult{
		// round 1: b at 150 µs a request; e at 40 µs a refusal; d: 5,000 valid at 165 µs
		// and 1,000 refusals at 40 µs.
		{Phase: phaseMemory, Round: 1, Load: load(6000, 36000), CaddyCPU: 36000 * 150 * time.Microsecond},
		{Phase: phaseFloodAlone, Round: 1, Load: flood(20000, 120000), CaddyCPU: 120000 * 40 * time.Microsecond},
		{Phase: phaseFlood, Round: 1, Load: load(5000, 30000), Flood: flood(1000, 6000), Fetches: 3,
			CaddyCPU: (30000*165 + 6000*40) * time.Microsecond},
		// the floor: 5,400 valid tokens under 1,500 fixed refusals at 30 µs each
		{Phase: phaseFloorAlone, Round: 1, Load: flood(30000, 180000), CaddyCPU: 180000 * 30 * time.Microsecond},
		{Phase: phaseFloor, Round: 1, Load: load(5400, 32400), Flood: flood(1500, 9000),
			CaddyCPU: (32400*150 + 9000*30) * time.Microsecond},
		// round 2: the same, on a machine half as fast throughout
		{Phase: phaseMemory, Round: 2, Load: load(3000, 18000), CaddyCPU: 18000 * 300 * time.Microsecond},
		{Phase: phaseFloodAlone, Round: 2, Load: flood(10000, 60000), CaddyCPU: 60000 * 80 * time.Microsecond},
		{Phase: phaseFlood, Round: 2, Load: load(2500, 15000), Flood: flood(500, 3000), Fetches: 4,
			CaddyCPU: (15000*330 + 3000*80) * time.Microsecond},
		{Phase: phaseFloorAlone, Round: 2, Load: flood(15000, 90000), CaddyCPU: 90000 * 60 * time.Microsecond},
		{Phase: phaseFloor, Round: 2, Load: load(2700, 16200), Flood: flood(750, 4500),
			CaddyCPU: (16200*300 + 4500*60) * time.Microsecond},
	}}
	got := s.floodReport()
	for _, want := range []string{
		"d/b = 83.3% valid-token throughput", "per round: 83.3%, 83.3%",
		"one refusal costs Caddy 60.0 µs of CPU in jwt_partner (e) and 45.0 µs at the floor (g); the flood's refusals took 4% of the gateway's core in d",
		"a valid token's Caddy CPU, the flood's refusals taken out at their cost alone: 225.0 µs in b, 247.5 µs under the unknown-kid flood (d), 225.0 µs under the floor's (f)",
		"none answered 200: true",
		"3 of 4 allowed, 4 of 4 allowed",
		"f/b = 90.0% valid-token throughput under the same flood", "per round: 90.0%, 90.0%; the flood ran at 1125 req/s there",
		"d/f = 92.6% valid-token throughput under the unknown-kid flood over that under the floor's (meets the goal of 90%); per round: 92.6%, 92.6%",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("flood report lacks %q:\n%s", want, got)
		}
	}
}

// TestProbeFloorWantsTheFixedAnswer: the floor phases run only when the route answers the
// fixed 401; a route that does not match (a cheaper 404) or another body fails the probe.
func TestProbeFloorWantsTheFixedAnswer(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"the fixed 401", http.StatusUnauthorized, floorBody, true},
		{"no such route", http.StatusNotFound, "", false},
		{"another body", http.StatusUnauthorized, `{"code":"key_unknown"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != floorPath {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			err := probeFloor(strings.TrimPrefix(srv.URL, "http://"))
			if (err == nil) != tt.ok {
				t.Errorf("probeFloor() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestOperatorTokens: the -operator run's tokens are valid main-client links with ten
// payload fields, shorter than the full ones, and dealt out to the wrk processes so that
// no token goes to two of them.
func TestOperatorTokens(t *testing.T) {
	p, err := newPartner(defaultMix)
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(p.jwks)
	if err != nil {
		t.Fatal(err)
	}
	full, err := p.mint(1)
	if err != nil {
		t.Fatal(err)
	}
	p.short = true
	tokens, err := p.mint(5)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := jws.Verify(tokens[0], jws.WithKeySet(set))
	if err != nil {
		t.Fatalf("jws.Verify(short token) error = %v", err)
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	var fields int
	for _, v := range c.Payload.Values() {
		if v != "" {
			fields++
		}
	}
	if fields != 10 {
		t.Errorf("short token has %d payload fields, want 10", fields)
	}
	if len(tokens[0]) >= len(full[0]) {
		t.Errorf("short token is %d bytes, want fewer than the full token's %d", len(tokens[0]), len(full[0]))
	}

	s := &suite{out: t.TempDir()}
	files, err := s.writeTokenParts("x", tokens, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Fields(string(data))...)
	}
	if len(files) != 2 || len(got) != len(tokens) {
		t.Fatalf("writeTokenParts(5 tokens, 2) = %d files holding %d tokens, want 2 holding 5", len(files), len(got))
	}
	seen := map[string]bool{}
	for _, tok := range got {
		seen[tok] = true
	}
	if len(seen) != len(tokens) {
		t.Errorf("the parts hold %d distinct tokens, want %d (each token in one part)", len(seen), len(tokens))
	}
}

// TestBatchSizeWithoutBaseline: with phase a skipped, the first gateway phase mints what a
// core could answer at most, not -max-tokens: 300,000 RSA signatures take longer than the
// tokens live.
func TestBatchSizeWithoutBaseline(t *testing.T) {
	s := &suite{phaseRPS: map[string]float64{}, maxTokens: 300000, warmup: 2 * time.Second, duration: 10 * time.Second, conns: 32, gomaxprocs: 1}
	if n := s.batchSize(phaseMemory); n >= s.maxTokens || n < gatewayCeilingRPS*12 {
		t.Errorf("batchSize with no rate known = %d, want about %d (the ceiling for 12.2 s), under -max-tokens", n, gatewayCeilingRPS*12)
	}
	s.gomaxprocs = 2
	if n1, n2 := (&suite{phaseRPS: map[string]float64{}, maxTokens: 300000, warmup: 2 * time.Second, duration: 10 * time.Second, conns: 32, gomaxprocs: 1}).batchSize(phaseRedis), s.batchSize(phaseRedis); n2 <= n1 {
		t.Errorf("batchSize with GOMAXPROCS 2 = %d, want more than with 1 (%d)", n2, n1)
	}
	s.estRPS = 5000 // once the baseline ran, its rate decides
	if n := s.batchSize(phaseMemory); n != 5000*12+int(0.2*5000)+64 {
		t.Errorf("batchSize after a baseline of 5,000/s = %d, want %d", n, 5000*12+int(0.2*5000)+64)
	}
}
