package linktoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"sort"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

// Bounds of a key set (docs/architecture.md, Keys). A modulus under 2048 bits is breakable or
// soon will be (NIST SP 800-131A); one over 8192 bits makes every verification cost tens of
// times more, which lets a key set be used as a denial of service on the gateway.
const (
	MinRSABits = 2048
	MaxRSABits = 8192

	// MaxKeySetSize bounds a jwks.json document, read from a file or a URL. A set of a
	// few 8192-bit keys is under 10 KiB.
	MaxKeySetSize = 256 << 10
	// MaxKeys bounds the number of keys in a set.
	MaxKeys = 64
	// MaxKeyIDLength bounds a kid, in bytes.
	MaxKeyIDLength = 256
)

// The public exponent must be odd and within [65537, 2^31): NIST SP 800-56B §6.2.1 requires
// e > 2^16; tiny exponents invite lax-padding forgeries, and huge ones make every
// verification slow.
const (
	minRSAExponent = 65537
	maxRSAExponent = 1<<31 - 1
)

// privateMembers are the JWK members of private keys (RFC 7518 §6.2.2, §6.3.2) and the
// symmetric key value (§6.4.1). A set that carries any of them was published by mistake:
// refuse it whole, so that the partner notices and rotates the exposed key.
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// Key is one verification key of a partner's set: the public key, its kid and the
// algorithm it may be used with. It wraps jwx's key without exporting it.
type Key struct {
	kid string
	alg string // the key's own alg member, "" when the set did not say
	// Exactly one of rsa and ec is set: the raw public key, handed to jwx's verifier on
	// the hot path without a conversion per token.
	rsa *rsa.PublicKey
	ec  *ecdsa.PublicKey
	jwk jwk.Key
}

// KeyID returns the key's kid.
func (k *Key) KeyID() string { return k.kid }

// Type returns the key type: "RSA" or "EC".
func (k *Key) Type() string {
	if k.rsa != nil {
		return "RSA"
	}
	return "EC"
}

// Public returns the raw public key (*rsa.PublicKey or *ecdsa.PublicKey).
func (k *Key) Public() any {
	if k.rsa != nil {
		return k.rsa
	}
	return k.ec
}

// allows reports whether the key may verify a signature of alg: its type matches the
// algorithm's family, and its own alg member, where set, names alg (RFC 7517 §4.4; RFC 8725
// §3.1: the key, not the token, decides the algorithm).
func (k *Key) allows(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch alg {
	case RS256, PS256:
		return k.rsa != nil
	case ES256:
		return k.ec != nil
	}
	return false
}

// KeySet is a checked JSON Web Key Set: every key public, RSA 2048..8192 bits or EC P-256,
// use absent or "sig", a unique kid each.
type KeySet struct {
	keys map[string]*Key
	ids  []string
}

// KeySetError is a key set that ParseKeySet refuses: which key and why, and how to fix it
// where the reason does not say so already. Its text names a key by its index and kid and
// a member by its name, never key material, so that it can go into an answer to the
// partner: a partner's key set is public, and the partner is the one who can fix it.
type KeySetError struct {
	// Key is the index of the refused key in "keys", or -1 when the set as a whole is.
	Key int
	// KeyID is the refused key's kid, clipped; "" when it has none or the set is refused.
	KeyID string
	// Err is the reason.
	Err error
}

func (e *KeySetError) Error() string {
	if e.Key < 0 {
		return e.Err.Error()
	}
	if e.KeyID == "" {
		return fmt.Sprintf("key %d: %v", e.Key, e.Err)
	}
	return fmt.Sprintf("key %d (kid %q): %v", e.Key, e.KeyID, e.Err)
}

func (e *KeySetError) Unwrap() error { return e.Err }

// refuseSet and refuseKey make the *KeySetError of the whole set and of key i.
func refuseSet(err error) *KeySetError { return &KeySetError{Key: -1, Err: err} }

func refuseKey(i int, raw jsontext.Value, err error) *KeySetError {
	return &KeySetError{Key: i, KeyID: keyIDOf(raw), Err: err}
}

