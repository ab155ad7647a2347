// Package jwttest is the test fixture of link tokens shared by linktoken's own tests and
// linktokentest's rejection table: one partner (issuer, audience), one set of keys made once
// per test binary, valid main-client and Go claims issued at a fixed instant, and a signer
// of exact header and claims text. The payloads are internal/testpayload's, the harness's
// too. It imports nothing else of the project, so that linktoken's in-package tests can use
// it.
package jwttest

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

	"github.com/partnergate/partnergate/internal/testpayload"
)

// The partner of the fixture: its agreed issuer and audience, and the nonce of a valid token.
const (
	Issuer   = "https://acme.example"
	Audience = "svc-link"
	Nonce    = "bm9uY2UtMDEyMzQ1Njc4OWFiY2RlZg"
)

// Now is the instant a valid token of the fixture is issued at, so that every time
// boundary is exact.
var Now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// KeyPairs are the fixture's private keys: two RSA-2048 and two EC P-256.
type KeyPairs struct {
	RSA, RSA2 *rsa.PrivateKey
	EC, EC2   *ecdsa.PrivateKey
}

var (
	keysOnce sync.Once
	keysVal  KeyPairs
)

// Keys returns the fixture's keys, generated once per test binary: RSA key generation is
// slow.
func Keys(tb testing.TB) *KeyPairs {
	tb.Helper()
	keysOnce.Do(func() {
		var err error
		if keysVal.RSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keysVal.RSA2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keysVal.EC, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if keysVal.EC2, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	})
	return &keysVal
}

// JWK returns the public JWK of key with kid and, when alg is not "", alg, as a JSON
// object; extra members are merged in (a nil value deletes the member), to plant private
// members or odd values.
func JWK(tb testing.TB, key any, kid, alg string, extra map[string]any) map[string]any {
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

// JWKS returns a jwks.json holding keys.
func JWKS(tb testing.TB, keys ...map[string]any) []byte {
	tb.Helper()
	data, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		tb.Fatalf("marshal jwks: %v", err)
	}
	return data
}

// StandardSetJSON is the partner's published jwks.json: kid "rsa-1" (RSA, no alg member),
// "rsa-rs" (RSA, alg RS256), "ec-1" (EC P-256, no alg) and "ec-es" (EC P-256, alg ES256).
func StandardSetJSON(tb testing.TB) []byte {
	tb.Helper()
	k := Keys(tb)
	return JWKS(tb,
		JWK(tb, &k.RSA.PublicKey, "rsa-1", "", nil),
		JWK(tb, &k.RSA2.PublicKey, "rsa-rs", "RS256", nil),
		JWK(tb, &k.EC.PublicKey, "ec-1", "", nil),
		JWK(tb, &k.EC2.PublicKey, "ec-es", "ES256", nil),
	)
}

// B64u is unpadded base64url.
func B64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// SignRaw signs the exact header and claims text with jwx's signer for alg.
func SignRaw(tb testing.TB, header, claims, alg string, key crypto.Signer) string {
	tb.Helper()
	input := B64u([]byte(header)) + "." + B64u([]byte(claims))
	signer, err := jws.NewSigner(jwa.SignatureAlgorithm(alg))
	if err != nil {
		tb.Fatalf("jws.NewSigner(%s): %v", alg, err)
	}
	sig, err := signer.Sign([]byte(input), key)
	if err != nil {
		tb.Fatalf("sign %s: %v", alg, err)
	}
	return input + "." + B64u(sig)
}

// signerFor returns the private key of the standard set's kid.
func signerFor(tb testing.TB, kid string) crypto.Signer {
	tb.Helper()
	k := Keys(tb)
	switch kid {
	case "rsa-1":
		return k.RSA
	case "rsa-rs":
		return k.RSA2
	case "ec-1":
		return k.EC
	case "ec-es":
		return k.EC2
	}
	tb.Fatalf("no test key %q", kid)
	return nil
}

// KidFor is the standard set's kid without an alg member for each algorithm.
func KidFor(alg string) string {
	if alg == "ES256" {
		return "ec-1"
	}
	return "rsa-1"
}

// HeaderJSON is a regular token header.
func HeaderJSON(alg, kid string) string {
	return `{"alg":"` + alg + `","typ":"JWT","kid":"` + kid + `"}`
}

// MainClaims is a valid main-client link issued at Now: testpayload.Main with the
// partner's registered claims.
func MainClaims() map[string]any { return MainClaimsAt(Now) }

// MainClaimsAt is MainClaims issued at another instant, for a verifier on a real clock.
func MainClaimsAt(at time.Time) map[string]any { return claimsAt(at, testpayload.Main()) }

// GoClaims is a valid Go link issued at Now: testpayload.Go with the registered claims.
func GoClaims() map[string]any { return GoClaimsAt(Now) }

// GoClaimsAt is GoClaims issued at another instant.
func GoClaimsAt(at time.Time) map[string]any { return claimsAt(at, testpayload.Go()) }

// claimsAt adds the partner's registered claims, issued at at, to payload.
func claimsAt(at time.Time, payload map[string]any) map[string]any {
	nbf := at.Unix()
	payload["iss"], payload["aud"], payload["nonce"] = Issuer, Audience, Nonce
	payload["nbf"], payload["iat"], payload["exp"] = nbf, nbf, nbf+300
	return payload
}

// ClaimsJSON marshals a claim set.
func ClaimsJSON(tb testing.TB, c map[string]any) string {
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
	return SignRaw(tb, HeaderJSON(alg, kid), ClaimsJSON(tb, c), alg, signerFor(tb, kid))
}

// Resign signs the exact header and claims text with the standard key of kid.
func Resign(tb testing.TB, header, claims, alg, kid string) string {
	tb.Helper()
	return SignRaw(tb, header, claims, alg, signerFor(tb, kid))
}

// WithClaims returns a valid main-client claim set changed by f.
func WithClaims(f func(c map[string]any)) map[string]any { return WithClaimsAt(Now, f) }

// WithClaimsAt is WithClaims issued at another instant.
func WithClaimsAt(at time.Time, f func(c map[string]any)) map[string]any {
	c := MainClaimsAt(at)
	f(c)
	return c
}

// RawClaims replaces one member's JSON text in the marshalled main-client claims; it keeps
// everything else valid, to isolate the member under test.
func RawClaims(tb testing.TB, member, rawValue string) string {
	tb.Helper()
	return RawClaimsAt(tb, Now, member, rawValue)
}

// RawClaimsAt is RawClaims issued at another instant.
func RawClaimsAt(tb testing.TB, at time.Time, member, rawValue string) string {
	tb.Helper()
	c := MainClaimsAt(at)
	delete(c, member)
	s := ClaimsJSON(tb, c)
	return `{"` + member + `":` + rawValue + `,` + s[1:]
}
