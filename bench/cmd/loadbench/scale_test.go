package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

func TestCaddyfileWithPartnersAndCluster(t *testing.T) {
	cfg := caddyConfig{Admin: "127.0.0.1:2", Listen: "127.0.0.1:3", Upstream: "127.0.0.1:4", Gateway: true,
		JWKSFile: "/out/jwks.json", Partner: benchPartner, Issuer: benchIssuer, Audience: benchAudience,
		RedisCluster: []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}}
	for i := 1; i < 3; i++ {
		name := otherPartnerName(i)
		cfg.Partners = append(cfg.Partners, benchPartnerConfig{Name: name, Issuer: "https://" + name + ".example", JWKSFile: "/out/jwks-" + name + ".json"})
	}
	out, err := cfg.render()
	if err != nil {
		t.Fatalf("render() error = %v", err)
	}
	text := string(out)
	if n := strings.Count(text, "\t\t\tpartner "); n != 3 {
		t.Errorf("render() has %d partner blocks, want 3:\n%s", n, text)
	}
	for _, want := range []string{
		"partner acme {", "jwks_file  /out/jwks.json",
		"partner p0001 {", "issuer     https://p0001.example", "jwks_file  /out/jwks-p0001.json",
		"partner p0002 {", "issuer     https://p0002.example", "jwks_file  /out/jwks-p0002.json",
		"addresses 127.0.0.1:7001 127.0.0.1:7002 127.0.0.1:7003",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("render() lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "audience   "+benchAudience); n != 3 {
		t.Errorf("render() has the audience %d times, want once a partner", n)
	}
	if strings.Contains(text, "address 127.") || strings.Contains(text, "nonce_store memory") {
		t.Errorf("render() with a cluster has a single address or the memory store:\n%s", text)
	}
}

// TestMintValidSpreadsTokensOverPartners checks each token line: the partner whose turn it
// is signed it with its own key and issuer, and the line carries that partner's path
// (none for the first, whose path is the wrk URL's).
func TestMintValidSpreadsTokensOverPartners(t *testing.T) {
	s := &suite{partners: 3, out: t.TempDir()}
	var err error
	if s.partner, err = newPartner(defaultMix); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if err := s.setupPartners(); err != nil {
		t.Fatalf("setupPartners() error = %v", err)
	}
	lines, err := s.mintValid(7)
	if err != nil {
		t.Fatalf("mintValid(7) error = %v", err)
	}
	if len(lines) != 7 {
		t.Fatalf("mintValid(7) = %d lines", len(lines))
	}
	for i, line := range lines {
		who := i % 3
		path, token, hasPath := strings.Cut(string(line), " ")
		if !hasPath {
			token = path
		}
		wantIss, jwks := benchIssuer, s.partner.jwks
		switch {
		case who == 0 && hasPath:
			t.Errorf("line %d = %.40q…, want the first partner's token without a path", i, line)
		case who > 0:
			if want := fmt.Sprintf("/partner/p%04d/url", who); path != want {
				t.Errorf("line %d has path %q, want %q", i, path, want)
			}
			wantIss = fmt.Sprintf("https://p%04d.partner.bench.example", who)
			if jwks, err = os.ReadFile(s.others[who-1].JWKSFile); err != nil {
				t.Fatal(err)
			}
		}
		set, err := jwk.Parse(jwks)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := jws.Verify([]byte(token), jws.WithKeySet(set, jws.WithRequireKid(true)))
		if err != nil {
			t.Errorf("line %d: not signed by partner %d's key set: %v", i, who, err)
			continue
		}
		if !strings.Contains(string(payload), `"iss":"`+wantIss+`"`) {
			t.Errorf("line %d: payload %.80s…, want iss %s", i, payload, wantIss)
		}
	}
}

func TestPartnerKeysAreCached(t *testing.T) {
	dir := t.TempDir()
	first, err := loadPartnerKeys(dir, 2)
	if err != nil {
		t.Fatalf("loadPartnerKeys() error = %v", err)
	}
	if first[0].Equal(first[1]) {
		t.Fatal("two partners got the same key")
	}
	again, err := loadPartnerKeys(dir, 3)
	if err != nil {
		t.Fatalf("loadPartnerKeys() again error = %v", err)
	}
	for i := range first {
		if !again[i].Equal(first[i]) {
			t.Errorf("key %d was generated again, want it from the cache", i)
		}
	}
	if again[2] == nil || again[2].N.BitLen() != benchRSABits {
		t.Errorf("third key = %v, want a new RSA-%d key", again[2], benchRSABits)
	}
	// A damaged cache file is replaced, not fatal.
	os.WriteFile(filepath.Join(dir, "partner-0001.pem"), []byte("garbage"), 0o600)
	if keys, err := loadPartnerKeys(dir, 1); err != nil || keys[0].Equal(first[0]) {
		t.Errorf("loadPartnerKeys() over a damaged file = %v, %v, want a new key", keys, err)
	}
}

func TestScaleFlags(t *testing.T) {
	tests := []struct {
		partners, gomaxprocs int
		cpus                 string
		wantErr              string
	}{
		{1, 1, "1", ""},
		{1000, 2, "0,1", ""},
		{1, 4, "0-3", ""},
		{1, 2, "0,1,1", ""},
		{0, 1, "1", "-partners 0"},
		{1, 0, "1", "-gomaxprocs 0"},
		{1, 2, "1", "at most one P per CPU"},
		{1, 1, "x", "not a CPU number"},
		{1, 1, "3-1", "not a range"},
		{1, 1, "0,", "not a CPU number"},
	}
	for _, tt := range tests {
		s := &suite{partners: tt.partners, gomaxprocs: tt.gomaxprocs, gwCPU: tt.cpus}
		err := s.checkScale()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("-partners %d -gomaxprocs %d -gateway-cpu %s: error = %v, want %q", tt.partners, tt.gomaxprocs, tt.cpus, err, tt.wantErr)
		}
	}
	if n, err := cpuList("0-2,5"); n != 4 || err != nil {
		t.Errorf("cpuList(0-2,5) = %d, %v, want 4", n, err)
	}
}

func TestCaddyMeasures(t *testing.T) {
	rss, err := parseVmRSS([]byte("Name:\tcaddy\nVmPeak:\t  90000 kB\nVmRSS:\t   51200 kB\nThreads:\t7\n"))
	if err != nil || rss != 50<<20 {
		t.Errorf("parseVmRSS() = %d, %v, want 50 MiB", rss, err)
	}
	if _, err := parseVmRSS([]byte("Name:\tcaddy\n")); err == nil {
		t.Error("parseVmRSS() without VmRSS: no error")
	}
	log := `{"level":"info","ts":1764230000.100,"msg":"maxprocs: Leaving GOMAXPROCS=1"}
{"level":"info","ts":1764230000.250,"msg":"using config from file","file":"/out/Caddyfile.b"}
{"level":"info","ts":1764230000.300,"msg":"adapted config to JSON","adapter":"caddyfile"}
{"level":"info","ts":1764230001.500,"msg":"serving initial configuration"}
`
	if got := caddyLoadTime([]byte(log)); got < 1249*time.Millisecond || got > 1251*time.Millisecond {
		t.Errorf("caddyLoadTime() = %v, want 1.25s", got)
	}
	if got := caddyLoadTime([]byte(strings.Split(log, "\n")[1])); got != 0 {
		t.Errorf("caddyLoadTime() without the serving line = %v, want 0", got)
	}
}
