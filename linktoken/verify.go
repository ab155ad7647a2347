package linktoken

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

// MaxTokenLength bounds a token, in bytes, before any decoding: the gateway's default body
// limit. A main-client link with every field at its length bound and an 8192-bit RSA
// signature stays well below it.
const MaxTokenLength = 16 << 10

// Verifier checks tokens against one partner's Rules.
type Verifier struct {
	rules Rules
	now   func() time.Time
	// verifiers holds jwx's signature verifier of each allowed algorithm, nil for the
	// others: it is both the allowed set and the fast path, looked up once here rather
	// than in jwx's registry per token.
	verifiers [numAlgs]jws.Verifier
}

// The accepted algorithms, indexed for Verifier.verifiers.
const (
	algRS256 = iota
	algPS256
	algES256
	numAlgs
)

// jwaAlgs are jwx's names of algNames.
var jwaAlgs = [numAlgs]jwa.SignatureAlgorithm{jwa.RS256, jwa.PS256, jwa.ES256}

// Option configures a Verifier.
type Option func(*Verifier)

// WithClock makes the verifier read the time from now, for tests.
func WithClock(now func() time.Time) Option { return func(v *Verifier) { v.now = now } }

// NewVerifier checks the rules, fills in the defaults and returns a verifier. It refuses
// every algorithm but RS256, PS256 and ES256 (docs/interface.md A-AUTH-1 to A-AUTH-3), an
// empty issuer or audience (A-AUTH-8, A-AUTH-9), and bounds outside the interface's limits.
func NewVerifier(r Rules, opts ...Option) (*Verifier, error) {
	if r.Issuer == "" {
		return nil, errors.New("issuer is required")
	}
	if r.Audience == "" {
		return nil, errors.New("audience is required")
	}
	v := &Verifier{now: time.Now}
	if len(r.Algorithms) == 0 {
		r.Algorithms = Algorithms()
	}
	algs := make([]string, 0, len(r.Algorithms))
	for _, alg := range r.Algorithms {
		i := algIndex(alg)
		if i < 0 {
			return nil, fmt.Errorf("algorithm %q is not accepted: only %s are (symmetric algorithms and none never are)", linkspec.Clip(alg), AlgorithmList("and"))
		}
		if v.verifiers[i] != nil {
			continue
		}
		jv, err := jws.NewVerifier(jwaAlgs[i])
		if err != nil {
			return nil, fmt.Errorf("creating the %s verifier: %v", alg, err)
		}
		v.verifiers[i] = jv
		algs = append(algs, alg)
	}
	r.Algorithms = algs

	switch {
	case r.MaxLifetime == 0:
		r.MaxLifetime = DefaultMaxLifetime
	case r.MaxLifetime < time.Second:
		return nil, fmt.Errorf("max lifetime %v is under one second", r.MaxLifetime)
	case r.MaxLifetime > MaxLifetime:
		return nil, fmt.Errorf("max lifetime %v is over the interface's limit of %v", r.MaxLifetime, MaxLifetime)
	}
	switch {
	case r.Leeway == 0:
		r.Leeway = DefaultLeeway
	case r.Leeway < 0:
		// Zero asks for the default, so no leeway is asked for with a negative value, as
		// Caddy's durations say "off".
		r.Leeway = 0
	case r.Leeway > MaxLeeway:
		return nil, fmt.Errorf("leeway %v is over %v", r.Leeway, MaxLeeway)
	}
	if r.NonceMinLength == 0 {
		r.NonceMinLength = DefaultNonceMinLength
	}
	if r.NonceMaxLength == 0 {
		r.NonceMaxLength = DefaultNonceMaxLength
	}
	if r.NonceMinLength < 1 || r.NonceMaxLength < r.NonceMinLength || r.NonceMaxLength > maxNonceMaxLength {
		return nil, fmt.Errorf("nonce length bounds %d..%d are not 1 <= min <= max <= %d", r.NonceMinLength, r.NonceMaxLength, maxNonceMaxLength)
	}
	for _, k := range r.Kinds {
		if _, ok := linkspec.ParseKind(string(k)); !ok {
			return nil, fmt.Errorf("link kind %q is not main or go", linkspec.Clip(string(k)))
		}
	}
	r.Kinds = append(r.Kinds[:0:0], r.Kinds...)
	v.rules = r
	for _, opt := range opts {
		opt(v)
	}
	return v, nil
}

