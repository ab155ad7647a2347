package partnerkit

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/problem"
)

// Outcome of one rule in a Report.
type Outcome string

const (
	Passed     Outcome = "passed"
	Failed     Outcome = "failed"
	NotChecked Outcome = "not checked" // an earlier failure left nothing to check
	Offline    Outcome = "offline"     // needs the gateway's state (the nonce store)
)

// Step is one rule of the gateway's verification, in the gateway's order.
type Step struct {
	Rule    string       // what the gateway requires, in a sentence
	RuleID  string       // the docs/interface.md rule it enforces, "" for the gateway's own
	Code    problem.Code // the code the gateway answers when this rule fails
	Outcome Outcome
	Detail  string                // why it failed, or what was found
	Fields  []linkspec.FieldError // the failing payload fields, or the dropped ones
}

// Report explains a token rule by rule. The steps are linktoken's trace of the gateway's
// own verification, and the verdict (Accepted, Code, Detail) is that verification's.
type Report struct {
	Steps    []Step
	Accepted bool
	Code     problem.Code
	Detail   string
	Fields   []linkspec.FieldError
	Kind     linkspec.Kind
	// Dropped lists the optional payload fields the gateway drops because their values
	// are malformed or blank, with the reason (an accepted token only): the link works,
	// but the service does not get those values.
	Dropped []linkspec.FieldError
	// KeySetError is set when the gateway would refuse the key set itself; no token can
	// then be accepted (keys_unavailable at the gateway).
	KeySetError string
}

// CodeKeySetRefused is the code Check reports when the key set fails the gateway's load
// checks: the gateway keeps no keys for the partner and answers keys_unavailable.
const CodeKeySetRefused = problem.CodeKeysUnavailable

// Check explains, rule by rule, why the gateway would accept or reject token for a partner
// with the given rules and published key set (jwks.json), at time now. It cannot see the
// gateway's nonce store: a token it accepts may still be refused as replayed.
//
// The token is trimmed of surrounding white space first, as the gateway's endpoints do. A
// key set the gateway refuses is reported in KeySetError and treated as the gateway treats
// a partner whose key set could not be loaded: a token that gets as far as the key lookup
// is refused with keys_unavailable.
func Check(ctx context.Context, token string, jwks []byte, rules linktoken.Rules, now time.Time) *Report {
	token = strings.TrimSpace(token)
	r := &Report{}
	v, err := linktoken.NewVerifier(rules, linktoken.WithClock(func() time.Time { return now }))
	if err != nil {
		r.Detail = "the rules are not valid: " + err.Error()
		return r
	}
	set, err := linktoken.ParseKeySet(jwks)
	if err != nil {
		r.KeySetError = err.Error()
		set = nil // a nil set answers keys_unavailable, as an unloaded set at the gateway
	}
	tr := v.Trace(ctx, []byte(token), set)
	for _, s := range tr.Steps {
		step := Step{Rule: s.Rule, RuleID: s.ID, Code: s.Code, Outcome: outcomes[s.Outcome], Detail: s.Detail, Fields: s.Fields}
		if s.Outcome == linktoken.Failed && s.Code == CodeKeySetRefused && r.KeySetError != "" {
			step.Detail = "the gateway refuses the key set: " + r.KeySetError
		}
		r.Steps = append(r.Steps, step)
	}
	r.Steps = append(r.Steps, Step{
		Rule:    "the nonce has not been used before",
		RuleID:  "LIM-2",
		Code:    "token_replayed",
		Outcome: Offline,
		Detail:  "only the gateway's nonce store knows: each token is accepted once",
	})
	if tr.Err != nil {
		var le *linktoken.Error
		if errors.As(tr.Err, &le) {
			r.Code, r.Detail, r.Fields = le.Code, le.Detail, le.Fields
		} else {
			r.Detail = tr.Err.Error()
		}
		if r.Code == CodeKeySetRefused && r.KeySetError != "" {
			r.Detail = "the gateway refuses this key set: " + r.KeySetError
		}
		return r
	}
	r.Accepted = true
	r.Kind = tr.Token.Kind
	r.Dropped = tr.Token.Dropped
	return r
}

var outcomes = map[linktoken.Outcome]Outcome{
	linktoken.Passed:     Passed,
	linktoken.Failed:     Failed,
	linktoken.NotReached: NotChecked,
}
