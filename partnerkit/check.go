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
// own verification, and the verdict (Accepted, Code, Detail and the problem document's
// members) is that verification's: the gateway answers the same code and detail.
type Report struct {
	Steps    []Step
	Accepted bool
	Code     problem.Code
	Detail   string
	Fields   []linkspec.FieldError
	// Expected and MaxLifetime are the problem document's members of the same names:
	// the agreed issuer or audience, and the lifetime limit in seconds.
	Expected    string
	MaxLifetime int64
	// Kind is the kind of an accepted link, and of a rejected one whose payload was read
	// (payload_invalid, kind_not_allowed); KindFrom the fields that made it a main link.
	Kind     linkspec.Kind
	KindFrom []string
	// Dropped lists the optional payload fields the gateway drops because their values
	// are malformed or blank, with the reason (an accepted token only): the link works,
	// but the service does not get those values.
	Dropped []linkspec.FieldError
	// KeySetError is set when the gateway would refuse the key set itself: which key and
	// why. No token can then be accepted: the gateway answers keys_unavailable with this
	// reason (jwks_url), or does not load the configuration (jwks_file).
	KeySetError string
}

// CodeKeySetRefused is the code Check reports when the key set fails the gateway's load
// checks: the gateway answers keys_unavailable, with the reason in the detail.
const CodeKeySetRefused = problem.CodeKeysUnavailable

// Check explains, rule by rule, why the gateway would accept or reject token for a partner
// with the given rules and published key set (jwks.json), at time now. It cannot see the
// gateway's nonce store: a token it accepts may still be refused as replayed.
//
// The token is trimmed of surrounding white space first, as the gateway's endpoints do. A
// key set the gateway refuses is reported in KeySetError and answered as the gateway
// answers while the set at a partner's jwks_url is refused: a token that gets as far as
// the key lookup is refused with keys_unavailable and the reason. (A gateway that loaded
// an earlier good set still accepts tokens of that set's keys; check cannot know it.)
func Check(ctx context.Context, token string, jwks []byte, rules linktoken.Rules, now time.Time) *Report {
	token = strings.TrimSpace(token)
	r := &Report{}
	v, err := linktoken.NewVerifier(rules, linktoken.WithClock(func() time.Time { return now }))
	if err != nil {
		r.Detail = "the rules are not valid: " + err.Error()
		return r
	}
	var keys linktoken.KeySource
	set, err := linktoken.ParseKeySet(jwks)
	if err != nil {
		r.KeySetError = err.Error()
		keys = linktoken.RefusedKeySet(err)
	} else {
		keys = set
	}
	tr := v.Trace(ctx, []byte(token), keys)
	for _, s := range tr.Steps {
		r.Steps = append(r.Steps, Step{Rule: s.Rule, RuleID: s.ID, Code: s.Code, Outcome: outcomes[s.Outcome], Detail: s.Detail, Fields: s.Fields})
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
			r.Expected, r.MaxLifetime, r.Kind, r.KindFrom = le.Expected, le.MaxLifetime, le.Kind, le.KindFrom
		} else {
			r.Detail = tr.Err.Error()
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