// Rules returns the verifier's rules with defaults filled in.
func (v *Verifier) Rules() Rules {
	r := v.rules
	r.Algorithms = append([]string(nil), r.Algorithms...)
	r.Kinds = append(r.Kinds[:0:0], r.Kinds...)
	return r
}

// Leeway is the clock skew the verifier allows around nbf and exp, default filled in: the
// nonce store needs it for every accepted token, without the copy Rules makes.
func (v *Verifier) Leeway() time.Duration { return v.rules.Leeway }

// Verify checks token (the compact serialization, surrounding white space already removed)
// against every rule of the list in rules.go, in the order of docs/architecture.md, cheap
// checks first, and returns the verified token or an *Error. It does not claim the nonce:
// the caller does that, last.
//
// Nothing of the token but its framing and header is read before the signature holds: the
// claims decoder only ever sees bytes the partner signed.
func (v *Verifier) Verify(ctx context.Context, token []byte, keys KeySource) (*Token, error) {
	s := statePool.Get().(*state)
	*s = state{buf: s.buf}
	defer statePool.Put(s)
	return v.verify(ctx, token, keys, s, nil)
}

var statePool = sync.Pool{New: func() any { return new(state) }}

// verify runs the rules on token (recording them in t unless it is nil) and builds the
// verified token.
func (v *Verifier) verify(ctx context.Context, token []byte, keys KeySource, s *state, t *Trace) (*Token, error) {
	s.ctx, s.token, s.keys = ctx, token, keys
	if err := v.run(s, t); err != nil {
		return nil, err
	}
	c := &s.claims
	claimsB64 := string(s.seg.payloadB64)
	if s.dropped != nil {
		// Not forwarded means not inside the claims either: the upstream reads the payload
		// from them. Rare (a partner's malformed optional value), so the cost of re-encoding
		// is paid only then.
		paths := make([]string, len(s.dropped))
		for i, f := range s.dropped {
			paths[i] = f.Field
		}
		stripped, err := linkspec.WithoutFields(s.seg.payload, paths)
		if err != nil {
			return nil, &Error{Code: problem.CodeClaimsInvalid, Detail: "the claims could not be re-encoded without the dropped fields", Err: err}
		}
		claimsB64 = base64.RawURLEncoding.EncodeToString(stripped)
	}
	return &Token{
		Alg:       algNames[s.alg],
		KeyID:     s.key.kid,
		Issuer:    c.Issuer,
		NotBefore: time.Unix(c.NotBefore.v, 0).UTC(),
		Expiry:    time.Unix(c.Expiry.v, 0).UTC(),
		Nonce:     c.Nonce,
		Kind:      s.kind,
		Payload:   c.Payload,
		Dropped:   s.dropped,
		Claims:    claimsB64,
	}, nil
}

func malformed(detail string) error { return &Error{Code: problem.CodeTokenMalformed, Detail: detail} }

// segments is a token split and decoded.
type segments struct {
	header       []byte
	payload      []byte
	payloadB64   []byte
	signature    []byte
	signingInput []byte // ASCII(BASE64URL(header) || '.' || BASE64URL(payload)), RFC 7515 §5.2 step 8
}

// b64 is the strict unpadded base64url of RFC 7515 §2: no padding, no white space, no
// line breaks, and no non-zero trailing bits (a second spelling of the same bytes).
var b64 = base64.RawURLEncoding.Strict()

