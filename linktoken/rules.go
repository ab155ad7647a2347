package linktoken

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

// state is what one verification has read so far; the rules read and fill it in order. It
// lives in a pool: the JSON decoder would move the header and claims to the heap, and
// nothing of them outlives a verification but copies (the decoder copies every string).
type state struct {
	buf    []byte
	ctx    context.Context
	token  []byte
	keys   KeySource
	now    time.Time
	seg    segments
	header header
	claims claims
	alg    int
	key    *Key

	kind    linkspec.Kind
	dropped []linkspec.FieldError
	// failed has bit i set when rule i failed; only a trace runs past a failure.
	failed uint32
}

// rule is one rule of the verification. The list below is the verifier: Verify runs it and
// stops at the first failure, Trace runs it to explain a token.
type rule struct {
	// id is the docs/interface.md rule the check enforces, "" when it is the gateway's own.
	id string
	// code is the rejection code; a failure answers its *Error's own code, which differs
	// where one decoding pass tells several problems apart (the claims) or the key source
	// does (keys_unavailable).
	code problem.Code
	// fatal failures leave the later rules nothing to read.
	fatal bool
	// needs are the earlier rules (bits by index) this one cannot run without.
	needs uint32
	text  func(r *Rules) string
	check func(v *Verifier, s *state) error
	// explain says, for a trace only, what the rule found; nil says nothing.
	explain func(v *Verifier, s *state) string
}

// Indexes of the rules that others name in needs.
const (
	ruleAlgorithm    = 3
	ruleKeyAlgorithm = 9
	ruleSeconds      = 12
	ruleNoncePresent = 21
	ruleDropped      = 24
)

