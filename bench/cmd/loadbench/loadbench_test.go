package main

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
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
			want: []string{"admin 127.0.0.1:2", "http://127.0.0.1:3", "reverse_proxy 127.0.0.1:4"}, notWant: []string{"jwt_partner"}},
		{name: "memory store with jwks_file", cfg: func(c caddyConfig) caddyConfig {
			c.Gateway, c.JWKSFile = true, "/tmp/jwks.json"
			return c
		}, want: []string{"order jwt_partner before reverse_proxy", "nonce_store memory", "jwks_file  /tmp/jwks.json", "reverse_proxy 127.0.0.1:4"}, notWant: []string{"redis", "jwks_url"}},
		{name: "redis store with jwks_url", cfg: func(c caddyConfig) caddyConfig {
			c.Gateway, c.JWKSURL, c.Cooldown, c.Redis = true, "https://127.0.0.1:5/jwks.json", "2s", "127.0.0.1:6"
			return c
		}, want: []string{"nonce_store redis {", "address 127.0.0.1:6", "jwks_url   https://127.0.0.1:5/jwks.json", "refresh_cooldown 2s"}, notWant: []string{"nonce_store memory", "jwks_file"}},
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
	p, err := newPartner()
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
