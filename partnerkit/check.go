package partnerkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
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
func Check(ctx context.Context, token string, jwks []byte, rules linktoken.Rules, now time.Time) *Report {
	token = strings.TrimSpace(token)
	r := &Report{}
	v, err := linktoken.NewVerifier(rules, linktoken.WithClock(func() time.Time { return now }))
	if err != nil {
		r.Detail = "the rules are not valid: " + err.Error()
		return r
	}
	rules = v.Rules()
	ex := explainer{rules: rules, now: now, report: r}
	ex.run(token, jwks)

	set, err := linktoken.ParseKeySet(jwks)
	if err != nil {
		r.KeySetError = err.Error()
		r.Code = CodeKeySetRefused
		r.Detail = "the gateway refuses this key set: " + err.Error()
		return r
	}
	tok, err := v.Verify(ctx, []byte(token), set)
	if err != nil {
		var le *linktoken.Error
		if errors.As(err, &le) {
			r.Code, r.Detail, r.Fields = le.Code, le.Detail, le.Fields
		} else {
			r.Detail = err.Error()
		}
		return r
	}
	r.Accepted = true
	r.Kind = tok.Kind
	return r
}

type explainer struct {
	rules  linktoken.Rules
	now    time.Time
	report *Report
	broken bool // a framing failure: later steps have nothing to read
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

func (e *explainer) skip(rule string, code linktoken.Code) {
	e.report.Steps = append(e.report.Steps, Step{Rule: rule, Code: code, Outcome: NotChecked})
}

// run walks the rules of DESIGN.md ("One request through the gateway", step 2 and 3) in
// order. It reads the token with jwx; it never decides the verdict.
func (e *explainer) run(token string, jwks []byte) {
	msg, err := jws.Parse([]byte(token), jws.WithCompact())
	framed := err == nil && strings.Count(token, ".") == 2 && len(msg.Signatures()) == 1
	detail := ""
	if !framed {
		detail = "not three base64url segments of a compact JWS"
		if err != nil {
			detail += ": " + err.Error()
		}
	}
	e.step("the token is a compact JWS (header.payload.signature)", linktoken.CodeTokenMalformed, framed, detail)
	if !framed {
		e.broken = true
	}
	var h jws.Headers
	if framed {
		h = msg.Signatures()[0].ProtectedHeaders()
	} else {
		h = jws.NewHeaders()
	}
	typ := h.Type()
	e.step(`header typ is "JWT" (any case, or application/jwt)`, linktoken.CodeHeaderInvalid,
		strings.EqualFold(typ, "JWT") || strings.EqualFold(typ, "application/jwt"), fmt.Sprintf("typ is %q", typ))

	alg := string(h.Algorithm())
	allowed := e.rules.Algorithms
	if len(allowed) == 0 {
		allowed = Algorithms
	}
	e.step("header alg is one of "+strings.Join(allowed, ", "), linktoken.CodeAlgorithmNotAllowed, slices.Contains(allowed, alg), fmt.Sprintf("alg is %q", alg))
	kid := h.KeyID()
	e.step("header kid is present", linktoken.CodeKeyIDMissing, kid != "", fmt.Sprintf("kid is %q", kid))

	var forbidden []string
	for _, name := range []string{"jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256", "crit", "b64", "cty", "enc", "zip"} {
		if _, ok := h.Get(name); ok {
			forbidden = append(forbidden, name)
		}
	}
	d := "none present"
	if len(forbidden) > 0 {
		d = "present: " + strings.Join(forbidden, ", ")
	}
	e.step("header has none of jku, jwk, x5u, x5c, x5t, crit, b64, cty, enc, zip", linktoken.CodeHeaderInvalid, len(forbidden) == 0, d)

	set, setErr := jwk.Parse(jwks)
	var key jwk.Key
	found := false
	if setErr == nil && kid != "" {
		key, found = set.LookupKeyID(kid)
	}
	d = fmt.Sprintf("kid %q found", kid)
	if setErr != nil {
		d = "the key set cannot be read: " + setErr.Error()
	} else if !found {
		d = fmt.Sprintf("kid %q is not in the key set (it has %v)", kid, kids(set))
	}
	e.step("the key set has a key with that kid", linktoken.CodeKeyUnknown, found, d)
	if !found {
		e.skip("the key's type and alg member agree with the header alg", linktoken.CodeAlgorithmNotAllowed)
		e.skip("the signature verifies with that key", linktoken.CodeSignatureInvalid)
	} else {
		agree, d := keyAgrees(key, alg)
		e.step("the key's type and alg member agree with the header alg", linktoken.CodeAlgorithmNotAllowed, agree, d)
		sigOK := false
		d = "signature does not verify"
		if agree {
			_, err := jws.Verify([]byte(token), jws.WithKey(jwa.SignatureAlgorithm(alg), key))
			sigOK = err == nil
		} else {
			d = "not verified: the key does not fit the algorithm"
		}
		if sigOK {
			d = ""
		}
		e.step("the signature verifies with that key", linktoken.CodeSignatureInvalid, sigOK, d)
	}

	var payload []byte
	if framed {
		payload = msg.Payload()
	}
	e.claims(payload)
}

// keyAgrees applies the gateway's key rule: the key's type fits alg, and the key's own alg
// member, where set, equals it (the algorithm is never taken from the header alone).
func keyAgrees(key jwk.Key, alg string) (bool, string) {
	kty := key.KeyType()
	switch {
	case kty == jwa.RSA && (alg == "RS256" || alg == "PS256"), kty == jwa.EC && alg == "ES256":
	default:
		return false, fmt.Sprintf("a %s key cannot verify %s", kty, alg)
	}
	if key.Algorithm() != nil && key.Algorithm().String() != "" && key.Algorithm().String() != alg {
		return false, fmt.Sprintf("the key is published for %s, the header says %s", key.Algorithm(), alg)
	}
	return true, fmt.Sprintf("%s key for %s", kty, alg)
}

func (e *explainer) claims(payload []byte) {
	var claims map[string]json.RawMessage
	readable := !e.broken && json.Unmarshal(payload, &claims) == nil && claims != nil
	d := "the payload segment is not a JSON object"
	if readable && jsonv2.Unmarshal(payload, new(map[string]jsontext.Value)) != nil {
		// json v2, as linktoken, refuses duplicate member names; encoding/json keeps the last.
		readable, d = false, "the claims have a duplicate member"
	}
	if readable {
		for _, name := range []string{"nbf", "exp", "iat"} {
			if raw, ok := claims[name]; ok {
				if _, isInt := integer(raw); !isInt {
					readable, d = false, name+" is not a whole number of seconds"
				}
			}
		}
		if raw, ok := claims["iss"]; ok && readable && !isString(raw) {
			readable, d = false, "iss is not a string"
		}
		if raw, ok := claims["aud"]; ok && readable && audiences(raw) == nil {
			readable, d = false, "aud is not a string or an array of strings"
		}
		if readable {
			d = ""
		}
	}
	e.step("claims are a JSON object without duplicate members; iss a string, aud a string or array, nbf, exp and iat integers", linktoken.CodeClaimsInvalid, readable, d)
	if !readable {
		e.broken = true
	}

	// linktoken reads the nonce and the payload fields with the claims, so their JSON types
	// are checked here, before the values.
	raw, has := claims["nonce"]
	var nonce string
	strOK := has && json.Unmarshal(raw, &nonce) == nil && isString(raw)
	e.step("nonce, where present, is a string", linktoken.CodeNonceInvalid, !has || strOK, "nonce is not a string")
	// Payload names match exactly, as in linktoken (json v2), not case-insensitively.
	var p linkspec.Payload
	perr := jsonv2.Unmarshal(payload, &p)
	d = ""
	if perr != nil {
		d = "a payload field has the wrong JSON type (every field is a string, contact an object)"
	}
	e.step("the payload fields have their JSON types", linktoken.CodePayloadInvalid, perr == nil, d)

	var iss string
	_ = json.Unmarshal(claims["iss"], &iss)
	e.step(fmt.Sprintf("iss is %q", e.rules.Issuer), linktoken.CodeIssuerInvalid, iss == e.rules.Issuer, fmt.Sprintf("iss is %q", iss))

	auds := audiences(claims["aud"])
	e.step(fmt.Sprintf("aud is or contains %q", e.rules.Audience), linktoken.CodeAudienceInvalid, slices.Contains(auds, e.rules.Audience), fmt.Sprintf("aud is %q", auds))

	nbf, nbfOK := integer(claims["nbf"])
	exp, expOK := integer(claims["exp"])
	e.step("nbf and exp are present", linktoken.CodeClaimsInvalid, nbfOK && expOK, "")
	if !nbfOK || !expOK {
		e.broken = true
	}
	life := time.Duration(exp-nbf) * time.Second
	e.step(fmt.Sprintf("exp is at most %v after nbf (spec: Authentication, rule 6)", e.rules.MaxLifetime), linktoken.CodeLifetimeTooLong, life <= e.rules.MaxLifetime, fmt.Sprintf("exp - nbf = %v", life))
	e.step("exp is after nbf", linktoken.CodeClaimsInvalid, exp > nbf, fmt.Sprintf("exp - nbf = %v", life))
	iat, hasIat := integer(claims["iat"])
	e.step("iat, where present, equals nbf (spec: Authentication, rule 7)", linktoken.CodeClaimsInvalid, !hasIat || iat == nbf, fmt.Sprintf("iat - nbf = %ds", iat-nbf))

	nbfT, expT := time.Unix(nbf, 0), time.Unix(exp, 0)
	e.step(fmt.Sprintf("now is not before nbf - %v leeway", e.rules.Leeway), linktoken.CodeTokenNotYetValid,
		!e.now.Before(nbfT.Add(-e.rules.Leeway)), fmt.Sprintf("nbf %s, now %s", nbfT.UTC().Format(time.RFC3339), e.now.UTC().Format(time.RFC3339)))
	e.step(fmt.Sprintf("now is before exp + %v leeway", e.rules.Leeway), linktoken.CodeTokenExpired,
		e.now.Before(expT.Add(e.rules.Leeway)), fmt.Sprintf("exp %s, now %s", expT.UTC().Format(time.RFC3339), e.now.UTC().Format(time.RFC3339)))

	e.step("nonce is present (spec: Authentication, rule 10)", linktoken.CodeNonceMissing, has && (!strOK || nonce != ""), "")
	visible := true
	for i := 0; i < len(nonce); i++ {
		if nonce[i] < 0x21 || nonce[i] > 0x7e {
			visible = false
		}
	}
	e.step(fmt.Sprintf("nonce is %d..%d bytes of visible ASCII", e.rules.NonceMinLength, e.rules.NonceMaxLength), linktoken.CodeNonceInvalid,
		visible && len(nonce) >= e.rules.NonceMinLength && len(nonce) <= e.rules.NonceMaxLength, fmt.Sprintf("%d bytes", len(nonce)))

	kind := p.Kind()
	kinds := "main, go"
	if len(e.rules.Kinds) > 0 {
		kinds = fmt.Sprint(e.rules.Kinds)
	}
	e.step("the link kind is one the partner may send ("+kinds+")", linktoken.CodeKindNotAllowed,
		len(e.rules.Kinds) == 0 || slices.Contains(e.rules.Kinds, kind), "a "+string(kind)+" link")
	var fields []linkspec.FieldError
	ok := perr == nil
	d = ""
	if perr != nil {
		d = "not checked: a payload field has the wrong JSON type"
	} else if _, err := p.Validate(e.rules.Kinds...); err != nil {
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

// integer reads a NumericDate as linktoken does: a non-negative JSON integer.
func integer(raw json.RawMessage) (int64, bool) {
	var n int64
	if len(raw) == 0 || bytes.ContainsAny(raw, ".eE") || json.Unmarshal(raw, &n) != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func isString(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`))
}

func audiences(raw json.RawMessage) []string {
	var one string
	if isString(raw) && json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		return nil
	}
	return many
}
