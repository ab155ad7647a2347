package linkspec

import (
	"errors"
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
		{"expired", secret, a, now.Add(AssertionMaxAge + time.Second), f, ErrAssertionExpired},
		{"from the future", secret, a, now.Add(-AssertionMaxAge - time.Second), f, ErrAssertionExpired},
		{"missing", secret, "", now, f, ErrAssertionMissing},
		{"other secret", []byte("another secret of the same size.."), a, now, f, ErrAssertionInvalid},
		{"other partner", secret, a, now, with(func(g *Forwarded) { g.Partner = "evil" }), ErrAssertionInvalid},
		{"other claims", secret, a, now, with(func(g *Forwarded) { g.Claims = "eyJ8" }), ErrAssertionInvalid},
		{"other request id", secret, a, now, with(func(g *Forwarded) { g.RequestID = "r-2" }), ErrAssertionInvalid},
		{"no request id", secret, a, now, with(func(g *Forwarded) { g.RequestID = "" }), ErrAssertionInvalid},
		{"fields shifted", secret, a, now, with(func(g *Forwarded) { g.Partner, g.Endpoint = "acmeurl", "" }), ErrAssertionInvalid},
		{"garbage", secret, "v2.x.y", now, f, ErrAssertionInvalid},
		{"version 1", secret, "v1" + a[2:], now, f, ErrAssertionInvalid},
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
