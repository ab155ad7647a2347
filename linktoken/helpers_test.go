package linktoken

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
)

const (
	testIssuer   = "https://acme.example"
	testAudience = "svc-link"
	testNonce    = "bm9uY2UtMDEyMzQ1Njc4OWFiY2RlZg"
)

// testNow is the injected clock of every test: a fixed instant, so that boundaries are exact.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

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

// jwkJSON returns the public JWK of key with kid and, when alg is not "", alg; extra members
// are merged in (to plant private members or odd values).
func jwkJSON(tb testing.TB, key any, kid, alg string, extra map[string]any) map[string]any {
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
	if kid != "" {
		m["kid"] = kid
	}
	if alg != "" {
		m["alg"] = alg
	}
	for k, v := range extra {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
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

// standardSet is the partner's set of the verify tests: kid "rsa-1" (RSA, no alg), "rsa-rs"
// (RSA, alg RS256), "ec-1" (EC P-256, no alg), "ec-es" (alg ES256).
func standardSet(tb testing.TB) *KeySet {
	tb.Helper()
	k := keys(tb)
	s, err := ParseKeySet(jwksJSON(tb,
		jwkJSON(tb, &k.rsa.PublicKey, "rsa-1", "", nil),
		jwkJSON(tb, &k.rsa2.PublicKey, "rsa-rs", RS256, nil),
		jwkJSON(tb, &k.ec.PublicKey, "ec-1", "", nil),
		jwkJSON(tb, &k.ec2.PublicKey, "ec-es", ES256, nil),
	))
	if err != nil {
		tb.Fatalf("ParseKeySet(standard set) = %v", err)
	}
	return s
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

// mainClaims is a valid main-client link issued at testNow.
func mainClaims() map[string]any {
	nbf := testNow.Unix()
	return map[string]any{
		"iss": testIssuer, "aud": testAudience, "nbf": nbf, "iat": nbf, "exp": nbf + 300,
		"nonce":             testNonce,
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

// goClaims is a valid Go link issued at testNow.
func goClaims() map[string]any {
	c := mainClaims()
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

func headerJSON(alg, kid string) string {
	return `{"alg":"` + alg + `","typ":"JWT","kid":"` + kid + `"}`
}

// signerFor returns the private key of the standard set's kid.
func signerFor(tb testing.TB, kid string) crypto.Signer {
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
	if alg == ES256 {
		return "ec-1"
	}
	return "rsa-1"
}

func newTestVerifier(tb testing.TB, r Rules) *Verifier {
	tb.Helper()
	if r.Issuer == "" {
		r.Issuer = testIssuer
	}
	if r.Audience == "" {
		r.Audience = testAudience
	}
	v, err := NewVerifier(r, WithClock(fixedClock(testNow)))
	if err != nil {
		tb.Fatalf("NewVerifier: %v", err)
	}
	return v
}
