package linktoken

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/problem"
)

// TestNonceLengthCountsBytes pins the unit of nonce_min_length and nonce_max_length: bytes
// (SECURITY.md, docs/jwt_partner.md), not characters. Every acceptable nonce is visible ASCII, one
// byte a character, so the unit shows only in which rule refuses a multi-byte nonce: one
// whose bytes are outside the bounds is refused for its length even when its characters
// are within them, and one whose bytes are within is refused for its characters even
// when they are fewer than the minimum.
func TestNonceLengthCountsBytes(t *testing.T) {
	const (
		tooShortOrLong = "shorter or longer"
		notASCII       = "not visible ASCII"
	)
	v := newTestVerifier(t, Rules{NonceMinLength: 16, NonceMaxLength: 20})
	set := standardSet(t)
	for _, tc := range []struct {
		name, nonce string
		wantDetail  string // "" for an accepted nonce
	}{
		{"16 ASCII bytes", strings.Repeat("n", 16), ""},
		{"20 ASCII bytes", strings.Repeat("n", 20), ""},
		{"8 two-byte characters, 16 bytes", strings.Repeat("é", 8), notASCII},
		{"19 ASCII and a two-byte character: 20 characters, 21 bytes", strings.Repeat("n", 19) + "é", tooShortOrLong},
		{"15 ASCII bytes", strings.Repeat("n", 15), tooShortOrLong},
		{"14 ASCII and a three-byte character: 15 characters, 17 bytes", strings.Repeat("n", 14) + "€", notASCII},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tokenOf(t, ES256, "ec-1", withClaims(func(c map[string]any) { c["nonce"] = tc.nonce }))
			got, err := v.Verify(context.Background(), []byte(tok), set)
			if tc.wantDetail == "" {
				if err != nil {
					t.Fatalf("Verify(nonce of %d bytes) = %v, want the token", len(tc.nonce), err)
				}
				if got.Nonce != tc.nonce {
					t.Errorf("Verify().Nonce = %q, want %q", got.Nonce, tc.nonce)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != problem.CodeNonceInvalid || !strings.Contains(e.Detail, tc.wantDetail) {
				t.Errorf("Verify(nonce of %d bytes, %d characters) = %v, want %s saying %q", len(tc.nonce), len([]rune(tc.nonce)), err, problem.CodeNonceInvalid, tc.wantDetail)
			}
		})
	}
}
