package harness

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/internal/testpayload"
)

// Token describes a link token to mint. The zero value of each field takes a valid
// default, so a test sets only what it breaks.
type Token struct {
	// Issuer and Audience are the iss and aud claims.
	Issuer   string
	Audience string
	// Audiences, when set, makes aud an array of these instead of the string Audience.
	Audiences []string
	// Now is the issue time (nbf and iat); default time.Now().
	Now time.Time
	// Lifetime is exp - nbf; default 2 minutes.
	Lifetime time.Duration
	// Nonce is the nonce claim; default 32 random base64url characters.
	Nonce string
	// Payload holds the link payload claims; default testpayload.Main().
	Payload map[string]any
	// Header sets or overrides protected header members (typ defaults to JWT, alg to the
	// key's, kid to the key's); a nil value removes the member.
	Header map[string]any
	// Claims sets or overrides claims after everything else; a nil value removes the claim.
	Claims map[string]any
	// SignAlg signs with another algorithm than the header's alg (the key must fit it).
	SignAlg string
	// CorruptSignature flips a bit of the signature.
	CorruptSignature bool
}

// RandomNonce returns 32 random base64url characters.
func RandomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ClaimsOf returns the claim set tok would carry (without signing), for tests that compare
// what the upstream received.
func ClaimsOf(tok Token) map[string]any {
	now := tok.Now
	if now.IsZero() {
		now = time.Now()
	}
	life := tok.Lifetime
	if life == 0 {
		life = 2 * time.Minute
	}
	nonce := tok.Nonce
	if nonce == "" {
		nonce = RandomNonce()
	}
	payload := tok.Payload
	if payload == nil {
		payload = testpayload.Main()
	}
	claims := maps.Clone(payload)
	claims["iss"] = tok.Issuer
	if tok.Audiences != nil {
		claims["aud"] = tok.Audiences
	} else {
		claims["aud"] = tok.Audience
	}
	claims["nbf"] = now.Unix()
	claims["iat"] = now.Unix()
	claims["exp"] = now.Add(life).Unix()
	claims["nonce"] = nonce
	for k, v := range tok.Claims {
		if v == nil {
			delete(claims, k)
		} else {
			claims[k] = v
		}
	}
	return claims
}

// Sign mints tok with k: the compact serialization, signed by jwx's signer for the alg.
func (k *Key) Sign(t testing.TB, tok Token) string {
	t.Helper()
	s, err := k.Mint(tok)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Mint is Sign for a goroutine other than the test's, which must not call t.Fatal: it
// returns the error instead.
func (k *Key) Mint(tok Token) (string, error) {
	claims, err := json.Marshal(ClaimsOf(tok))
	if err != nil {
		return "", err
	}
	return k.signRaw(tok.Header, claims, tok.SignAlg, tok.CorruptSignature)
}

// SignRaw signs the claims bytes as they are (for malformed JSON, duplicate members …)
// under the default header with overrides.
func (k *Key) SignRaw(t testing.TB, header map[string]any, claims []byte, signAlg string, corrupt bool) string {
	t.Helper()
	s, err := k.signRaw(header, claims, signAlg, corrupt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (k *Key) signRaw(header map[string]any, claims []byte, signAlg string, corrupt bool) (string, error) {
	hdr := map[string]any{"typ": "JWT", "alg": k.Alg, "kid": k.Kid}
	for name, v := range header {
		if v == nil {
			delete(hdr, name)
		} else {
			hdr[name] = v
		}
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(claims)
	if signAlg == "" {
		signAlg = k.Alg
	}
	signer, err := jws.NewSigner(jwa.SignatureAlgorithm(signAlg))
	if err != nil {
		return "", err
	}
	sig, err := signer.Sign([]byte(input), k.Private)
	if err != nil {
		return "", fmt.Errorf("signing with %s: %v", signAlg, err)
	}
	if corrupt {
		sig[len(sig)/2] ^= 0x01
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
