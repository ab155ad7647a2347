// Package linktokentest holds the gateway's rejection cases as data, so that every verdict
// of linktoken's verifier can be asserted by more than one consumer: linktoken's own tests
// run each case through Verifier.Verify, and the partner kit's tests run the same cases
// through partnerkit.Check, whose verdict and explanation must agree with the gateway's.
//
// The cases sign with a fixed set of keys made once per test binary and are read at the
// fixed instant Now, so that every time boundary is exact.
package linktokentest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/linktoken"
)

// The partner of every case: its agreed issuer and audience, and the nonce of a valid token.
const (
	Issuer   = "https://acme.example"
	Audience = "svc-link"
	Nonce    = "bm9uY2UtMDEyMzQ1Njc4OWFiY2RlZg"
)

// Now is the instant a valid token of the cases is issued at.
var Now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testKeys are generated once per test binary: RSA key generation is slow.
type testKeys struct {
	rsa, rsa2 *rsa.PrivateKey
	ec, ec2   *ecdsa.PrivateKey
}

var (
	keysOnce sync.Once
	keysVal  testKeys
)

func keys(tb testing.TB) *testKeys {
	tb.Helper()
	keysOnce.Do(func() {
		var err error
		if keysVal.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keysVal.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keysVal.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if keysVal.ec2, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	})
	return &keysVal
}

// KeySetJSON is the partner's published jwks.json: kid "rsa-1" (RSA, no alg member),
// "rsa-rs" (RSA, alg RS256), "ec-1" (EC P-256, no alg) and "ec-es" (EC P-256, alg ES256).
func KeySetJSON(tb testing.TB) []byte {
	tb.Helper()
	k := keys(tb)
	return jwksJSON(tb,
		jwkJSON(tb, &k.rsa.PublicKey, "rsa-1", ""),
		jwkJSON(tb, &k.rsa2.PublicKey, "rsa-rs", linktoken.RS256),
		jwkJSON(tb, &k.ec.PublicKey, "ec-1", ""),
		jwkJSON(tb, &k.ec2.PublicKey, "ec-es", linktoken.ES256),
	)
}

// KeySet is KeySetJSON parsed as the gateway parses it.
func KeySet(tb testing.TB) *linktoken.KeySet {
	tb.Helper()
	s, err := linktoken.ParseKeySet(KeySetJSON(tb))
	if err != nil {
		tb.Fatalf("ParseKeySet(standard set) = %v", err)
	}
	return s
}

// jwkJSON returns the public JWK of key with kid and, when alg is not "", alg.
func jwkJSON(tb testing.TB, key any, kid, alg string) map[string]any {
	tb.Helper()
	jk, err := jwk.FromRaw(key)
	if err != nil {
		tb.Fatalf("jwk.FromRaw: %v", err)
	}
	data, err := json.Marshal(jk)
	if err != nil {
		tb.Fatalf("marshal jwk: %v", err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		tb.Fatalf("unmarshal jwk: %v", err)
	}
	m["kid"] = kid
	if alg != "" {
		m["alg"] = alg
	}
	return m
}

func jwksJSON(tb testing.TB, keys ...map[string]any) []byte {
	tb.Helper()
	data, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		tb.Fatalf("marshal jwks: %v", err)
	}
	return data
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// signRaw signs the exact header and claims text with jwx's signer for alg.
func signRaw(tb testing.TB, header, claims, alg string, key crypto.Signer) string {
	tb.Helper()
	input := b64u([]byte(header)) + "." + b64u([]byte(claims))
	signer, err := jws.NewSigner(jwa.SignatureAlgorithm(alg))
	if err != nil {
		tb.Fatalf("jws.NewSigner(%s): %v", alg, err)
	}
	sig, err := signer.Sign([]byte(input), key)
	if err != nil {
		tb.Fatalf("sign %s: %v", alg, err)
	}
	return input + "." + b64u(sig)
}

// signerFor returns the private key of the standard set's kid.
func signerFor(tb testing.TB, kid string) crypto.Signer {
	tb.Helper()
	k := keys(tb)
	switch kid {
	case "rsa-1":
		return k.rsa
	case "rsa-rs":
		return k.rsa2
	case "ec-1":
		return k.ec
	case "ec-es":
		return k.ec2
	}
	tb.Fatalf("no test key %q", kid)
	return nil
}

// kidFor is the standard set's kid without alg member for each algorithm.
func kidFor(alg string) string {
	if alg == linktoken.ES256 {
		return "ec-1"
	}
	return "rsa-1"
}

func headerJSON(alg, kid string) string {
	return `{"alg":"` + alg + `","typ":"JWT","kid":"` + kid + `"}`
}

// MainClaims is a valid main-client link issued at Now.
func MainClaims() map[string]any {
	nbf := Now.Unix()
	return map[string]any{
		"iss": Issuer, "aud": Audience, "nbf": nbf, "iat": nbf, "exp": nbf + 300,
		"nonce":             Nonce,
		"employeeId":        "emp-1042",
		"employeeUsername":  "kari.nordmann",
		"employeeFirstname": "Åse",
		"employeeLastname":  "Ødegård",
		"employeeEmail":     "ase@acme.example",
		"organizationName":  "Acme Helse AS",
		"organizationId":    "org-77",
		"caseId":            "case-9",
		"contact": map[string]any{
			"id": "c-501", "birthdate": "1980-02-29", "firstname": "Ola", "lastname": "Nordmann",
			"mobile": "+4712345678", "email": "ola@example.org",
		},
	}
}

// GoClaims is a valid Go link issued at Now.
func GoClaims() map[string]any {
	c := MainClaims()
	for _, k := range []string{"employeeId", "employeeUsername", "employeeFirstname", "employeeLastname", "employeeEmail"} {
		delete(c, k)
	}
	return c
}

func claimsJSON(tb testing.TB, c map[string]any) string {
	tb.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		tb.Fatalf("marshal claims: %v", err)
	}
	return string(data)
}

// Token signs claims with the standard key of kid under alg, with a regular header.
func Token(tb testing.TB, alg, kid string, c map[string]any) string {
	tb.Helper()
	return signRaw(tb, headerJSON(alg, kid), claimsJSON(tb, c), alg, signerFor(tb, kid))
}

func resign(tb testing.TB, header, claims, alg, kid string) string {
	tb.Helper()
	return signRaw(tb, header, claims, alg, signerFor(tb, kid))
}

// withClaims returns a valid main-client claim set changed by f.
func withClaims(f func(c map[string]any)) map[string]any {
	c := MainClaims()
	f(c)
	return c
}

// rawClaims replaces one member's JSON text in the marshalled claims; it keeps everything
// else valid, to isolate the member under test.
func rawClaims(tb testing.TB, member, rawValue string) string {
	tb.Helper()
	c := MainClaims()
	delete(c, member)
	s := claimsJSON(tb, c)
	return `{"` + member + `":` + rawValue + `,` + s[1:]
}
