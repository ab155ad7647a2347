package partnerkit

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
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
	Rule    string         // what the gateway requires, in a sentence
	Code    linktoken.Code // the code the gateway answers when this rule fails
	Outcome Outcome
	Detail  string                // why it failed, or what was found
	Fields  []linkspec.FieldError // the failing payload fields
}

// Report explains a token rule by rule. The verdict (Accepted, Code, Detail) is
// linktoken's, the gateway's own verification: the steps are an explanation and never
// decide.
type Report struct {
	Steps    []Step
	Accepted bool
	Code     linktoken.Code
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
const CodeKeySetRefused = linktoken.CodeKeysUnavailable

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
	ex := explainer{rules: v.Rules(), now: now, report: r, set: set}
	ex.run(token)

	tok, err := v.Verify(ctx, []byte(token), set)
	if err != nil {
		var le *linktoken.Error
		if errors.As(err, &le) {
			r.Code, r.Detail, r.Fields = le.Code, le.Detail, le.Fields
		} else {
			r.Detail = err.Error()
		}
		if r.Code == CodeKeySetRefused && r.KeySetError != "" {
			r.Detail = "the gateway refuses this key set: " + r.KeySetError
		}
		return r
	}
	r.Accepted = true
	r.Kind = tok.Kind
	r.Dropped = tok.Dropped
	return r
}

// explainer walks the rules in the gateway's order. It mirrors linktoken's rules, decoding
// the token the same way (strict base64url, go-json-experiment with duplicate names and
// invalid UTF-8 refused, the claim rules of linkspec), so that its first failing step is the
// rule the verifier stopped at; the table shared with linktoken's tests holds it to that.
type explainer struct {
	rules  linktoken.Rules
	now    time.Time
	set    *linktoken.KeySet // nil when the gateway refuses the key set
	report *Report
	broken bool // an earlier failure left the later steps nothing to read
}

func (e *explainer) step(rule string, code linktoken.Code, ok bool, detail string) bool {
	s := Step{Rule: rule, Code: code, Outcome: Passed, Detail: detail}
	if e.broken {
		s.Outcome, s.Detail = NotChecked, ""
	} else if !ok {
		s.Outcome = Failed
	}
	e.report.Steps = append(e.report.Steps, s)
	return ok && !e.broken
}

// must is step for a rule whose failure leaves the later steps nothing to read.
func (e *explainer) must(rule string, code linktoken.Code, ok bool, detail string) {
	if !e.step(rule, code, ok, detail) {
		e.broken = true
	}
}

// b64 is linktoken's strict unpadded base64url (RFC 7515 §2).
var b64 = base64.RawURLEncoding.Strict()

// header is the JOSE header as linktoken decodes it; Other keeps every other member raw,
// only to see which are present.
type header struct {
	Typ   string                    `json:"typ"`
	Alg   string                    `json:"alg"`
	Kid   string                    `json:"kid"`
	Other map[string]jsontext.Value `json:",unknown"`
}

// forbiddenMembers are the header members the gateway refuses (RFC 8725 §3.10, RFC 7515
// §4.1.11, RFC 7797, RFC 7519 §5.2, and the JWE members).
var forbiddenMembers = []string{"jku", "jwk", "x5u", "crit", "b64", "cty", "enc", "zip"}

// keyHints are the certificate hints the gateway accepts and ignores, with the JSON kind
// each must have (RFC 7515 §4.1.6 to §4.1.8): x5c an array (of strings, at least one).
var keyHints = []struct {
	name string
	kind jsontext.Kind
}{{"x5c", '['}, {"x5t", '"'}, {"x5t#S256", '"'}}

// hintWellFormed applies linktoken's type rule to a hint's raw value.
func hintWellFormed(v jsontext.Value, kind jsontext.Kind) bool {
	if v.Kind() != kind {
		return false
	}
	if kind != '[' {
		return true
	}
	var list []jsontext.Value
	if jsonv2.Unmarshal(v, &list) != nil || len(list) == 0 {
		return false
	}
	for _, m := range list {
		if m.Kind() != '"' {
			return false
		}
	}
	return true
}

