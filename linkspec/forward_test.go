package linkspec

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestAssertion(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	f := Forwarded{Partner: "acme", Endpoint: "url", Kind: "main", Issuer: "https://acme.example", KeyID: "k1", Claims: "eyJ9", RequestID: "r-1"}
	with := func(edit func(*Forwarded)) Forwarded { g := f; edit(&g); return g }
	a := SignAssertion(secret, now, f)

	tests := []struct {
		name      string
		secret    []byte
		assertion string
		at        time.Time
		f         Forwarded
		want      error
	}{
		{"valid", secret, a, now, f, nil},
		{"valid within max age", secret, a, now.Add(AssertionMaxAge), f, nil},
		{"expired", secret, a, now.Add(AssertionMaxAge + time.Second), f, errAssertionExpired},
		{"from the future", secret, a, now.Add(-AssertionMaxAge - time.Second), f, errAssertionExpired},
		{"missing", secret, "", now, f, errAssertionMissing},
		{"other secret", []byte("another secret of the same size.."), a, now, f, errAssertionInvalid},
		{"other partner", secret, a, now, with(func(g *Forwarded) { g.Partner = "evil" }), errAssertionInvalid},
		{"other claims", secret, a, now, with(func(g *Forwarded) { g.Claims = "eyJ8" }), errAssertionInvalid},
		{"other request id", secret, a, now, with(func(g *Forwarded) { g.RequestID = "r-2" }), errAssertionInvalid},
		{"no request id", secret, a, now, with(func(g *Forwarded) { g.RequestID = "" }), errAssertionInvalid},
		{"fields shifted", secret, a, now, with(func(g *Forwarded) { g.Partner, g.Endpoint = "acmeurl", "" }), errAssertionInvalid},
		{"garbage", secret, "v2.x.y", now, f, errAssertionInvalid},
		{"version 1", secret, "v1" + a[2:], now, f, errAssertionInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyAssertion(tt.secret, tt.assertion, tt.at, tt.f)
			if !errors.Is(err, tt.want) {
				t.Errorf("VerifyAssertion() = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestAssertionMACReused: the pooled HMAC states give the same MAC as a fresh HMAC of the
// NUL-terminated fields, call after call and with secrets alternating.
func TestAssertionMACReused(t *testing.T) {
	secrets := [][]byte{[]byte("0123456789abcdef0123456789abcdef"), []byte("another secret"), []byte("0123456789abcdef0123456789abcdeF")}
	for i := range 30 {
		secret := secrets[i%len(secrets)]
		f := Forwarded{Partner: "acme", Endpoint: "url", Kind: "main", Issuer: "https://acme.example", KeyID: "k1",
			Claims: strings.Repeat("eyJ9", i), RequestID: fmt.Sprintf("r-%d", i)}
		ref := hmac.New(sha256.New, secret)
		for _, s := range []string{"partnergate-assertion-v2", "1800000000", f.Partner, f.Endpoint, f.Kind, f.Issuer, f.KeyID, f.Claims, f.RequestID} {
			ref.Write(append([]byte(s), 0))
		}
		if got, want := assertionMAC(secret, "1800000000", f), ref.Sum(nil); !hmac.Equal(got, want) {
			t.Fatalf("call %d: assertionMAC = %x, want %x", i, got, want)
		}
	}
}

func BenchmarkSignAssertion(b *testing.B) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	f := Forwarded{Partner: "acme", Endpoint: "url", Kind: "main", Issuer: "https://acme.example", KeyID: "k1",
		Claims: strings.Repeat("eyJpc3MiOiJodHRwczovL2FjbWUuZXhhbXBsZSJ9", 20), RequestID: "5f0c6f3e-2a0b-4c1e-9d51-1b6f0e0a9c11"}
	now := time.Unix(1_800_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		_ = SignAssertion(secret, now, f)
	}
}

func TestValidHeaderPrefix(t *testing.T) {
	for p, want := range map[string]bool{
		"X-Partner-": true, "X-Link-": true, "Gw": true,
		"": false, "X Partner": false, "X:Partner-": false, "X-Pärtner-": false, "X\r\nEvil: 1": false,
	} {
		if got := ValidHeaderPrefix(p); got != want {
			t.Errorf("ValidHeaderPrefix(%q) = %v, want %v", p, got, want)
		}
	}
}
