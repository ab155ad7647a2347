package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
)

func TestParseMix(t *testing.T) {
	tests := []struct {
		alg, link string
		want      mix
		ok        bool
	}{
		{"RS256", "main", mix{jwa.RS256, linkspec.KindMain}, true},
		{"PS256", "go", mix{jwa.PS256, linkspec.KindGo}, true},
		{"ES256", "main", mix{jwa.ES256, linkspec.KindMain}, true},
		{"HS256", "main", mix{}, false},
		{"none", "main", mix{}, false},
		{"rs256", "main", mix{}, false},
		{"RS256", "mobile", mix{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.alg+"/"+tt.link, func(t *testing.T) {
			got, err := parseMix(tt.alg, tt.link)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("parseMix(%q, %q) = %v, %v; want %v, ok %v", tt.alg, tt.link, got, err, tt.want, tt.ok)
			}
		})
	}
}

// TestMintedTokensVerifyForEachMix: for every algorithm and link kind, the minted tokens
// pass the gateway's own verifier (linktoken) restricted to that algorithm, read as the
// right kind with no field dropped, and the flood made from one names the same alg; the
// phase's Caddyfile allows that algorithm alone.
func TestMintedTokensVerifyForEachMix(t *testing.T) {
	for _, alg := range []jwa.SignatureAlgorithm{jwa.RS256, jwa.PS256, jwa.ES256} {
		p, err := newPartner(mix{alg: alg, kind: linkspec.KindMain})
		if err != nil {
			t.Fatalf("newPartner(%s) error = %v", alg, err)
		}
		set, err := linktoken.ParseKeySet(p.jwks)
		if err != nil {
			t.Fatalf("linktoken.ParseKeySet(%s key set) error = %v", alg, err)
		}
		v, err := linktoken.NewVerifier(linktoken.Rules{Issuer: benchIssuer, Audience: benchAudience, Algorithms: []string{alg.String()}})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := caddyConfig{Gateway: true, JWKSFile: "/tmp/jwks.json", Partner: benchPartner, Issuer: benchIssuer,
			Audience: benchAudience, Algorithm: alg.String()}.render()
		if err != nil {
			t.Fatal(err)
		}
		if want := "algorithms " + alg.String() + "\n"; !strings.Contains(string(cfg), want) {
			t.Errorf("render() = %q, want it to contain %q", cfg, want)
		}
		for _, kind := range []linkspec.Kind{linkspec.KindMain, linkspec.KindGo} {
			for _, short := range []bool{false, true} {
				p := *p
				p.mix.kind, p.short = kind, short
				name := alg.String() + "/" + string(kind)
				if short {
					name += "/short"
				}
				t.Run(name, func(t *testing.T) {
					tokens, err := p.mint(2)
					if err != nil {
						t.Fatalf("mint(2) error = %v", err)
					}
					for _, tok := range tokens {
						got, err := v.Verify(context.Background(), tok, set)
						if err != nil {
							t.Fatalf("Verify(minted token) error = %v", err)
						}
						if got.Alg != alg.String() || got.Kind != kind || got.KeyID != benchKeyID || len(got.Dropped) != 0 {
							t.Errorf("Verify(minted token) = alg %q, kind %q, kid %q, dropped %v; want %q, %q, %q, none",
								got.Alg, got.Kind, got.KeyID, got.Dropped, alg, kind, benchKeyID)
						}
					}
					flood, err := floodTokens(tokens[0], 1)
					if err != nil {
						t.Fatalf("floodTokens() error = %v", err)
					}
					var hdr struct{ Alg, Kid string }
					seg, _, _ := strings.Cut(string(flood[0]), ".")
					data, _ := base64.RawURLEncoding.DecodeString(seg)
					if err := json.Unmarshal(data, &hdr); err != nil || hdr.Alg != alg.String() || hdr.Kid == benchKeyID {
						t.Errorf("flood header = %s, want alg %s and another kid", data, alg)
					}
				})
			}
		}
	}
}