func (e *explainer) run(token string) {
	segs, framing := split(token)
	var h header
	headerCode, headerDetail := linktoken.Code(""), ""
	if framing == "" {
		headerCode, headerDetail = decodeHeader(segs.header, &h)
		if headerCode == linktoken.CodeTokenMalformed {
			framing, headerCode = headerDetail, ""
		}
	}
	e.must("the token is a compact JWS: three non-empty segments of canonical base64url (no padding, no white space), at most 16 KiB, the header a JSON object",
		linktoken.CodeTokenMalformed, framing == "", framing)
	e.must("the header has no duplicate member, and typ, alg and kid, where present, are strings (RFC 7515 §5.2)",
		linktoken.CodeHeaderInvalid, headerCode == "", headerDetail)

	typ := h.Typ
	e.step(`header typ is "JWT" (any case, or application/jwt)`, linktoken.CodeHeaderInvalid,
		strings.EqualFold(typ, "JWT") || strings.EqualFold(typ, "application/jwt"), fmt.Sprintf("typ is %q", clip(typ)))
	alg := h.Alg
	e.step("header alg is one of "+strings.Join(e.rules.Algorithms, ", "), linktoken.CodeAlgorithmNotAllowed,
		slices.Contains(e.rules.Algorithms, alg), fmt.Sprintf("alg is %q", clip(alg)))
	kid := h.Kid
	e.step("header kid is present", linktoken.CodeKeyIDMissing, kid != "", fmt.Sprintf("kid is %q", clip(kid)))
	e.step(fmt.Sprintf("header kid is at most %d bytes", linktoken.MaxKeyIDLength), linktoken.CodeKeyUnknown,
		len(kid) <= linktoken.MaxKeyIDLength, fmt.Sprintf("kid is %d bytes", len(kid)))

	var present []string
	for _, name := range forbiddenMembers {
		if _, ok := h.Other[name]; ok {
			present = append(present, name)
		}
	}
	d := "none present"
	if len(present) > 0 {
		d = "present: " + strings.Join(present, ", ")
	}
	e.step("header has none of jku, jwk, x5u, crit, b64, cty, enc, zip", linktoken.CodeHeaderInvalid, len(present) == 0, d)

	var hints, bad []string
	for _, hint := range keyHints {
		v, ok := h.Other[hint.name]
		if !ok {
			continue
		}
		hints = append(hints, hint.name)
		if !hintWellFormed(v, hint.kind) {
			bad = append(bad, hint.name)
		}
	}
	d = "none present"
	switch {
	case len(bad) > 0:
		d = "malformed: " + strings.Join(bad, ", ")
	case len(hints) > 0:
		d = "present, ignored: " + strings.Join(hints, ", ") + " (the key is the key set's key of the kid, whatever they name)"
	}
	e.step("certificate hints, where present, are well formed and only hints: x5t and x5t#S256 strings, x5c a non-empty array of strings; no key is taken from them",
		linktoken.CodeHeaderInvalid, len(bad) == 0, d)

	e.key(alg, kid, segs)

	e.claims(segs.payload)
}

// segments is a token split and decoded.
type segments struct {
	header, payload, signature []byte
	signingInput               []byte // BASE64URL(header) || '.' || BASE64URL(payload)
}