// splitCompact enforces the JWS Compact Serialization (RFC 7515 §7.1; RFC 8725 §3.1 on
// accepting one serialization only): exactly three non-empty segments of strict base64url.
// A JSON serialization (§7.2), a JWE (five segments, RFC 7516 §7.1), padding, white space
// and any other character are token_malformed.
func splitCompact(token []byte, buf *[]byte) (segments, error) {
	var s segments
	if len(token) == 0 {
		return s, malformed("the token is empty")
	}
	if len(token) > MaxTokenLength {
		return s, malformed("the token is longer than the limit")
	}
	if token[0] == '{' {
		return s, malformed(jsonTokenDetail(token))
	}
	// Three IndexByte scans (vectorized) find the dots; the strict decoder below refuses
	// every byte outside the base64url alphabet except CR and LF, which Go's decoder skips,
	// so those are refused here.
	d0 := bytes.IndexByte(token, '.')
	d1 := -1
	if d0 >= 0 {
		if i := bytes.IndexByte(token[d0+1:], '.'); i >= 0 {
			d1 = d0 + 1 + i
		}
	}
	if d1 < 0 || bytes.IndexByte(token[d1+1:], '.') >= 0 {
		return s, malformed("the token does not have three parts separated by dots: " + compactForm)
	}
	if bytes.IndexByte(token, '\n') >= 0 || bytes.IndexByte(token, '\r') >= 0 {
		return s, malformed("the token contains a character outside base64url")
	}
	dots := [2]int{d0, d1}
	h, p, sig := token[:dots[0]], token[dots[0]+1:dots[1]], token[dots[1]+1:]
	if len(h) == 0 || len(p) == 0 || len(sig) == 0 {
		return s, malformed("a segment of the token is empty")
	}
	// One buffer for the three decoded segments, reused across tokens.
	hn, pn, sn := b64.DecodedLen(len(h)), b64.DecodedLen(len(p)), b64.DecodedLen(len(sig))
	if cap(*buf) < hn+pn+sn {
		*buf = make([]byte, hn+pn+sn)
	}
	b := (*buf)[:hn+pn+sn]
	var err error
	if s.header, err = decodeSegment(b[:hn:hn], h); err != nil {
		return s, err
	}
	if s.payload, err = decodeSegment(b[hn:hn+pn:hn+pn], p); err != nil {
		return s, err
	}
	if s.signature, err = decodeSegment(b[hn+pn:], sig); err != nil {
		return s, err
	}
	s.payloadB64 = p
	s.signingInput = token[:dots[1]]
	return s, nil
}

// compactForm is what a token must be, in the words of the answers that say so.
const compactForm = "a token is the compact JWS that a JWT library's sign function returns, " +
	"three base64url parts separated by dots (header.payload.signature)"

// jsonTokenDetail says what a token that is JSON was meant to be, from its top-level member
// names (never their values): a JWS in its JSON serialization (RFC 7515 §7.2), a body that
// wraps the token in a JSON object, as a form's payload field would in another encoding,
// or a claim set that was never signed.
func jsonTokenDetail(token []byte) string {
	var members map[string]jsontext.Value
	if json.Unmarshal(token, &members) != nil {
		return "the token starts with { as JSON does: " + compactForm
	}
	_, sig := members["signature"]
	_, sigs := members["signatures"]
	_, payload := members["payload"]
	_, tok := members["token"]
	switch {
	case sig || sigs:
		return "the token is a JWS in its JSON serialization: only the compact serialization is accepted; " + compactForm
	case payload || tok:
		return "the token is a JSON object that wraps a token: send the compact token itself, " +
			"three base64url parts separated by dots, as the body of /url with Content-Type text/plain, " +
			"or as the form field payload of /payload with Content-Type application/x-www-form-urlencoded"
	}
	return "the token is a JSON object, not a signed token (claims must be signed, not sent as JSON): " + compactForm
}

func decodeSegment(dst, src []byte) ([]byte, error) {
	n, err := b64.Decode(dst, src)
	if err != nil {
		return nil, malformed("a segment of the token is not canonical base64url (RFC 7515 §2: no padding, no white space, base64url characters only)")
	}
	return dst[:n], nil
}

// header is the JOSE header. The members the gateway refuses are kept raw, only to see
// whether they are present: their values are never read, let alone fetched. The
// certificate hints (x5c, x5t, x5t#S256) are kept raw too, only to check their JSON types:
// a certificate is never decoded, and no key is ever taken from one.
type header struct {
	Typ string `json:"typ"`
	Alg string `json:"alg"`
	Kid string `json:"kid"`

	Jku     jsontext.Value `json:"jku"`
	Jwk     jsontext.Value `json:"jwk"`
	X5u     jsontext.Value `json:"x5u"`
	X5c     jsontext.Value `json:"x5c"`
	X5t     jsontext.Value `json:"x5t"`
	X5tS256 jsontext.Value `json:"x5t#S256"`
	Crit    jsontext.Value `json:"crit"`
	B64     jsontext.Value `json:"b64"`
	Cty     jsontext.Value `json:"cty"`
	Enc     jsontext.Value `json:"enc"`
	Zip     jsontext.Value `json:"zip"`
}

