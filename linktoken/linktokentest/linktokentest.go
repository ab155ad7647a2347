// Package linktokentest holds the gateway's rejection cases as data, so that every verdict
// of linktoken's verifier can be asserted by more than one consumer: linktoken's own tests
// run each case through Verifier.Verify, and the partner kit's tests run the same cases
// through partnerkit.Check, whose verdict and explanation must agree with the gateway's.
//
// The cases sign with a fixed set of keys made once per test binary and are read at the
// fixed instant Now, so that every time boundary is exact.
package linktokentest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linktoken"
)

// The partner of every case: its agreed issuer and audience, and the nonce of a valid token.
const (
	Issuer   = jwttest.Issuer
	Audience = jwttest.Audience
	Nonce    = jwttest.Nonce
)

// Now is the instant a valid token of the cases is issued at.
var Now = jwttest.Now

// KeySetJSON is the partner's published jwks.json: kid "rsa-1" (RSA, no alg member),
// "rsa-rs" (RSA, alg RS256), "ec-1" (EC P-256, no alg) and "ec-es" (EC P-256, alg ES256).
func KeySetJSON(tb testing.TB) []byte { return jwttest.StandardSetJSON(tb) }

// KeySet is KeySetJSON parsed as the gateway parses it.
func KeySet(tb testing.TB) *linktoken.KeySet {
	tb.Helper()
	s, err := linktoken.ParseKeySet(KeySetJSON(tb))
	if err != nil {
		tb.Fatalf("ParseKeySet(standard set) = %v", err)
	}
	return s
}

// MainClaims is a valid main-client link issued at Now.
func MainClaims() map[string]any { return jwttest.MainClaims() }

// GoClaims is a valid Go link issued at Now.
func GoClaims() map[string]any { return jwttest.GoClaims() }

// Token signs claims with the standard key of kid under alg, with a regular header.
func Token(tb testing.TB, alg, kid string, c map[string]any) string {
	tb.Helper()
	return jwttest.Token(tb, alg, kid, c)
}

// The fixture's helpers under the names the case table uses.
var (
	keys       = jwttest.Keys
	b64u       = jwttest.B64u
	signRaw    = jwttest.SignRaw
	kidFor     = jwttest.KidFor
	headerJSON = jwttest.HeaderJSON
	claimsJSON = jwttest.ClaimsJSON
	resign     = jwttest.Resign
)

// jwkJSON is the public JWK of key with kid and, when alg is not "", alg.
func jwkJSON(tb testing.TB, key any, kid, alg string) map[string]any {
	tb.Helper()
	return jwttest.JWK(tb, key, kid, alg, nil)
}

// CaddyfileLines are the lines of a Caddyfile partner block that give a partner the rules r
// and the key set file jwks: the tests that run the cases through a real gateway configure
// one partner per rule set with them.
func CaddyfileLines(jwks string, r linktoken.Rules) []string {
	lines := []string{"jwks_file " + jwks, "issuer " + r.Issuer, "audience " + r.Audience}
	if len(r.Algorithms) > 0 {
		lines = append(lines, "algorithms "+strings.Join(r.Algorithms, " "))
	}
	if len(r.Kinds) > 0 {
		kinds := make([]string, len(r.Kinds))
		for i, k := range r.Kinds {
			kinds[i] = string(k)
		}
		lines = append(lines, "kinds "+strings.Join(kinds, " "))
	}
	if r.MaxLifetime > 0 {
		lines = append(lines, "max_lifetime "+r.MaxLifetime.String())
	}
	if r.Leeway > 0 {
		lines = append(lines, "leeway "+r.Leeway.String())
	}
	if r.NonceMinLength > 0 {
		lines = append(lines, fmt.Sprintf("nonce_min_length %d", r.NonceMinLength))
	}
	if r.NonceMaxLength > 0 {
		lines = append(lines, fmt.Sprintf("nonce_max_length %d", r.NonceMaxLength))
	}
	return lines
}