// split applies linktoken's framing rules (RFC 7515 §7.1; RFC 8725 §3.1) and returns the
// decoded segments, or why the token is malformed.
func split(token string) (segments, string) {
	var s segments
	switch {
	case token == "":
		return s, "the token is empty"
	case len(token) > linktoken.MaxTokenLength:
		return s, fmt.Sprintf("the token is %d bytes, over the limit of %d", len(token), linktoken.MaxTokenLength)
	case token[0] == '{':
		return s, "the token is a JSON serialization: only the compact serialization is accepted"
	case strings.Count(token, ".") != 2:
		return s, fmt.Sprintf("the token has %d segments, not 3", strings.Count(token, ".")+1)
	case strings.ContainsAny(token, "\r\n"):
		return s, "the token contains a line break"
	}
	parts := strings.Split(token, ".")
	for i, seg := range []struct {
		name string
		dst  *[]byte
	}{{"header", &s.header}, {"payload", &s.payload}, {"signature", &s.signature}} {
		if parts[i] == "" {
			return segments{}, "the " + seg.name + " segment is empty"
		}
		b, err := b64.DecodeString(parts[i])
		if err != nil {
			return segments{}, "the " + seg.name + " segment is not canonical base64url"
		}
		*seg.dst = b
	}
	s.signingInput = []byte(parts[0] + "." + parts[1])
	return s, ""
}

// decodeHeader decodes the header as linktoken does: not a JSON object of valid UTF-8 is
// token_malformed; a duplicate member or a member of the wrong JSON type header_invalid.
func decodeHeader(data []byte, h *header) (linktoken.Code, string) {
	if !isJSONObject(data) {
		return linktoken.CodeTokenMalformed, "the header is not a JSON object"
	}
	err := jsonv2.Unmarshal(data, h)
	if err == nil {
		return "", ""
	}
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return linktoken.CodeHeaderInvalid, "the header has a duplicate member"
	}
	var serr *jsonv2.SemanticError
	if errors.As(err, &serr) && len(serr.JSONPointer) > 0 {
		return linktoken.CodeHeaderInvalid, "header member " + clip(string(serr.JSONPointer)) + " is not a string"
	}
	return linktoken.CodeTokenMalformed, "the header is not a JSON object of valid UTF-8"
}

// isJSONObject reports whether data starts, after JSON white space, with an object.
func isJSONObject(data []byte) bool {
	trimmed := bytes.TrimLeft(data, " \t\n\r")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// key explains the key lookup, the key's agreement with alg and the signature.
func (e *explainer) key(alg, kid string, segs segments) {
	var key *linktoken.Key
	var lookupErr error
	if e.set == nil {
		lookupErr = &linktoken.Error{Code: linktoken.CodeKeysUnavailable}
	} else {
		key, lookupErr = e.set.Key(context.Background(), kid)
	}
	code, d := linktoken.CodeKeyUnknown, fmt.Sprintf("kid %q found", clip(kid))
	switch {
	case e.set == nil:
		code, d = linktoken.CodeKeysUnavailable, "the gateway refuses the key set: "+e.report.KeySetError
	case lookupErr != nil:
		d = fmt.Sprintf("kid %q is not in the key set (it has %q)", clip(kid), e.set.KeyIDs())
	}
	e.step("the key set has a key with that kid", code, lookupErr == nil, d)
	if lookupErr != nil {
		e.broken = true
	}
	agree, d := keyAgrees(key, alg)
	e.step("the key's type and alg member agree with the header alg", linktoken.CodeAlgorithmNotAllowed, agree, d)
	sigOK, d := false, "not verified: the key does not fit the algorithm"
	if agree && !e.broken {
		sigOK, d = verifySignature(key, alg, segs.signingInput, segs.signature), ""
		if !sigOK {
			d = "the signature does not verify with that key"
		}
	}
	e.step("the signature verifies with that key", linktoken.CodeSignatureInvalid, sigOK, d)
}

// keyAgrees applies the gateway's key rule: the key's type fits alg, and the key's own alg
// member, where set, equals it (the algorithm is never taken from the header alone).
func keyAgrees(key *linktoken.Key, alg string) (bool, string) {
	if key == nil {
		return false, ""
	}
	if key.Algorithm() != "" && key.Algorithm() != alg {
		return false, fmt.Sprintf("the key is published for %s, the header says %q", key.Algorithm(), clip(alg))
	}
	kty := key.Type()
	switch {
	case kty == "RSA" && (alg == linktoken.RS256 || alg == linktoken.PS256), kty == "EC" && alg == linktoken.ES256:
		return true, fmt.Sprintf("%s key for %s", kty, alg)
	}
	return false, fmt.Sprintf("a %s key cannot verify %q", kty, clip(alg))
}

// verifySignature checks the signature as the gateway does: its exact length first (an
// RSA signature has the modulus's length, an ES256 one is R || S of 64 bytes), then jwx's
// verifier.
func verifySignature(key *linktoken.Key, alg string, signingInput, sig []byte) bool {
	switch pub := key.Public().(type) {
	case *rsa.PublicKey:
		if len(sig) != pub.Size() {
			return false
		}
	case *ecdsa.PublicKey:
		if len(sig) != 64 {
			return false
		}
	}
	v, err := jws.NewVerifier(jwa.SignatureAlgorithm(alg))
	return err == nil && v.Verify(signingInput, sig, key.Public()) == nil
}

// numericDate reads a NumericDate as linktoken does (linktoken.ParseNumericDate).
type numericDate struct {
	v   int64
	set bool
}

func (d *numericDate) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	n, err := linktoken.ParseNumericDate(val)
	if err != nil {
		return err
	}
	d.v, d.set = n, true
	return nil
}

