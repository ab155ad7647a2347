package linktoken

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/partnergate/partnergate/problem"
)

// TestNegativeLeewayMeansNone: zero asks for DefaultLeeway, so a negative Leeway is how a
// partner is held to nbf and exp exactly.
func TestNegativeLeewayMeansNone(t *testing.T) {
	exp := testNow.Add(300 * time.Second)
	tests := []struct {
		name string
		now  time.Time
		want problem.Code // "" for accepted
	}{
		{"at nbf", testNow, ""},
		{"one second before nbf", testNow.Add(-time.Second), problem.CodeTokenNotYetValid},
		{"one nanosecond before exp", exp.Add(-1), ""},
		{"at exp", exp, problem.CodeTokenExpired},
	}
	set := standardSet(t)
	tok := []byte(tokenOf(t, RS256, "rsa-1", mainClaims()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVerifier(Rules{Issuer: testIssuer, Audience: testAudience, Leeway: -1}, WithClock(fixedClock(tt.now)))
			if err != nil {
				t.Fatalf("NewVerifier(Leeway: -1) = %v, want a verifier", err)
			}
			if got := v.Rules().Leeway; got != 0 {
				t.Errorf("Rules().Leeway = %v, want 0", got)
			}
			_, err = v.Verify(context.Background(), tok, set)
			var e *Error
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Verify at %s = %v, want accepted", tt.name, err)
			case tt.want != "" && (!errors.As(err, &e) || e.Code != tt.want):
				t.Errorf("Verify at %s = %v, want %q", tt.name, err, tt.want)
			}
		})
	}
}
