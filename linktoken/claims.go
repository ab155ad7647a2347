package linktoken

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

// claims is the JWT claims set, decoded in one pass: the registered claims the rules read
// and the link payload beside them (linkspec.Claims: its fields are top-level claims).
// Claims named nowhere here are allowed (kept in Extra only for the near-name rule); the
// upstream gets them all in Token.Claims.
type claims struct {
	Issuer    string      `json:"iss"`
	Audience  audience    `json:"aud"`
	NotBefore numericDate `json:"nbf"`
	Expiry    numericDate `json:"exp"`
	IssuedAt  numericDate `json:"iat"`
	Nonce     string      `json:"nonce"`

	linkspec.Claims `json:",inline"`
}

// registeredClaims are the claims whose wrong JSON type is claims_invalid; nonce has its
// own code, and every other typed member is a payload field (payload_invalid).
var registeredClaims = map[string]bool{"iss": true, "aud": true, "nbf": true, "exp": true, "iat": true}

// MaxSecondsDate is the largest NumericDate read as seconds, 10^11 (the year 5138): a
// larger nbf, exp or iat is a time in milliseconds (JavaScript's Date.now()) or finer,
// refused with time_in_milliseconds (docs/interface.md A-DEC-4). Every real time in
// milliseconds since 1973 is above it, and no real token's time in seconds comes near it.
// The bound also keeps every sum and difference of two dates, in seconds, far from int64
// overflow (not in nanoseconds: compare them as seconds, never as a time.Duration).
const MaxSecondsDate = 100_000_000_000

// maxNumericDateDigits bounds the digits of a NumericDate the decoder reads: 18 keep any
// value below 10^18, inside int64. Milliseconds have 13 digits, microseconds 16.
const maxNumericDateDigits = 18

// numericDate is a NumericDate (RFC 7519 §2) written as a non-negative JSON integer.
// Fractional seconds, exponents and negative values are refused (claims_invalid): RFC 7519
// allows fractions, but no mainstream JWT library writes them, and the interface's
// whole-second rules (nbf equal to the issued time, the five-minute lifetime) are exact on
// integers only. null is not a number either. A value above MaxSecondsDate is read, for the
// time_in_milliseconds rule to name it.
type numericDate struct {
	v   int64
	set bool
}

var errNotNumericDate = errors.New("not an integer NumericDate")

func (d *numericDate) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	n, err := parseNumericDate(val)
	if err != nil {
		return err
	}
	d.v, d.set = n, true
	return nil
}