// audience reads aud: one string or an array of strings (RFC 7519 §4.1.3).
type audience []string

var errNotAudience = errors.New("not a string or an array of strings")

func (a *audience) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	// Kinds are checked first: null would decode to an empty string or array.
	switch val.Kind() {
	case '"':
		var one string
		if jsonv2.Unmarshal(val, &one) == nil {
			*a = audience{one}
			return nil
		}
	case '[':
		var many []jsontext.Value
		if jsonv2.Unmarshal(val, &many) != nil {
			break
		}
		out := make(audience, 0, len(many))
		for _, m := range many {
			var one string
			if m.Kind() != '"' || jsonv2.Unmarshal(m, &one) != nil {
				return errNotAudience
			}
			out = append(out, one)
		}
		*a = out
		return nil
	}
	return errNotAudience
}

// claimSet is the claims set as linktoken decodes it.
type claimSet struct {
	Issuer    string      `json:"iss"`
	Audience  audience    `json:"aud"`
	NotBefore numericDate `json:"nbf"`
	Expiry    numericDate `json:"exp"`
	IssuedAt  numericDate `json:"iat"`
	Nonce     string      `json:"nonce"`

	linkspec.Claims `json:",inline"`
}

// typedClaims are the registered claims whose wrong JSON type is claims_invalid.
var typedClaims = []string{"iss", "aud", "nbf", "exp", "iat"}

// decodeClaims decodes the claims as linktoken does, in one pass, and returns the code of
// the first problem: claims_invalid (not an object, too deep, a duplicate or near-duplicate
// name, a registered claim of the wrong type), nonce_invalid (nonce not a string) or
// payload_invalid (a payload field of the wrong type).
func decodeClaims(data []byte, c *claimSet) (linktoken.Code, string, []linkspec.FieldError) {
	if !isJSONObject(data) {
		return linktoken.CodeClaimsInvalid, "the claims are not a JSON object", nil
	}
	if linkspec.CheckClaimsDepth(data) != nil {
		return linktoken.CodeClaimsInvalid, fmt.Sprintf("the claims are nested deeper than %d levels", linkspec.MaxClaimsDepth), nil
	}
	err := jsonv2.Unmarshal(data, c, linkspec.StrictClaims())
	if err == nil {
		if err := c.Check(linkspec.ReservedClaims...); err != nil {
			var ne *linkspec.NameError
			if errors.As(err, &ne) {
				return linktoken.CodeClaimsInvalid, "a claim is named like " + ne.Field + " but for case or punctuation: use the exact name", nil
			}
			return linktoken.CodeClaimsInvalid, "a claim is named like a defined claim but for case or punctuation", nil
		}
		c.Decoded()
		return "", "", nil
	}
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return linktoken.CodeClaimsInvalid, "the claims have a duplicate member", nil
	}
	var serr *jsonv2.SemanticError
	if !errors.As(err, &serr) || len(serr.JSONPointer) == 0 {
		return linktoken.CodeClaimsInvalid, "the claims are not a JSON object of valid UTF-8", nil
	}
	var path []string
	for tok := range serr.JSONPointer.Tokens() {
		path = append(path, clip(tok))
	}
	switch {
	case path[0] == "nonce":
		return linktoken.CodeNonceInvalid, "nonce is not a string", nil
	case slices.Contains(typedClaims, path[0]):
		return linktoken.CodeClaimsInvalid, path[0] + " has the wrong JSON type: iss a string, aud a string or an array of strings, nbf, exp and iat integers", nil
	}
	field := strings.Join(path, ".")
	return linktoken.CodePayloadInvalid, "payload field " + field + " has the wrong JSON type (every field is a string, contact an object)",
		[]linkspec.FieldError{{Field: field, Reason: "wrong JSON type"}}
}

