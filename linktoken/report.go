package linktoken

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

// Report explains a token rule by rule. The steps are the trace of the gateway's own
// verification, and the verdict (Accepted, Code, Detail and the problem document's
// members) is that verification's: the gateway answers the same code and detail.
//
// Its JSON (MarshalJSON) is what `partnerlink check --json` prints and what the gateway's
// dry run (POST /partner/{name}/check) answers, so that the two cannot drift. It lives
// here, beside the trace, so that the gateway builds it without importing the partner kit.
type Report struct {
	Steps    []Step
	Accepted bool
	Code     problem.Code
	Detail   string
	Fields   []linkspec.FieldError
	// Hints are the problem document's members: the agreed issuer or audience and the
	// lifetime limit of a refusal; Kind is the kind of an accepted link too, and of a
	// rejected one whose payload was read (payload_invalid, kind_not_allowed).
	problem.Hints
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

// Verdict is the report's verdict, VerdictAccepted or VerdictRejected.
func (r *Report) Verdict() string {
	if r.Accepted {
		return VerdictAccepted
	}
	return VerdictRejected
}

// reportJSON is the wire shape of a Report. Status is derived from Code: the HTTP status
// the link endpoint answers with it.
type reportJSON struct {
	Verdict string                `json:"verdict"`
	Code    problem.Code          `json:"code,omitempty"`
	Status  int                   `json:"status,omitempty"`
	Detail  string                `json:"detail,omitempty"`
	Fields  []linkspec.FieldError `json:"fields,omitempty"`
	problem.Hints
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
		Verdict: r.Verdict(), Code: r.Code, Detail: r.Detail, Fields: r.Fields, Hints: r.Hints,
		Dropped: r.Dropped, KeySetError: r.KeySetError, Rules: r.Steps, RequestID: r.RequestID,
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
		Fields: w.Fields, Hints: w.Hints, Dropped: w.Dropped, KeySetError: w.KeySetError, RequestID: w.RequestID,
	}
	return nil
}

// The nonce rule, which a trace cannot check: it is the gateway's nonce store's.
const (
	nonceRule   = "the nonce has not been used before"
	nonceRuleID = "LIM-2"
)

// Report turns the trace into a Report, ending with the nonce rule, Unchecked, with
// nonceDetail saying why. The partner kit's Check and the gateway's dry run both build
// their reports here.
func (t *Trace) Report(nonceDetail string) *Report {
	r := &Report{Steps: make([]Step, 0, len(t.Steps)+1)}
	r.Steps = append(r.Steps, t.Steps...)
	r.Steps = append(r.Steps, Step{
		RuleID:  nonceRuleID,
		Rule:    nonceRule,
		Outcome: Unchecked,
		Code:    problem.CodeTokenReplayed,
		Detail:  nonceDetail,
	})
	if t.Err != nil {
		var le *Error
		if errors.As(t.Err, &le) {
			r.Code, r.Detail, r.Fields, r.Hints = le.Code, le.Detail, le.Fields, le.Hints
		} else {
			// A verifier error without a code is a bug; the gateway answers it so.
			r.Code, r.Detail = problem.CodeInternal, "the token could not be checked"
		}
		return r
	}
	r.Accepted = true
	r.Kind = string(t.Token.Kind)
	r.Dropped = t.Token.Dropped
	return r
}