// ParseKeySet parses and checks a jwks.json document. A set with private key material, a
// key of another type or size, or a key without kid is refused whole, with a *KeySetError
// that says which key and why.
func ParseKeySet(data []byte) (*KeySet, error) {
	if len(data) > MaxKeySetSize {
		return nil, refuseSet(fmt.Errorf("key set is larger than %d bytes", MaxKeySetSize))
	}
	// The document is read twice: once strictly by us (duplicate members and invalid UTF-8
	// refused, every member name visible, so that a private member jwx would ignore is
	// still seen), and once per key by jwx for the key material.
	var doc struct {
		Keys []jsontext.Value `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, refuseSet(fmt.Errorf("parsing key set: %v", err))
	}
	if doc.Keys == nil {
		return nil, refuseSet(errors.New("key set has no \"keys\" member: publish {\"keys\": [...]}, a JSON Web Key Set, not a single key"))
	}
	if len(doc.Keys) == 0 {
		return nil, refuseSet(errors.New("key set has no keys"))
	}
	if len(doc.Keys) > MaxKeys {
		return nil, refuseSet(fmt.Errorf("key set has %d keys, more than %d", len(doc.Keys), MaxKeys))
	}
	s := &KeySet{keys: make(map[string]*Key, len(doc.Keys))}
	for i, raw := range doc.Keys {
		k, err := parseKey(raw)
		if err != nil {
			return nil, refuseKey(i, raw, err)
		}
		if _, dup := s.keys[k.kid]; dup {
			return nil, refuseKey(i, raw, errors.New("kid is not unique in the set: give every key its own kid"))
		}
		s.keys[k.kid] = k
		s.ids = append(s.ids, k.kid)
	}
	sort.Strings(s.ids)
	return s, nil
}

// LoadKeySetFile reads and checks a jwks.json file (jwks_file).
func LoadKeySetFile(path string) (*KeySet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading key set: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxKeySetSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading key set: %v", err)
	}
	s, err := ParseKeySet(data)
	if err != nil {
		return nil, fmt.Errorf("key set %s: %w", path, err)
	}
	return s, nil
}

// jwkMembers are the members of one JWK that the checks read; the others are the
// algorithm-specific members, checked by name only (private) or by jwx (public).
type jwkMembers struct {
	Kty    string         `json:"kty"`
	Kid    *string        `json:"kid"`
	Use    *string        `json:"use"`
	Alg    *string        `json:"alg"`
	KeyOps *[]string      `json:"key_ops"`
	Crv    string         `json:"crv"`
	N      string         `json:"n"`
	E      string         `json:"e"`
	Other  jsontext.Value `json:",unknown"`
}

// parseKey checks one JWK and returns it as a Key.
func parseKey(raw jsontext.Value) (*Key, error) {
	var m jwkMembers
	if err := json.Unmarshal(raw, &m); err != nil {
		// Not the decoder's words, which name Go types: the partner reads this.
		return nil, errors.New("key is not a JSON object whose kty, kid, use, alg, crv, n and e are strings and key_ops an array of strings")
	}
	if name := privateMember(m.Other); name != "" {
		return nil, fmt.Errorf("key holds private key material (member %q): publish only the public key, and replace this key since its private part is exposed", name)
	}
	if m.Kid == nil || *m.Kid == "" {
		return nil, errors.New("key has no kid: tokens name their key by kid, so every key needs one")
	}
	if len(*m.Kid) > MaxKeyIDLength {
		return nil, fmt.Errorf("kid is longer than %d bytes", MaxKeyIDLength)
	}
	if m.Use != nil && *m.Use != "sig" {
		return nil, fmt.Errorf("key has use %q: only signature keys (use \"sig\" or no use) are accepted", linkspec.Clip(*m.Use))
	}
	if m.KeyOps != nil && !containsString(*m.KeyOps, "verify") {
		return nil, errors.New("key_ops does not allow \"verify\"")
	}
	alg := ""
	if m.Alg != nil {
		alg = *m.Alg
	}
	switch m.Kty {
	case "RSA":
		if alg != "" && alg != RS256 && alg != PS256 {
			return nil, fmt.Errorf("RSA key has alg %q: only RS256 and PS256 are accepted", linkspec.Clip(alg))
		}
		if err := checkRSAMembers(m.N, m.E); err != nil {
			return nil, err
		}
	case "EC":
		if alg != "" && alg != ES256 {
			return nil, fmt.Errorf("EC key has alg %q: only ES256 is accepted", linkspec.Clip(alg))
		}
		if m.Crv != "P-256" {
			return nil, fmt.Errorf("EC key on curve %q: only P-256 is accepted", linkspec.Clip(m.Crv))
		}
	case "oct":
		return nil, errors.New("key is a symmetric (oct) key, which holds private key material: only public RSA and EC keys are accepted")
	case "":
		return nil, errors.New("key has no kty")
	default:
		return nil, fmt.Errorf("key type %q is not accepted: only RSA and EC P-256 keys are", linkspec.Clip(m.Kty))
	}

	jk, err := jwk.ParseKey(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing key: %v", err)
	}
	var pub any
	if err := jk.Raw(&pub); err != nil {
		return nil, fmt.Errorf("reading key: %v", err)
	}
	k := &Key{kid: *m.Kid, alg: alg, jwk: jk}
	switch pub := pub.(type) {
	case *rsa.PublicKey:
		if err := checkRSAKey(pub); err != nil {
			return nil, err
		}
		k.rsa = pub
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() {
			return nil, errors.New("EC key is not on P-256")
		}
		// ECDH validates the point: on the curve, not the identity.
		if _, err := pub.ECDH(); err != nil {
			return nil, errors.New("EC key is not a valid P-256 point")
		}
		k.ec = pub
	default:
		// jwx found private material under a name we did not list: refuse.
		return nil, errors.New("key holds private key material: publish only the public key")
	}
	return k, nil
}

// privateMember returns the first private member name among the unknown members of a
// JWK, or "".
func privateMember(other jsontext.Value) string {
	if len(other) == 0 {
		return ""
	}
	var members map[string]jsontext.Value
	if err := json.Unmarshal(other, &members); err != nil {
		return ""
	}
	for _, name := range privateMembers {
		if _, ok := members[name]; ok {
			return name
		}
	}
	return ""
}

// checkRSAMembers checks n and e as written, before jwx converts them: jwx would fold an
// over-long exponent into an int, and the size bounds must hold on what the partner wrote.
func checkRSAMembers(n, e string) error {
	nb, err := base64.RawURLEncoding.Strict().DecodeString(n)
	if err != nil || len(nb) == 0 {
		return errors.New("RSA key has no valid modulus n")
	}
	if bits := new(big.Int).SetBytes(nb).BitLen(); bits < MinRSABits || bits > MaxRSABits {
		return fmt.Errorf("RSA modulus has %d bits: between %d and %d are accepted", bits, MinRSABits, MaxRSABits)
	}
	eb, err := base64.RawURLEncoding.Strict().DecodeString(e)
	if err != nil || len(eb) == 0 {
		return errors.New("RSA key has no valid exponent e")
	}
	if len(eb) > 8 {
		return errors.New("RSA exponent is too large")
	}
	return checkRSAExponent(new(big.Int).SetBytes(eb).Int64())
}

func checkRSAExponent(e int64) error {
	if e < minRSAExponent || e > maxRSAExponent || e%2 == 0 {
		return fmt.Errorf("RSA exponent %d is not accepted: it must be odd, at least %d and below 2^31", e, minRSAExponent)
	}
	return nil
}

// checkRSAKey checks the key as jwx built it, the one the signature check will use.
func checkRSAKey(pub *rsa.PublicKey) error {
	if bits := pub.N.BitLen(); bits < MinRSABits || bits > MaxRSABits {
		return fmt.Errorf("RSA modulus has %d bits: between %d and %d are accepted", bits, MinRSABits, MaxRSABits)
	}
	if pub.N.Bit(0) == 0 {
		return errors.New("RSA modulus is even")
	}
	return checkRSAExponent(int64(pub.E))
}

// keyIDOf returns a key's kid, clipped, for an error: the kid is how the partner and the
// operator find the key in the set.
func keyIDOf(raw jsontext.Value) string {
	var m struct {
		Kid string `json:"kid"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	return linkspec.Clip(m.Kid)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Key returns the key with the given kid (it implements KeySource).
func (s *KeySet) Key(_ context.Context, kid string) (*Key, error) {
	if s == nil {
		return nil, errKeysUnavailable(nil)
	}
	if k, ok := s.keys[kid]; ok {
		return k, nil
	}
	return nil, errKeyUnknown()
}

// KeyIDs returns the kids of the set, sorted.
func (s *KeySet) KeyIDs() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.ids...)
}