// rules is the verification in docs/architecture.md order, cheap checks first. Nothing of
// the token but its framing and header is read before the signature rule; only a trace,
// which decides nothing, goes on to the claims past a failed signature.
var rules = [...]rule{
	{
		code: problem.CodeTokenMalformed, fatal: true,
		text: static("the token is a compact JWS: three non-empty segments of canonical base64url (no padding, no white space), at most 16 KiB"),
		check: func(_ *Verifier, s *state) (err error) {
			s.seg, err = splitCompact(s.token, &s.buf)
			return err
		},
	},
	{
		code: problem.CodeHeaderInvalid, fatal: true,
		text:  static("the header is a JSON object without duplicate members; typ, alg and kid, where present, are strings (RFC 7515 §5.2)"),
		check: func(_ *Verifier, s *state) error { return decodeHeader(s.seg.header, &s.header) },
	},
	{
		id: "A-AUTH-5", code: problem.CodeHeaderInvalid,
		text:    static(`header typ is "JWT" (any case, or application/jwt)`),
		check:   func(_ *Verifier, s *state) error { return checkType(s.header.Typ) },
		explain: func(_ *Verifier, s *state) string { return fmt.Sprintf("typ is %q", linkspec.Clip(s.header.Typ)) },
	},
	ruleAlgorithm: {
		id: "A-AUTH-2", code: problem.CodeAlgorithmNotAllowed,
		text: func(r *Rules) string { return "header alg is one of " + strings.Join(r.Algorithms, ", ") },
		check: func(v *Verifier, s *state) (err error) {
			s.alg, err = v.checkAlgorithm(s.header.Alg)
			return err
		},
		explain: func(_ *Verifier, s *state) string { return fmt.Sprintf("alg is %q", linkspec.Clip(s.header.Alg)) },
	},
	{
		id: "A-AUTH-4", code: problem.CodeKeyIDMissing,
		text:    static("header kid is present"),
		check:   func(_ *Verifier, s *state) error { return checkKeyIDPresent(s.header.Kid) },
		explain: func(_ *Verifier, s *state) string { return fmt.Sprintf("kid is %q", linkspec.Clip(s.header.Kid)) },
	},
	{
		id: "A-AUTH-4", code: problem.CodeKeyUnknown,
		text:    static(fmt.Sprintf("header kid is at most %d bytes", MaxKeyIDLength)),
		check:   func(_ *Verifier, s *state) error { return checkKeyIDLength(s.header.Kid) },
		explain: func(_ *Verifier, s *state) string { return fmt.Sprintf("kid is %d bytes", len(s.header.Kid)) },
	},
	{
		code:    problem.CodeHeaderInvalid,
		text:    static("header has none of jku, jwk, x5u, crit, b64, cty, enc, zip"),
		check:   func(_ *Verifier, s *state) error { return checkNoForbiddenMembers(&s.header) },
		explain: explainForbidden,
	},
	{
		code:    problem.CodeHeaderInvalid,
		text:    static("certificate hints, where present, are well formed and only hints: x5t and x5t#S256 strings, x5c a non-empty array of strings; no key is taken from them"),
		check:   func(_ *Verifier, s *state) error { return checkKeyHints(&s.header) },
		explain: explainHints,
	},
	{
		id: "A-AUTH-4", code: problem.CodeKeyUnknown, fatal: true,
		text: static("the key set has a key with that kid"),
		check: func(_ *Verifier, s *state) (err error) {
			s.key, err = lookupKey(s.ctx, s.keys, s.header.Kid)
			return err
		},
		explain: explainKeyLookup,
	},
	ruleKeyAlgorithm: {
		code:    problem.CodeAlgorithmNotAllowed,
		text:    static("the key's type and alg member agree with the header alg"),
		check:   func(_ *Verifier, s *state) error { return checkKeyAlgorithm(s.key, s.header.Alg) },
		explain: explainKeyAlgorithm,
	},
	{
		id: "A-AUTH-1", code: problem.CodeSignatureInvalid, needs: 1<<ruleAlgorithm | 1<<ruleKeyAlgorithm,
		text: static("the signature verifies with that key"),
		check: func(v *Verifier, s *state) error {
			return v.checkSignature(s.alg, s.key, s.seg.signingInput, s.seg.signature)
		},
	},
	{
		code: problem.CodeClaimsInvalid, fatal: true,
		text: static("claims are a JSON object, at most 16 levels deep, without duplicate or near-duplicate member names; " +
			"iss a string, aud a string or array, nbf, exp and iat integers [claims_invalid]; nonce a string [nonce_invalid]; " +
			"payload fields strings, contact an object [payload_invalid]"),
		check: func(v *Verifier, s *state) error {
			// The clock is read here, after a key fetch that may have taken a while.
			s.now = v.now()
			s.claims.Audience.want = v.rules.Audience
			return decodeClaims(s.seg.payload, &s.claims)
		},
	},
	ruleSeconds: {
		id: "A-DEC-4", code: problem.CodeTimeInMilliseconds,
		text:    static("nbf, exp and iat are seconds, not milliseconds: at most 10^11"),
		check:   func(_ *Verifier, s *state) error { return checkSeconds(&s.claims) },
		explain: explainSeconds,
	},
	{
		id: "A-AUTH-9", code: problem.CodeIssuerInvalid,
		text:    func(r *Rules) string { return fmt.Sprintf("iss is %q", r.Issuer) },
		check:   func(v *Verifier, s *state) error { return v.checkIssuer(&s.claims) },
		explain: func(_ *Verifier, s *state) string { return fmt.Sprintf("iss is %q", linkspec.Clip(s.claims.Issuer)) },
	},
	{
		id: "A-AUTH-8", code: problem.CodeAudienceInvalid,
		text:    func(r *Rules) string { return fmt.Sprintf("aud is or contains %q", r.Audience) },
		check:   func(v *Verifier, s *state) error { return v.checkAudience(&s.claims) },
		explain: func(_ *Verifier, s *state) string { return fmt.Sprintf("aud is %q", s.claims.Audience.seen) },
	},
	{
		id: "A-AUTH-6, A-AUTH-7", code: problem.CodeClaimsInvalid, fatal: true,
		text:  static("nbf and exp are present"),
		check: func(_ *Verifier, s *state) error { return checkTimesPresent(&s.claims) },
	},
	{
		id: "A-AUTH-6", code: problem.CodeLifetimeTooLong, needs: 1 << ruleSeconds,
		text:    func(r *Rules) string { return fmt.Sprintf("exp is at most %v after nbf", r.MaxLifetime) },
		check:   func(v *Verifier, s *state) error { return v.checkLifetime(&s.claims) },
		explain: explainLifetime,
	},
	{
		code: problem.CodeClaimsInvalid, needs: 1 << ruleSeconds,
		text:    static("exp is after nbf"),
		check:   func(_ *Verifier, s *state) error { return checkTimesOrdered(&s.claims) },
		explain: explainLifetime,
	},
	{
		id: "A-AUTH-7", code: problem.CodeClaimsInvalid, needs: 1 << ruleSeconds,
		text:  static("iat, where present, equals nbf"),
		check: func(_ *Verifier, s *state) error { return checkIssuedAt(&s.claims) },
		explain: func(_ *Verifier, s *state) string {
			return fmt.Sprintf("iat - nbf = %ds", s.claims.IssuedAt.v-s.claims.NotBefore.v)
		},
	},
	{
		id: "A-AUTH-7", code: problem.CodeTokenNotYetValid, needs: 1 << ruleSeconds,
		text:    func(r *Rules) string { return fmt.Sprintf("now is not before nbf - %v leeway", r.Leeway) },
		check:   func(v *Verifier, s *state) error { return v.checkNotBefore(&s.claims, s.now) },
		explain: func(_ *Verifier, s *state) string { return explainTime("nbf", s.claims.NotBefore.v, s.now) },
	},
	{
		id: "A-AUTH-6", code: problem.CodeTokenExpired, needs: 1 << ruleSeconds,
		text:    func(r *Rules) string { return fmt.Sprintf("now is before exp + %v leeway", r.Leeway) },
		check:   func(v *Verifier, s *state) error { return v.checkExpiry(&s.claims, s.now) },
		explain: func(_ *Verifier, s *state) string { return explainTime("exp", s.claims.Expiry.v, s.now) },
	},
	ruleNoncePresent: {
		id: "A-AUTH-10", code: problem.CodeNonceMissing,
		text:  static("nonce is present"),
		check: func(_ *Verifier, s *state) error { return checkNoncePresent(s.claims.Nonce) },
	},
	{
		id: "A-AUTH-10", code: problem.CodeNonceInvalid, needs: 1 << ruleNoncePresent,
		text: func(r *Rules) string {
			return fmt.Sprintf("nonce is %d..%d bytes of visible ASCII", r.NonceMinLength, r.NonceMaxLength)
		},
		check:   func(v *Verifier, s *state) error { return v.checkNonceForm(s.claims.Nonce) },
		explain: func(_ *Verifier, s *state) string { return fmt.Sprintf("%d bytes", len(s.claims.Nonce)) },
	},
	{
		code: problem.CodeKindNotAllowed,
		text: func(r *Rules) string {
			kinds := "main, go"
			if len(r.Kinds) > 0 {
				kinds = fmt.Sprint(r.Kinds)
			}
			return "the link kind is one the partner may send (" + kinds + "); a link is main when it carries employeeId, employeeFirstname or employeeLastname, go otherwise"
		},
		check: func(v *Verifier, s *state) (err error) {
			s.kind, err = v.checkKind(&s.claims.Payload)
			return err
		},
		explain: func(_ *Verifier, s *state) string { return kindReason(&s.claims.Payload) },
	},
	ruleDropped: {
		id:   "A-DEC-3",
		text: static("optional fields whose values are malformed or blank are dropped (not forwarded, not stored), not refused"),
		check: func(_ *Verifier, s *state) error {
			s.dropped = s.claims.Payload.DropMalformed()
			return nil
		},
		explain: explainDropped,
	},
	{
		id: "A-PAY-MAIN, A-PAY-GO", code: problem.CodePayloadInvalid,
		text:  static("the payload matches its table in docs/interface.md"),
		check: func(v *Verifier, s *state) error { return v.checkPayload(&s.claims.Payload) },
	},
}