func (e *explainer) claims(payload []byte) {
	var c claimSet
	code, d, fields := linktoken.Code(""), "", []linkspec.FieldError(nil)
	if !e.broken {
		code, d, fields = decodeClaims(payload, &c)
	}
	// One decoding pass stops at the first problem: the step carries that problem's code.
	stepCode := code
	if stepCode == "" {
		stepCode = linktoken.CodeClaimsInvalid
	}
	e.must("claims are a JSON object, at most 16 levels deep, without duplicate or near-duplicate member names; "+
		"iss a string, aud a string or array, nbf, exp and iat integers [claims_invalid]; nonce a string [nonce_invalid]; "+
		"payload fields strings, contact an object [payload_invalid]", stepCode, code == "", d)
	if code != "" && !e.broken {
		e.report.Steps[len(e.report.Steps)-1].Fields = fields
	}

	e.step(fmt.Sprintf("iss is %q", e.rules.Issuer), linktoken.CodeIssuerInvalid, c.Issuer == e.rules.Issuer, fmt.Sprintf("iss is %q", clip(c.Issuer)))
	e.step(fmt.Sprintf("aud is or contains %q", e.rules.Audience), linktoken.CodeAudienceInvalid,
		slices.Contains(c.Audience, e.rules.Audience), fmt.Sprintf("aud is %q", clipAll(c.Audience)))

	nbf, exp := c.NotBefore.v, c.Expiry.v
	e.must("nbf and exp are present", linktoken.CodeClaimsInvalid, c.NotBefore.set && c.Expiry.set, "")
	// In whole seconds, as the gateway compares: a difference of two NumericDates would
	// wrap around as a time.Duration.
	maxLife := int64(e.rules.MaxLifetime / time.Second)
	e.step(fmt.Sprintf("exp is at most %v after nbf (spec: Authentication, rule 6)", e.rules.MaxLifetime), linktoken.CodeLifetimeTooLong,
		exp-nbf <= maxLife, fmt.Sprintf("exp - nbf = %ds", exp-nbf))
	e.step("exp is after nbf", linktoken.CodeClaimsInvalid, exp > nbf, fmt.Sprintf("exp - nbf = %ds", exp-nbf))
	iat := c.IssuedAt.v
	e.step("iat, where present, equals nbf (spec: Authentication, rule 7)", linktoken.CodeClaimsInvalid,
		!c.IssuedAt.set || iat == nbf, fmt.Sprintf("iat - nbf = %ds", iat-nbf))

	nbfT, expT := time.Unix(nbf, 0), time.Unix(exp, 0)
	e.step(fmt.Sprintf("now is not before nbf - %v leeway", e.rules.Leeway), linktoken.CodeTokenNotYetValid,
		!e.now.Before(nbfT.Add(-e.rules.Leeway)), fmt.Sprintf("nbf %s, now %s", nbfT.UTC().Format(time.RFC3339), e.now.UTC().Format(time.RFC3339)))
	e.step(fmt.Sprintf("now is before exp + %v leeway", e.rules.Leeway), linktoken.CodeTokenExpired,
		e.now.Before(expT.Add(e.rules.Leeway)), fmt.Sprintf("exp %s, now %s", expT.UTC().Format(time.RFC3339), e.now.UTC().Format(time.RFC3339)))

	nonce := c.Nonce
	e.step("nonce is present (spec: Authentication, rule 10)", linktoken.CodeNonceMissing, nonce != "", "")
	visible := true
	for i := 0; i < len(nonce); i++ {
		if nonce[i] < 0x21 || nonce[i] > 0x7e {
			visible = false
		}
	}
	e.step(fmt.Sprintf("nonce is %d..%d bytes of visible ASCII", e.rules.NonceMinLength, e.rules.NonceMaxLength), linktoken.CodeNonceInvalid,
		visible && len(nonce) >= e.rules.NonceMinLength && len(nonce) <= e.rules.NonceMaxLength, fmt.Sprintf("%d bytes", len(nonce)))

	p := c.Decoded()
	kind := p.Kind()
	kinds := "main, go"
	if len(e.rules.Kinds) > 0 {
		kinds = fmt.Sprint(e.rules.Kinds)
	}
	e.step("the link kind is one the partner may send ("+kinds+"); a link is main when it carries employeeId, employeeFirstname or employeeLastname, go otherwise",
		linktoken.CodeKindNotAllowed, len(e.rules.Kinds) == 0 || slices.Contains(e.rules.Kinds, kind), kindReason(p, kind))
	dropped := p.DropMalformed()
	d = "none dropped"
	if len(dropped) > 0 {
		names := make([]string, len(dropped))
		for i, f := range dropped {
			names[i] = f.Field
		}
		d = "dropped, not forwarded: " + strings.Join(names, ", ")
	}
	e.step("optional fields whose values are malformed or blank are dropped (not forwarded, not stored), not refused", "", true, d)
	if len(dropped) > 0 && !e.broken {
		e.report.Steps[len(e.report.Steps)-1].Fields = dropped
	}
	ok := true
	d, fields = "", nil
	if _, err := p.Validate(e.rules.Kinds...); err != nil {
		ok = false
		var le *linkspec.Error
		if errors.As(err, &le) {
			fields = le.Fields
		}
		d = err.Error()
	}
	e.step("the payload matches its table in the spec", linktoken.CodePayloadInvalid, ok, d)
	if len(fields) > 0 && !e.broken {
		e.report.Steps[len(e.report.Steps)-1].Fields = fields
	}
	e.report.Steps = append(e.report.Steps, Step{
		Rule:    "the nonce has not been used before",
		Code:    "token_replayed",
		Outcome: Offline,
		Detail:  "only the gateway's nonce store knows: each token is accepted once",
	})
}

// kindReason says why the payload is of its kind, naming the fields that decided it.
func kindReason(p *linkspec.Payload, kind linkspec.Kind) string {
	if kind == linkspec.KindGo {
		extra := ""
		if p.EmployeeUsername != "" || p.EmployeeEmail != "" {
			extra = "; its employeeUsername or employeeEmail is extra user data"
		}
		return "a go link: no employeeId, employeeFirstname or employeeLastname" + extra
	}
	var has []string
	for _, f := range []struct{ name, v string }{{"employeeId", p.EmployeeID}, {"employeeFirstname", p.EmployeeFirstname}, {"employeeLastname", p.EmployeeLastname}} {
		if f.v != "" {
			has = append(has, f.name)
		}
	}
	return "a main link: it carries " + strings.Join(has, ", ")
}

// clip bounds token text shown in a detail: a partner debugging its signer sees what it
// sent, without a kilobyte of it.
func clip(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	for i := limit; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return "…"
}

func clipAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = clip(s)
	}
	return out
}