// parseNumericDate reads a NumericDate claim's JSON value by the gateway's rule: a
// non-negative JSON integer of at most 18 digits without a leading zero.
func parseNumericDate(val []byte) (int64, error) {
	if len(val) == 0 || len(val) > maxNumericDateDigits || val[0] == '0' && len(val) > 1 {
		return 0, errNotNumericDate
	}
	var n int64
	for _, c := range val {
		if c < '0' || c > '9' {
			return 0, errNotNumericDate
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// audience reads aud, one string or an array of strings (RFC 7519 §4.1.3), and records
// only whether it contains want: the rule needs nothing else, and keeping no copy of the
// values keeps the hot path free of allocations for them. Only a trace keeps them.
type audience struct {
	want  string
	found bool
	// record keeps the values, clipped, in seen: a trace shows them.
	record bool
	seen   []string
}

var errNotAudience = errors.New("not a string or an array of strings")

func (a *audience) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		a.found = equalJSONString(val, a.want)
		a.keep(val)
		return nil
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		for dec.PeekKind() != ']' {
			if dec.PeekKind() != '"' {
				return errNotAudience
			}
			val, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if equalJSONString(val, a.want) {
				a.found = true
			}
			a.keep(val)
		}
		_, err := dec.ReadToken()
		return err
	}
	return errNotAudience
}

func (a *audience) keep(val jsontext.Value) {
	if a.record {
		unq, _ := jsontext.AppendUnquote(nil, val)
		a.seen = append(a.seen, linkspec.Clip(string(unq)))
	}
}

// equalJSONString reports whether the JSON string val (quoted, already validated by the
// decoder) denotes s. Escapes are rare in an audience; only then is it unquoted.
func equalJSONString(val jsontext.Value, s string) bool {
	raw := val[1 : len(val)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == s
	}
	unq, err := jsontext.AppendUnquote(nil, val)
	return err == nil && string(unq) == s
}

// decodeClaims decodes the claims set strictly (RFC 7519 §7.2 step 10; RFC 8725 §3.1 on
// parser disagreement): a duplicate member name anywhere, invalid UTF-8, or anything but a
// JSON object is claims_invalid; a registered claim of the wrong JSON type is
// claims_invalid, a nonce that is not a string nonce_invalid, and a payload field of the
// wrong JSON type payload_invalid naming the field.
func decodeClaims(data []byte, c *claims) error {
	if !isJSONObject(data) {
		return &Error{Code: problem.CodeClaimsInvalid, Detail: "the claims are not a JSON object"}
	}
	// The claims are forwarded whole to the upstream, whose parser may stop at a depth of
	// a few hundred levels; the payload needs two.
	if err := linkspec.CheckClaimsDepth(data); err != nil {
		return &Error{Code: problem.CodeClaimsInvalid, Detail: "the claims are nested too deeply", Err: err}
	}
	// The rules of linkspec, shared with the app service: exact names, and no extra member
	// named like a defined one but for case or punctuation, since parsers disagree on
	// which one is meant.
	err := json.Unmarshal(data, c, linkspec.StrictClaims())
	if err == nil {
		if err := c.Check(linkspec.ReservedClaims...); err != nil {
			return &Error{Code: problem.CodeClaimsInvalid, Detail: "a claim is named like a defined claim but for case or punctuation", Err: err}
		}
		c.Decoded()
		return nil
	}
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return &Error{Code: problem.CodeClaimsInvalid, Detail: "the claims have a duplicate member"}
	}
	var serr *json.SemanticError
	if !errors.As(err, &serr) || len(serr.JSONPointer) == 0 {
		return &Error{Code: problem.CodeClaimsInvalid, Detail: "the claims are not a JSON object"}
	}
	var top string
	for tok := range serr.JSONPointer.Tokens() {
		top = tok
		break
	}
	switch {
	case top == "nonce":
		return &Error{Code: problem.CodeNonceInvalid, Detail: "the nonce is not a string"}
	case registeredClaims[top]:
		return &Error{Code: problem.CodeClaimsInvalid, Detail: registeredTypeDetail(top)}
	}
	field := linkspec.FieldPath(serr.JSONPointer)
	kind, from := kindOfClaims(data)
	return &Error{
		Code:   problem.CodePayloadInvalid,
		Detail: "a payload field has the wrong JSON type" + kindSentence(kind, from),
		Fields: []linkspec.FieldError{{Field: field, Reason: "wrong JSON type"}},
		Hints:  problem.Hints{Kind: string(kind), KindFrom: from},
	}
}

// registeredTypeDetail names the registered claim of the wrong JSON type and its type.
func registeredTypeDetail(name string) string {
	switch name {
	case "iss":
		return "the iss claim has the wrong JSON type: it is a string"
	case "aud":
		return "the aud claim has the wrong JSON type: it is a string or an array of strings"
	}
	return "the " + name + " claim is not a NumericDate: a JSON integer, whole seconds since 1970 (no fraction, no exponent, not a string, at most 18 digits); " +
		"in JavaScript Math.floor(Date.now() / 1000)"
}

// kindOfClaims reads the kind from a claim set the decoder refused for a payload field's
// JSON type, by linkspec's rule (linkspec.KindOf): a field of the rule counts when it is
// there and not "" (a value of another type counts: the partner meant to send it).
func kindOfClaims(data []byte) (linkspec.Kind, []string) {
	var top map[string]jsontext.Value
	if json.Unmarshal(data, &top) != nil {
		return "", nil
	}
	return linkspec.KindOf(func(name string) bool {
		v, ok := top[name]
		return ok && string(v) != `""` && string(v) != "null"
	})
}

// kindSentence says, for a payload error's detail, which kind the link was read as and why
// (docs/partners.md, Which kind a link is).
func kindSentence(kind linkspec.Kind, from []string) string {
	switch {
	case kind == linkspec.KindMain:
		return "; read as a main link, because it carries " + strings.Join(from, ", ")
	case kind == linkspec.KindGo:
		f := linkspec.KindFields()
		return "; read as a Go link, because it carries none of " + strings.Join(f[:len(f)-1], ", ") + " and " + f[len(f)-1]
	}
	return ""
}