// The failed bits of state must hold every rule.
var _ [32 - len(rules)]struct{}

func static(text string) func(*Rules) string { return func(*Rules) string { return text } }

// run runs the rules on s. Without a trace it stops at the first failure and returns it;
// with one it records every rule's outcome and returns the first failure, the same error.
func (v *Verifier) run(s *state, t *Trace) error {
	var first error
	for i := range rules {
		r := &rules[i]
		if t != nil && (t.broken || s.failed&r.needs != 0) {
			t.Steps = append(t.Steps, Step{Rule: r.text(&v.rules), RuleID: r.id, Code: r.code, Outcome: NotReached})
			continue
		}
		err := r.check(v, s)
		if err == nil {
			if t != nil {
				st := Step{Rule: r.text(&v.rules), RuleID: r.id, Code: r.code, Outcome: Passed}
				if r.explain != nil {
					st.Detail = r.explain(v, s)
				}
				if i == ruleDropped {
					st.Fields = s.dropped
				}
				t.Steps = append(t.Steps, st)
			}
			continue
		}
		if t == nil {
			return err
		}
		if first == nil {
			first = err
		}
		s.failed |= 1 << i
		t.broken = t.broken || r.fatal
		t.Steps = append(t.Steps, failedStep(v, s, r, err))
	}
	return first
}

