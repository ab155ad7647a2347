package partnerkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/problem"
)

// Outcome of one rule in a Report. The values are those of the report's JSON "result".
type Outcome string

const (
	Passed     Outcome = "passed"
	Failed     Outcome = "failed"
	NotReached Outcome = "not_reached" // an earlier failure left the rule nothing to read
	// Unchecked is the nonce rule's: it needs the gateway's nonce store, which neither
	// Check nor the gateway's dry run reads.
	Unchecked Outcome = "not_checked"
)

// Step is one rule of the gateway's verification, in the gateway's order. Its JSON is one
// element of the report's "rules".
type Step struct {
	RuleID  string                `json:"id"`   // the docs/interface.md rule it enforces, "" for the gateway's own
	Rule    string                `json:"text"` // what the gateway requires, in a sentence
	Outcome Outcome               `json:"result"`
	Code    problem.Code          `json:"code"`             // the code the gateway answers when this rule fails
	Detail  string                `json:"detail,omitempty"` // why it failed, or what was found; never a payload value
	Fields  []linkspec.FieldError `json:"fields,omitempty"` // the failing payload fields, or the dropped ones
}

// Report explains a token rule by rule. The steps are linktoken's trace of the gateway's
// own verification, and the verdict (Accepted, Code, Detail and the problem document's
// members) is that verification's: the gateway answers the same code and detail.
//
// Its JSON (MarshalJSON) is what `partnerlink check --json` prints and what the gateway's
// dry run (POST /partner/{name}/check) answers, so that the two cannot drift.
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
	// RequestID is the gateway's request id, set by a dry run only, so that the service
	// can find the run's log line.
	RequestID string
}

// Verdicts of a report's JSON.
const (
	VerdictAccepted = "accepted"
	VerdictRejected = "rejected"
)

// reportJSON is the wire shape of a Report. Status is derived from Code: the HTTP status
// the link endpoint answers with it.
type reportJSON struct {
	Verdict     string                `json:"verdict"`
	Code        problem.Code          `json:"code,omitempty"`
	Status      int                   `json:"status,omitempty"`
	Detail      string                `json:"detail,omitempty"`
	Fields      []linkspec.FieldError `json:"fields,omitempty"`
	Expected    string                `json:"expected,omitempty"`
	MaxLifetime int64                 `json:"max_lifetime,omitempty"`
	Kind        linkspec.Kind         `json:"kind,omitempty"`
	KindFrom    []string              `json:"kind_from,omitempty"`
	Dropped     []linkspec.FieldError `json:"dropped,omitempty"`
	KeySetError string                `json:"key_set_error,omitempty"`
	Rules       []Step                `json:"rules"`
	RequestID   string                `json:"request_id,omitempty"`
}

// MarshalJSON encodes the report in its one JSON shape: verdict, the code and status the
// link endpoint would answer (rejected only), detail, fields, the problem document's
// members (expected, max_lifetime, kind, kind_from), dropped (accepted only),
// key_set_error, the rules in the gateway's order, and request_id (a dry run only).
func (r *Report) MarshalJSON() ([]byte, error) {
	w := reportJSON{
		Verdict: VerdictRejected, Code: r.Code, Detail: r.Detail, Fields: r.Fields,
		Expected: r.Expected, MaxLifetime: r.MaxLifetime, Kind: r.Kind, KindFrom: r.KindFrom,
		Dropped: r.Dropped, KeySetError: r.KeySetError, Rules: r.Steps, RequestID: r.RequestID,
	}
	if r.Accepted {
		w.Verdict = VerdictAccepted
	}
	if r.Code != "" {
		w.Status = problem.Status(r.Code)
	}
	if w.Rules == nil {
		w.Rules = []Step{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encodes, for a client of the dry run.
func (r *Report) UnmarshalJSON(data []byte) error {
	var w reportJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if w.Verdict != VerdictAccepted && w.Verdict != VerdictRejected {
		return fmt.Errorf("decoding a check report: verdict %q is neither %s nor %s", w.Verdict, VerdictAccepted, VerdictRejected)
	}
	*r = Report{
		Steps: w.Rules, Accepted: w.Verdict == VerdictAccepted, Code: w.Code, Detail: w.Detail,
		Fields: w.Fields, Expected: w.Expected, MaxLifetime: w.MaxLifetime, Kind: w.Kind, KindFrom: w.KindFrom,
		Dropped: w.Dropped, KeySetError: w.KeySetError, RequestID: w.RequestID,
	}
	return nil
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
	rep := TraceReport(v.Trace(ctx, []byte(token), keys), "only the gateway's nonce store knows: each token is accepted once")
	rep.KeySetError = keySetError
	return rep
}

// The nonce rule, which a trace cannot check: it is the gateway's nonce store's.
const (
	nonceRule   = "the nonce has not been used before"
	nonceRuleID = "LIM-2"
)

// TraceReport turns a trace of the gateway's verification (linktoken.Verifier.Trace) into
// a Report, ending with the nonce rule, Unchecked, with nonceDetail saying why. Check and
// the gateway's dry run both build their reports here.
func TraceReport(tr *linktoken.Trace, nonceDetail string) *Report {
	r := &Report{Steps: make([]Step, 0, len(tr.Steps)+1)}
	for _, s := range tr.Steps {
		r.Steps = append(r.Steps, Step{RuleID: s.ID, Rule: s.Rule, Outcome: outcomes[s.Outcome], Code: s.Code, Detail: s.Detail, Fields: s.Fields})
	}
	r.Steps = append(r.Steps, Step{
		RuleID:  nonceRuleID,
		Rule:    nonceRule,
		Outcome: Unchecked,
		Code:    problem.CodeTokenReplayed,
		Detail:  nonceDetail,
	})
	if tr.Err != nil {
		var le *linktoken.Error
		if errors.As(tr.Err, &le) {
			r.Code, r.Detail, r.Fields = le.Code, le.Detail, le.Fields
			r.Expected, r.MaxLifetime, r.Kind, r.KindFrom = le.Expected, le.MaxLifetime, le.Kind, le.KindFrom
		} else {
			// A verifier error without a code is a bug; the gateway answers it so.
			r.Code, r.Detail = problem.CodeInternal, "the token could not be checked"
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
	linktoken.NotReached: NotReached,
}
