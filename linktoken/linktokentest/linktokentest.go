// Package linktokentest holds the gateway's rejection cases as data, so that every verdict
// of linktoken's verifier can be asserted by more than one consumer: linktoken's own tests
// run each case through Verifier.Verify, and the partner kit's tests run the same cases
// through partnerkit.Check, whose verdict and explanation must agree with the gateway's.
//
// The cases sign with a fixed set of keys made once per test binary and are read at the
// fixed instant jwttest.Now, so that every time boundary is exact. The keys, the partner and
// the valid claims are internal/jwttest's; this package adds the cases and KeySet.
package linktokentest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linktoken"
)

// KeySet is jwttest.StandardSetJSON, the partner's published jwks.json that every case
// signs with, parsed as the gateway parses it.
func KeySet(tb testing.TB) *linktoken.KeySet {
	tb.Helper()
	s, err := linktoken.ParseKeySet(jwttest.StandardSetJSON(tb))
	if err != nil {
		tb.Fatalf("ParseKeySet(standard set) = %v", err)
	}
	return s
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