// failedStep records a failure: the code and detail are those of the rejection, and what
// the rule found follows in parentheses.
func failedStep(v *Verifier, s *state, r *rule, err error) Step {
	st := Step{Rule: r.text(&v.rules), RuleID: r.id, Code: r.code, Outcome: Failed, Detail: err.Error()}
	var e *Error
	if errors.As(err, &e) {
		st.Code, st.Detail, st.Fields = e.Code, e.Detail, e.Fields
	}
	if r.explain != nil {
		if found := r.explain(v, s); found != "" {
			st.Detail += " (" + found + ")"
		}
	}
	return st
}

// Outcome is what a rule made of a token in a Trace. The values are those of a report's
// JSON "result".
type Outcome string

const (
	Passed     Outcome = "passed"
	Failed     Outcome = "failed"      // the token breaks the rule
	NotReached Outcome = "not_reached" // an earlier failure left the rule nothing to read
	// Unchecked is the nonce rule's in a Report: it needs the gateway's nonce store, which
	// neither a trace nor the gateway's dry run reads.
	Unchecked Outcome = "not_checked"
)

// Step is one rule's outcome in a Trace. Its JSON is one element of a report's "rules".
type Step struct {
	RuleID  string  `json:"id"`   // the docs/interface.md rule it enforces, "" for the gateway's own
	Rule    string  `json:"text"` // what the gateway requires, in a sentence
	Outcome Outcome `json:"result"`
	// Code is the rejection code of the rule; a failure's is that of its *Error.
	Code   problem.Code          `json:"code"`
	Detail string                `json:"detail,omitempty"` // why it failed, or what was found; never a payload value
	Fields []linkspec.FieldError `json:"fields,omitempty"` // the failing payload fields, or the dropped ones
}

// Trace explains one verification rule by rule, for the partner kit's check command.
type Trace struct {
	Steps []Step
	// Token and Err are what Verify returns for the same token.
	Token *Token
	Err   error

	broken bool // a fatal rule failed
}

// Trace verifies token as Verify does and records every rule's outcome. Past a failure it
// goes on wherever the token still has something to read, so a partner learns of more than
// one mistake; it decodes the claims even when the signature fails, which Verify never
// does: a trace explains, it decides nothing beyond Verify's verdict in Token and Err.
func (v *Verifier) Trace(ctx context.Context, token []byte, keys KeySource) *Trace {
	t := &Trace{Steps: make([]Step, 0, len(rules))}
	s := &state{claims: claims{Audience: audience{record: true}}}
	t.Token, t.Err = v.verify(ctx, token, keys, s, t)
	return t
}