// decodeHeader decodes the JOSE header strictly (RFC 7515 §4, RFC 8725 §3.1 on ambiguity;
// RFC 7159 §4 and RFC 8259 §8.1): a header that is not a JSON object of valid UTF-8 is
// token_malformed; a duplicate member name (RFC 7515 §5.2 step 4: "MUST reject") or a member
// of the wrong JSON type is header_invalid.
func decodeHeader(data []byte, h *header) error {
	if !isJSONObject(data) {
		return malformed("the header is not a JSON object")
	}
	err := json.Unmarshal(data, h)
	if err == nil {
		return nil
	}
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return &Error{Code: problem.CodeHeaderInvalid, Detail: "the header has a duplicate member"}
	}
	var serr *json.SemanticError
	if errors.As(err, &serr) && len(serr.JSONPointer) > 0 {
		return &Error{Code: problem.CodeHeaderInvalid, Detail: "a header member has the wrong JSON type"}
	}
	return malformed("the header is not a JSON object")
}

// isJSONObject reports whether data starts, after JSON white space, with an object: the
// decoder would take null for an empty object (RFC 7515 §4 and RFC 7519 §7.2 step 10 want
// an object).
func isJSONObject(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// checkType enforces docs/interface.md A-AUTH-5 and RFC 8725 §3.11 (explicit typing). typ
// is a media type, compared case-insensitively, and "JWT" stands for "application/jwt"
// (RFC 7515 §4.1.9, RFC 7519 §5.1): "JWT", "jwt" and "application/JWT" are all accepted.
func checkType(typ string) error {
	if typ == "JWT" || strings.EqualFold(typ, "JWT") || strings.EqualFold(typ, "application/jwt") {
		return nil
	}
	if typ == "" {
		return &Error{Code: problem.CodeHeaderInvalid, Detail: "the header has no typ: it must be JWT"}
	}
	return &Error{Code: problem.CodeHeaderInvalid, Detail: "the header typ is not JWT"}
}

// checkAlgorithm enforces docs/interface.md A-AUTH-1 to A-AUTH-3 and RFC 8725 §3.1: alg must
// be one the partner is configured for, compared exactly ("none", "None", "HS256" and "rs256"
// are all refused).
func (v *Verifier) checkAlgorithm(alg string) (int, error) {
	i := algIndex(alg)
	if i < 0 || v.verifiers[i] == nil {
		return -1, &Error{Code: problem.CodeAlgorithmNotAllowed, Detail: "the header alg is not one the partner may use"}
	}
	return i, nil
}

// checkKeyIDPresent enforces docs/interface.md A-AUTH-4: the header names its key by kid.
func checkKeyIDPresent(kid string) error {
	if kid == "" {
		return &Error{Code: problem.CodeKeyIDMissing, Detail: "the header has no kid"}
	}
	return nil
}

// checkKeyIDLength refuses a kid no key set can hold before it reaches the key source.
func checkKeyIDLength(kid string) error {
	if len(kid) > MaxKeyIDLength {
		return &Error{Code: problem.CodeKeyUnknown, Detail: "the header kid is longer than any accepted kid"}
	}
	return nil
}

// checkNoForbiddenMembers refuses headers that bring their own key location or key (jku,
// x5u, jwk: RFC 8725 §3.10, the key comes from the partner's set only), that extend the
// rules (crit, RFC 7515 §4.1.11; b64, RFC 7797), that nest a token or declare other content
// (cty, RFC 7519 §5.2; RFC 8725 §2.8) or that belong to a JWE (enc, zip).
func checkNoForbiddenMembers(h *header) error {
	for _, m := range [...]jsontext.Value{h.Jku, h.Jwk, h.X5u, h.Crit, h.B64, h.Cty, h.Enc, h.Zip} {
		if m != nil {
			return &Error{Code: problem.CodeHeaderInvalid, Detail: "the header has a member that is not accepted (jku, jwk, x5u, crit, b64, cty, enc or zip)"}
		}
	}
	return nil
}

// checkKeyHints accepts the certificate hints that established JWT libraries put beside kid
// (Microsoft's .NET libraries x5t, and x5c with some credentials; nimbus-jose-jwt
// x5t#S256) and ignores them: the key is still looked up by kid in the partner's set only
// (RFC 8725 §3.10), so a hint naming another key or carrying another key's certificate
// changes nothing, and a token signed by that other key fails its signature. Only their
// JSON types are checked, as RFC 7515 §4.1.6 to §4.1.8 define them (x5t and x5t#S256
// strings, x5c a non-empty array of strings): a malformed hint is a broken header, and a
// library that writes one will write other things wrongly.
func checkKeyHints(h *header) error {
	for _, m := range [...]jsontext.Value{h.X5t, h.X5tS256} {
		if m != nil && m.Kind() != '"' {
			return &Error{Code: problem.CodeHeaderInvalid, Detail: "the header member x5t or x5t#S256 is not a string"}
		}
	}
	if h.X5c != nil && !isStringArray(h.X5c) {
		return &Error{Code: problem.CodeHeaderInvalid, Detail: "the header member x5c is not a non-empty array of strings"}
	}
	return nil
}

// isStringArray reports whether v (valid JSON, from the decoder) is a non-empty array of
// strings.
func isStringArray(v jsontext.Value) bool {
	if v.Kind() != '[' {
		return false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	n := 0
	for dec.PeekKind() == '"' {
		if _, err := dec.ReadToken(); err != nil {
			return false
		}
		n++
	}
	return n > 0 && dec.PeekKind() == ']'
}

// lookupKey takes the key by kid from the partner's key source only (docs/interface.md
// A-AUTH-4). A source that fails without a code fails closed as keys_unavailable.
func lookupKey(ctx context.Context, keys KeySource, kid string) (*Key, error) {
	if keys == nil {
		return nil, errKeysUnavailable(nil)
	}
	key, err := keys.Key(ctx, kid)
	if err != nil {
		if CodeOf(err) != "" {
			return nil, err
		}
		return nil, errKeysUnavailable(err)
	}
	if key == nil {
		return nil, errKeysUnavailable(nil)
	}
	return key, nil
}

// checkKeyAlgorithm makes the key agree with the header (RFC 8725 §3.1, RFC 7517 §4.4):
// RS256 and PS256 need an RSA key, ES256 an EC P-256 key, and a key with its own alg
// member verifies that algorithm only. A disagreement is algorithm_not_allowed: the kid
// exists, but the algorithm is not one this key may be used with.
func checkKeyAlgorithm(key *Key, alg string) error {
	if !key.allows(alg) {
		return &Error{Code: problem.CodeAlgorithmNotAllowed, Detail: "the header alg does not match the key's type or alg"}
	}
	return nil
}

// checkSignature verifies the signature with jwx (RFC 7515 §5.2 step 8; RFC 7518 §3.3,
// §3.4, §3.5). The length checks come first and are exact: an RSA signature has the
// modulus's length (RFC 8017 §8.2.2 step 1), leading zeros neither stripped nor added; an
// ES256 signature is R || S of 32 bytes each (RFC 7518 §3.4), never DER. jwx and
// crypto/ecdsa then refuse r or s outside [1, n-1] (the CVE-2022-21449 class). A high-S
// signature is valid ECDSA: replay protection rests on the nonce, not the signature bytes.
func (v *Verifier) checkSignature(alg int, key *Key, signingInput, sig []byte) error {
	var pub any
	if alg == algES256 {
		if len(sig) != 64 {
			return errSignatureInvalid(nil)
		}
		pub = key.ec
	} else {
		if len(sig) != key.rsa.Size() {
			return errSignatureInvalid(nil)
		}
		pub = key.rsa
	}
	if err := v.verifiers[alg].Verify(signingInput, sig, pub); err != nil {
		return errSignatureInvalid(err)
	}
	return nil
}

func errSignatureInvalid(cause error) error {
	return &Error{Code: problem.CodeSignatureInvalid, Detail: "the signature does not verify with the partner's key", Err: cause}
}