// Len returns the number of keys.
func (s *KeySet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.keys)
}

// The key errors' Detail is fixed and never names the kid, which is token text.
func errKeyUnknown() error {
	return &Error{Code: problem.CodeKeyUnknown, Detail: "no key with the token's kid in the partner's key set"}
}

func errKeysUnavailable(cause error) error {
	return &Error{Code: problem.CodeKeysUnavailable, Detail: "the partner's key set is not available", Err: cause}
}

// errKeySetRefused is the answer to a token whose key is not in a usable set because the
// partner's published set was refused: keys_unavailable, as for a set that did not load,
// with the reason, since the partner must fix the set and nothing in the token.
func errKeySetRefused(refused *KeySetError) error {
	return &Error{Code: problem.CodeKeysUnavailable, Detail: "the partner's published key set is refused: " + refused.Error(), Err: refused}
}

// RefusedKeySet is the key source of a partner whose published key set ParseKeySet
// refused with err: every lookup answers as the gateway does while the set it fetched is
// refused (keys_unavailable, with the reason). The partner kit's check uses it, so that it
// predicts the gateway's answer word for word. An err that is not a *KeySetError is
// answered as a set that is not available.
func RefusedKeySet(err error) KeySource { return refusedKeys{err} }

type refusedKeys struct{ err error }

func (r refusedKeys) Key(context.Context, string) (*Key, error) {
	var kerr *KeySetError
	if errors.As(r.err, &kerr) {
		return nil, errKeySetRefused(kerr)
	}
	return nil, errKeysUnavailable(r.err)
}

var _ KeySource = (*KeySet)(nil)