func explainForbidden(_ *Verifier, s *state) string {
	h := &s.header
	var present []string
	for _, m := range [...]struct {
		name string
		set  bool
	}{{"jku", h.Jku != nil}, {"jwk", h.Jwk != nil}, {"x5u", h.X5u != nil}, {"crit", h.Crit != nil},
		{"b64", h.B64 != nil}, {"cty", h.Cty != nil}, {"enc", h.Enc != nil}, {"zip", h.Zip != nil}} {
		if m.set {
			present = append(present, m.name)
		}
	}
	if len(present) == 0 {
		return "none present"
	}
	return "present: " + strings.Join(present, ", ")
}

func explainHints(_ *Verifier, s *state) string {
	h := &s.header
	var hints []string
	for _, m := range [...]struct {
		name string
		set  bool
	}{{"x5c", h.X5c != nil}, {"x5t", h.X5t != nil}, {"x5t#S256", h.X5tS256 != nil}} {
		if m.set {
			hints = append(hints, m.name)
		}
	}
	switch {
	case len(hints) == 0:
		return "none present"
	case checkKeyHints(h) != nil:
		return "present: " + strings.Join(hints, ", ")
	}
	return "present, ignored: " + strings.Join(hints, ", ") + " (the key is the key set's key of the kid, whatever they name)"
}

func explainKeyLookup(_ *Verifier, s *state) string {
	kid := linkspec.Clip(s.header.Kid)
	if s.key != nil {
		return fmt.Sprintf("kid %q found", kid)
	}
	if set, ok := s.keys.(*KeySet); ok && set != nil {
		return fmt.Sprintf("kid %q is not in the key set (it has %q)", kid, set.KeyIDs())
	}
	return ""
}

func explainKeyAlgorithm(_ *Verifier, s *state) string {
	k, alg := s.key, s.header.Alg
	switch {
	case k.alg != "" && k.alg != alg:
		return fmt.Sprintf("the key is published for %s, the header says %q", k.alg, linkspec.Clip(alg))
	case !k.allows(alg):
		return fmt.Sprintf("a %s key cannot verify %q", k.Type(), linkspec.Clip(alg))
	}
	return fmt.Sprintf("%s key for %s", k.Type(), alg)
}

func explainSeconds(_ *Verifier, s *state) string {
	var found []string
	for _, d := range [...]struct {
		name string
		d    numericDate
	}{{"nbf", s.claims.NotBefore}, {"exp", s.claims.Expiry}, {"iat", s.claims.IssuedAt}} {
		if d.d.set {
			found = append(found, fmt.Sprintf("%s %d", d.name, d.d.v))
		}
	}
	return strings.Join(found, ", ")
}

func explainLifetime(_ *Verifier, s *state) string {
	return fmt.Sprintf("exp - nbf = %ds", s.claims.Expiry.v-s.claims.NotBefore.v)
}

func explainTime(name string, t int64, now time.Time) string {
	return fmt.Sprintf("%s %s, now %s", name, time.Unix(t, 0).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
}

func explainDropped(_ *Verifier, s *state) string {
	if len(s.dropped) == 0 {
		return "none dropped"
	}
	names := make([]string, len(s.dropped))
	for i, f := range s.dropped {
		names[i] = f.Field
	}
	return "dropped, not forwarded: " + strings.Join(names, ", ")
}

// kindReason says why the payload is of its kind, naming the fields that decided it.
func kindReason(p *linkspec.Payload) string {
	if p.Kind() == linkspec.KindGo {
		extra := ""
		if p.EmployeeUsername != "" || p.EmployeeEmail != "" {
			extra = "; its employeeUsername or employeeEmail is extra user data"
		}
		return "a go link: no employeeId, employeeFirstname or employeeLastname" + extra
	}
	var has []string
	for _, f := range [...]struct{ name, v string }{{"employeeId", p.EmployeeID}, {"employeeFirstname", p.EmployeeFirstname}, {"employeeLastname", p.EmployeeLastname}} {
		if f.v != "" {
			has = append(has, f.name)
		}
	}
	return "a main link: it carries " + strings.Join(has, ", ")
}
