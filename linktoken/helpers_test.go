package linktoken

import (
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/jwttest"
)

// The fixture of every test: internal/jwttest, shared with linktokentest's rejection table.
const (
	testIssuer   = jwttest.Issuer
	testAudience = jwttest.Audience
	testNonce    = jwttest.Nonce
)

// testNow is the injected clock of every test: a fixed instant, so that boundaries are exact.
var testNow = jwttest.Now

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// The fixture's helpers under the names the tests use.
var (
	keys       = jwttest.Keys
	jwkJSON    = jwttest.JWK
	jwksJSON   = jwttest.JWKS
	b64u       = jwttest.B64u
	signRaw    = jwttest.SignRaw
	mainClaims = jwttest.MainClaims
	goClaims   = jwttest.GoClaims
	claimsJSON = jwttest.ClaimsJSON
	headerJSON = jwttest.HeaderJSON
	kidFor     = jwttest.KidFor
	tokenOf    = jwttest.Token
	resign     = jwttest.Resign
	withClaims = jwttest.WithClaims
	rawClaims  = jwttest.RawClaims
)

// standardSet is the partner's set of the verify tests (jwttest.StandardSetJSON): kid
// "rsa-1" (RSA, no alg), "rsa-rs" (RSA, alg RS256), "ec-1" (EC P-256, no alg), "ec-es"
// (alg ES256).
func standardSet(tb testing.TB) *KeySet {
	tb.Helper()
	s, err := ParseKeySet(jwttest.StandardSetJSON(tb))
	if err != nil {
		tb.Fatalf("ParseKeySet(standard set) = %v", err)
	}
	return s
}

func newTestVerifier(tb testing.TB, r Rules) *Verifier {
	tb.Helper()
	if r.Issuer == "" {
		r.Issuer = testIssuer
	}
	if r.Audience == "" {
		r.Audience = testAudience
	}
	v, err := NewVerifier(r, WithClock(fixedClock(testNow)))
	if err != nil {
		tb.Fatalf("NewVerifier: %v", err)
	}
	return v
}
