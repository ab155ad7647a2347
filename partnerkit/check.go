package partnerkit

import (
	"context"
	"strings"
	"time"

	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/problem"
)

// Outcome of one rule in a Report. The values are those of the report's JSON "result".
type Outcome = linktoken.Outcome

const (
	Passed     = linktoken.Passed
	Failed     = linktoken.Failed
	NotReached = linktoken.NotReached // an earlier failure left the rule nothing to read
	// Unchecked is the nonce rule's: it needs the gateway's nonce store, which neither
	// Check nor the gateway's dry run reads.
	Unchecked = linktoken.Unchecked
)

// Step is one rule of the gateway's verification, in the gateway's order. Its JSON is one
// element of the report's "rules".
type Step = linktoken.Step

// Report explains a token rule by rule: linktoken's report, whose JSON is what
// `partnerlink check --json` prints and what the gateway's dry run answers.
type Report = linktoken.Report

// Verdicts of a report's JSON.
const (
	VerdictAccepted = linktoken.VerdictAccepted
	VerdictRejected = linktoken.VerdictRejected
)

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
	v, err := linktoken.NewVerifier(rules, linktoken.WithClock(func() time.Time { return now }))
	if err != nil {
		return &Report{Detail: "the rules are not valid: " + err.Error()}
	}
	var keys linktoken.KeySource
	var keySetError string
	set, err := linktoken.ParseKeySet(jwks)
	if err != nil {
		keySetError = err.Error()
		keys = linktoken.RefusedKeySet(err)
	} else {
		keys = set
	}
	rep := v.Trace(ctx, []byte(token), keys).Report("only the gateway's nonce store knows: each token is accepted once")
	rep.KeySetError = keySetError
	return rep
}
