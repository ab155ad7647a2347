package linktoken_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
	"github.com/partnergate/partnergate/problem"
)

// tableCase is one case of linktokentest's rejection or acceptance table.
type tableCase struct {
	name  string
	token func(testing.TB) string
	rules linktoken.Rules
	now   time.Time
}

// tableCases are the gateway's rejection cases, then its acceptance cases.
func tableCases() []tableCase {
	var cases []tableCase
	for _, tc := range linktokentest.Rejections() {
		cases = append(cases, tableCase{tc.Name, tc.Token, tc.Rules, tc.Now})
	}
	for _, tc := range linktokentest.Acceptances() {
		cases = append(cases, tableCase{tc.Name, tc.Token, tc.Rules, tc.Now})
	}
	return cases
}

// TestTraceAgreesWithVerify runs the gateway's rejection and acceptance tables through
// Trace: its verdict is Verify's, a rejected token's first failing step carries the code,
// an accepted one has no failed step, and every rule has a step.
func TestTraceAgreesWithVerify(t *testing.T) {
	set := linktokentest.KeySet(t)
	steps := linktoken.NumRules
	for _, tc := range tableCases() {
		t.Run(tc.name, func(t *testing.T) {
			v, err := linktoken.NewVerifier(tc.rules, linktoken.WithClock(func() time.Time { return tc.now }))
			if err != nil {
				t.Fatal(err)
			}
			token := []byte(tc.token(t))
			want, wantErr := v.Verify(context.Background(), token, set)
			tr := v.Trace(context.Background(), token, set)
			if !reflect.DeepEqual(tr.Err, wantErr) || !reflect.DeepEqual(tr.Token, want) {
				t.Fatalf("Trace(%s) = %+v, %v; Verify = %+v, %v", tc.name, tr.Token, tr.Err, want, wantErr)
			}
			if len(tr.Steps) != steps {
				t.Errorf("Trace(%s) has %d steps, want %d, one a rule", tc.name, len(tr.Steps), steps)
			}
			var first *linktoken.Step
			for i := range tr.Steps {
				if tr.Steps[i].Outcome == linktoken.Failed {
					first = &tr.Steps[i]
					break
				}
			}
			switch {
			case wantErr == nil && first != nil:
				t.Errorf("Trace(%s) accepted, but step %q failed: %s", tc.name, first.Rule, first.Detail)
			case wantErr != nil && (first == nil || first.Code != linktoken.CodeOf(wantErr)):
				t.Errorf("Trace(%s) rejected with %s, but the first failing step is %+v", tc.name, linktoken.CodeOf(wantErr), first)
			}
		})
	}
}

// TestTraceGoesOnPastFailures: a token broken in several independent ways shows each, and a
// fatal failure leaves the rest not reached.
func TestTraceGoesOnPastFailures(t *testing.T) {
	set := linktokentest.KeySet(t)
	v, err := linktoken.NewVerifier(linktoken.Rules{Issuer: "https://other.example", Audience: "other"}, linktoken.WithClock(func() time.Time { return jwttest.Now }))
	if err != nil {
		t.Fatal(err)
	}
	c := jwttest.MainClaims()
	delete(c, "nonce")
	tr := v.Trace(context.Background(), []byte(jwttest.Token(t, "ES256", "ec-1", c)), set)
	var failed []problem.Code
	for _, s := range tr.Steps {
		if s.Outcome == linktoken.Failed {
			failed = append(failed, s.Code)
		}
	}
	if want := []problem.Code{problem.CodeIssuerInvalid, problem.CodeAudienceInvalid, problem.CodeNonceMissing}; !reflect.DeepEqual(failed, want) {
		t.Errorf("Trace failed steps = %q, want %q", failed, want)
	}
	if linktoken.CodeOf(tr.Err) != problem.CodeIssuerInvalid {
		t.Errorf("Trace verdict = %v, want issuer_invalid", tr.Err)
	}
	for _, s := range tr.Steps {
		if strings.HasPrefix(s.Rule, "aud is or contains") && !strings.Contains(s.Detail, `aud is ["`) {
			t.Errorf("Trace aud step detail = %q, want the values found", s.Detail)
		}
	}

	tr = v.Trace(context.Background(), []byte("not.a-token"), set)
	if tr.Steps[0].Outcome != linktoken.Failed || tr.Steps[0].Code != problem.CodeTokenMalformed {
		t.Errorf("Trace(malformed) first step = %+v, want failed token_malformed", tr.Steps[0])
	}
	for _, s := range tr.Steps[1:] {
		if s.Outcome != linktoken.NotReached {
			t.Errorf("Trace(malformed) step %q = %v, want not reached", s.Rule, s.Outcome)
		}
	}
}

// TestVerifyDoesNotAllocateForTheTrace: the trace costs the hot path nothing.
func TestVerifyDoesNotAllocateForTheTrace(t *testing.T) {
	set := linktokentest.KeySet(t)
	v, err := linktoken.NewVerifier(linktoken.Rules{Issuer: "x", Audience: "y"})
	if err != nil {
		t.Fatal(err)
	}
	token := []byte("not.a-token")
	// One allocation: the *Error of the rejection.
	if n := testing.AllocsPerRun(100, func() { _, _ = v.Verify(context.Background(), token, set) }); n > 1 {
		t.Errorf("Verify(malformed) allocates %v times, want at most 1", n)
	}
}