// checkIssuer enforces docs/interface.md A-AUTH-9 and RFC 7519 §4.1.1: iss equals the
// agreed issuer, compared exactly. The agreed issuer, like the audience and the lifetime
// limit below, is in the answer: only a token the partner's key signed gets this far, and
// the value is the partner's own agreement, not a secret to it.
func (v *Verifier) checkIssuer(c *claims) error {
	if c.Issuer != v.rules.Issuer {
		return &Error{
			Code:   problem.CodeIssuerInvalid,
			Detail: fmt.Sprintf("the iss claim is not the issuer agreed for this partner: it must be exactly %q", v.rules.Issuer),
			Hints:  problem.Hints{Expected: v.rules.Issuer},
		}
	}
	return nil
}

// checkAudience enforces docs/interface.md A-AUTH-8 and RFC 7519 §4.1.3: aud, a string or
// an array, contains the agreed audience exactly.
func (v *Verifier) checkAudience(c *claims) error {
	if c.Audience.found {
		return nil
	}
	return &Error{
		Code:   problem.CodeAudienceInvalid,
		Detail: fmt.Sprintf("the aud claim does not contain the audience agreed for this partner: it must be %q, or an array that contains it", v.rules.Audience),
		Hints:  problem.Hints{Expected: v.rules.Audience},
	}
}

// checkTimesPresent enforces docs/interface.md A-AUTH-6 and A-AUTH-7: nbf and exp are required
// (RFC 7519 makes them optional; the interface does not).
func checkTimesPresent(c *claims) error {
	if !c.NotBefore.set || !c.Expiry.set {
		return &Error{Code: problem.CodeClaimsInvalid, Detail: "the nbf and exp claims are required"}
	}
	return nil
}

// checkLifetime enforces docs/interface.md A-AUTH-6 and LIM-1: exp at most max_lifetime
// after nbf. The leeway never widens it: it is a bound on what the partner signed, not on
// the clocks.
func (v *Verifier) checkLifetime(c *claims) error {
	// In whole seconds: the difference of two NumericDates fits an int64, but in
	// nanoseconds (time.Duration) it can wrap around to a negative value and pass.
	limit := int64(v.rules.MaxLifetime / time.Second)
	if c.Expiry.v-c.NotBefore.v > limit {
		return &Error{
			Code:   problem.CodeLifetimeTooLong,
			Detail: fmt.Sprintf("exp is more than %d seconds after nbf: the partner's tokens live at most %d seconds (exp - nbf <= %d)", limit, limit, limit),
			Hints:  problem.Hints{MaxLifetime: limit},
		}
	}
	return nil
}

// checkSeconds enforces docs/interface.md A-DEC-4: nbf, exp and iat are seconds. A value
// above MaxSecondsDate is a time in milliseconds, the commonest JWT mistake in JavaScript
// (Date.now()); the answer names the claims and the fix instead of a type error.
func checkSeconds(c *claims) error {
	var names []string
	for _, d := range [...]struct {
		name string
		d    numericDate
	}{{"nbf", c.NotBefore}, {"exp", c.Expiry}, {"iat", c.IssuedAt}} {
		if d.d.set && d.d.v > MaxSecondsDate {
			names = append(names, d.name)
		}
	}
	if names == nil {
		return nil
	}
	claim := "the " + names[0] + " claim is"
	if n := len(names); n > 1 {
		claim = "the " + strings.Join(names[:n-1], ", ") + " and " + names[n-1] + " claims are"
	}
	return &Error{Code: problem.CodeTimeInMilliseconds, Detail: claim + " far in the future (above 10^11, after the year 5000): " +
		"a time in milliseconds since 1970, not seconds; NumericDate is whole seconds since 1970, in JavaScript Math.floor(Date.now() / 1000)"}
}

// checkTimesOrdered requires exp after nbf: a token valid for no time at all is a
// partner's bug, not a short token.
func checkTimesOrdered(c *claims) error {
	if c.Expiry.v <= c.NotBefore.v {
		return &Error{Code: problem.CodeClaimsInvalid, Detail: "exp is not after nbf"}
	}
	return nil
}

