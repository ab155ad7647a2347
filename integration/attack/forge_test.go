package attack

// Forging tokens byte by byte. The attacks need control that no JWT library gives (and no
// library should): duplicate members, wrong types, broken framing, malformed signatures.
// The gateway under test uses jwx for every JOSE operation; this file is the attacker.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"math/big"
	"strings"
	"testing"
	"time"
)

// b64 is base64url without padding, the only encoding a compact JWS segment may use
// (RFC 7515 §2).
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// mustJSON marshals v, failing the test on error.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%T) = %v", v, err)
	}
	return b
}

// signer signs the JWS signing input (header "." payload) and returns the raw signature.
type signer func(t testing.TB, input []byte) []byte

// compact joins a raw header JSON, a raw claims JSON and the signature made by sign over
// them; sign nil gives an empty signature segment.
func compact(t testing.TB, header, claims []byte, sign signer) string {
	t.Helper()
	input := b64(header) + "." + b64(claims)
	var sig []byte
	if sign != nil {
		sig = sign(t, []byte(input))
	}
	return input + "." + b64(sig)
}

func digest(h crypto.Hash, b []byte) []byte {
	d := h.New()
	d.Write(b)
	return d.Sum(nil)
}

func signRS256(key *rsa.PrivateKey) signer {
	return func(t testing.TB, input []byte) []byte {
		t.Helper()
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest(crypto.SHA256, input))
		if err != nil {
			t.Fatalf("rsa.SignPKCS1v15 = %v", err)
		}
		return sig
	}
}

func signPS256(key *rsa.PrivateKey) signer {
	return func(t testing.TB, input []byte) []byte {
		t.Helper()
		// RFC 7518 §3.5: salt length equal to the hash length.
		sig, err := rsa.SignPSS(rand.Reader, key, crypto.SHA256, digest(crypto.SHA256, input),
			&rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		if err != nil {
			t.Fatalf("rsa.SignPSS = %v", err)
		}
		return sig
	}
}

// esRS returns ECDSA P-256 r and s over input.
func esRS(t testing.TB, key *ecdsa.PrivateKey, input []byte) (r, s *big.Int) {
	t.Helper()
	r, s, err := ecdsa.Sign(rand.Reader, key, digest(crypto.SHA256, input))
	if err != nil {
		t.Fatalf("ecdsa.Sign = %v", err)
	}
	return r, s
}

// rawRS is the JWS form of an ECDSA signature: r and s as 32-byte big-endian each
// (RFC 7518 §3.4).
func rawRS(r, s *big.Int) []byte {
	out := make([]byte, 64)
	r.FillBytes(out[:32])
	s.FillBytes(out[32:])
	return out
}

func signES256(key *ecdsa.PrivateKey) signer {
	return func(t testing.TB, input []byte) []byte {
		t.Helper()
		return rawRS(esRS(t, key, input))
	}
}

// signESWith signs with key and hands r and s to shape, which returns the signature bytes
// to send: the malformed-signature attacks.
func signESWith(key *ecdsa.PrivateKey, shape func(r, s *big.Int) []byte) signer {
	return func(t testing.TB, input []byte) []byte {
		t.Helper()
		return shape(esRS(t, key, input))
	}
}

// signHS signs with HMAC: the key-confusion attack uses the partner's public key as the
// secret.
func signHS(alg string, secret []byte) signer {
	return func(t testing.TB, input []byte) []byte {
		t.Helper()
		var h func() hash.Hash
		switch alg {
		case "HS256":
			h = sha256.New
		case "HS384":
			h = sha512.New384
		case "HS512":
			h = sha512.New
		default:
			t.Fatalf("signHS(%q): unknown algorithm", alg)
		}
		m := hmac.New(h, secret)
		m.Write(input)
		return m.Sum(nil)
	}
}

// constSig returns a signer that ignores its input.
func constSig(sig []byte) signer { return func(testing.TB, []byte) []byte { return sig } }

// p256N is the order of P-256's base point.
var p256N = elliptic.P256().Params().N

// newNonce returns a fresh random nonce of 32 base64url characters.
func newNonce(t testing.TB) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("rand.Read = %v", err)
	}
	return b64(b)
}

// mainPayload is a valid main-client link payload (docs/interface.md A-PAY-MAIN), as a map so
// that attacks can replace any member with any JSON.
func mainPayload() map[string]any {
	return map[string]any{
		"employeeId":        "emp-1001",
		"employeeFirstname": "Ada",
		"employeeLastname":  "Lovelace",
		"organizationName":  "Clinic North",
		"organizationId":    "org-77",
		"contact": map[string]any{
			"id":        "c-5001",
			"firstname": "Grace",
			"lastname":  "Hopper",
			"birthdate": "1906-12-09",
		},
	}
}

// claimsFor returns valid claims of partner p for a token issued now: nbf = iat = now - 10 s
// (so the gateway's clock, read a little later, is inside the window), exp = nbf + 4 min.
func claimsFor(t testing.TB, p partner, now time.Time) map[string]any {
	t.Helper()
	nbf := now.Add(-10 * time.Second).Unix()
	c := mainPayload()
	c["iss"] = p.issuer
	c["aud"] = p.audience
	c["nbf"] = nbf
	c["iat"] = nbf
	c["exp"] = nbf + 240
	c["nonce"] = newNonce(t)
	return c
}

// header returns a JOSE header with typ JWT and the given alg and kid, as a map.
func header(alg, kid string) map[string]any {
	return map[string]any{"typ": "JWT", "alg": alg, "kid": kid}
}

// replaceJSONMember replaces the first occurrence of `"name":<value>` in raw JSON, where
// value is what json.Marshal wrote for it, by `"name":repl`. It lets an attack put bytes no
// marshaller writes (duplicates, 1e309, invalid UTF-8) into an otherwise valid document.
func replaceJSONMember(t testing.TB, raw []byte, name string, value any, repl string) []byte {
	t.Helper()
	old := fmt.Sprintf("%q:%s", name, mustJSON(t, value))
	if !strings.Contains(string(raw), old) {
		t.Fatalf("replaceJSONMember: %s not in %s", old, raw)
	}
	return []byte(strings.Replace(string(raw), old, fmt.Sprintf("%q:%s", name, repl), 1))
}

// appendMembers adds raw members before the closing brace of a JSON object.
func appendMembers(raw []byte, members string) []byte {
	s := strings.TrimSuffix(string(raw), "}")
	return []byte(s + "," + members + "}")
}