// checkIssuedAt enforces docs/interface.md A-AUTH-7 (nbf is the issued time): iat, where
// present, equals nbf.
func checkIssuedAt(c *claims) error {
	if c.IssuedAt.set && c.IssuedAt.v != c.NotBefore.v {
		return &Error{Code: problem.CodeClaimsInvalid, Detail: "iat is present and not equal to nbf"}
	}
	return nil
}

// checkNotBefore enforces RFC 7519 §4.1.5 with the partner's leeway for clock skew: the
// token is valid from nbf - leeway, inclusive.
func (v *Verifier) checkNotBefore(c *claims, now time.Time) error {
	if now.Before(time.Unix(c.NotBefore.v, 0).Add(-v.rules.Leeway)) {
		return &Error{Code: problem.CodeTokenNotYetValid, Detail: "the token is not valid yet (nbf is in the future)"}
	}
	return nil
}

// checkExpiry enforces RFC 7519 §4.1.4 with the partner's leeway for clock skew: the token
// is valid until exp + leeway, exclusive.
func (v *Verifier) checkExpiry(c *claims, now time.Time) error {
	if !now.Before(time.Unix(c.Expiry.v, 0).Add(v.rules.Leeway)) {
		return &Error{Code: problem.CodeTokenExpired, Detail: "the token has expired"}
	}
	return nil
}

// checkNoncePresent enforces docs/interface.md A-AUTH-10: the nonce is required.
func checkNoncePresent(nonce string) error {
	if nonce == "" {
		return &Error{Code: problem.CodeNonceMissing, Detail: "the nonce claim is required"}
	}
	return nil
}

// checkNonceForm enforces docs/interface.md A-AUTH-10 and LIM-2: a nonce string within the
// partner's length bounds, in bytes. A CSPRNG nonce in any usual encoding (base64url, hex,
// UUID) is visible ASCII, so nothing else is accepted: no white space, no control
// characters, no lookalike Unicode that would make two nonces differ only in normalization.
func (v *Verifier) checkNonceForm(nonce string) error {
	if len(nonce) < v.rules.NonceMinLength || len(nonce) > v.rules.NonceMaxLength {
		return &Error{Code: problem.CodeNonceInvalid, Detail: "the nonce is shorter or longer than the partner's bounds"}
	}
	for i := 0; i < len(nonce); i++ {
		if nonce[i] < 0x21 || nonce[i] > 0x7e {
			return &Error{Code: problem.CodeNonceInvalid, Detail: "the nonce has a character that is not visible ASCII"}
		}
	}
	return nil
}

// checkKind checks the link kind against the partner's kinds.
func (v *Verifier) checkKind(p *linkspec.Payload) (linkspec.Kind, error) {
	kind := p.Kind()
	if len(v.rules.Kinds) > 0 && !containsKind(v.rules.Kinds, kind) {
		_, from := p.KindFrom()
		allowed := "main links"
		if kind == linkspec.KindMain {
			allowed = "Go links"
		}
		return "", &Error{
			Code:   problem.CodeKindNotAllowed,
			Detail: "this partner may send " + allowed + " only" + kindSentence(kind, from),
			Hints:  problem.Hints{Kind: string(kind), KindFrom: from},
		}
	}
	return kind, nil
}

// checkPayload checks the payload, its malformed optional fields already dropped
// (linkspec.Payload.DropMalformed), against its table in docs/interface.md (A-PAY-MAIN,
// A-PAY-GO): payload_invalid with the fields.
func (v *Verifier) checkPayload(p *linkspec.Payload) error {
	if _, err := p.Validate(v.rules.Kinds...); err != nil {
		kind, from := p.KindFrom()
		e := &Error{Code: problem.CodePayloadInvalid, Detail: "the payload does not meet the interface" + kindSentence(kind, from), Err: err, Hints: problem.Hints{Kind: string(kind), KindFrom: from}}
		var perr *linkspec.Error
		if errors.As(err, &perr) {
			e.Fields = perr.Fields
		}
		return e
	}
	return nil
}

func containsKind(kinds []linkspec.Kind, k linkspec.Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}
