package linktoken

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

var knownCodes = map[problem.Code]bool{
	problem.CodeTokenMalformed: true, problem.CodeHeaderInvalid: true, problem.CodeAlgorithmNotAllowed: true,
	problem.CodeKeyIDMissing: true, problem.CodeKeyUnknown: true, problem.CodeKeysUnavailable: true,
	problem.CodeSignatureInvalid: true, problem.CodeClaimsInvalid: true, problem.CodeIssuerInvalid: true,
	problem.CodeAudienceInvalid: true, problem.CodeLifetimeTooLong: true, problem.CodeTokenNotYetValid: true,
	problem.CodeTokenExpired: true, problem.CodeNonceMissing: true, problem.CodeNonceInvalid: true,
	problem.CodePayloadInvalid: true, problem.CodeKindNotAllowed: true, problem.CodeTimeInMilliseconds: true,
}

// checkVerdict asserts what holds for every input: an error is an *Error with a known code
// and a detail free of token text; an accepted token carries a signature that crypto/rsa or
// crypto/ecdsa verifies on its own with the key its kid names, and claims that meet the
// rules.
func checkVerdict(t *testing.T, token []byte, set *KeySet, got *Token, err error) {
	t.Helper()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || !knownCodes[e.Code] {
			t.Fatalf("Verify() error %v is not an *Error with a known code", err)
		}
		if e.Detail == "" || !utf8.ValidString(e.Error()) {
			t.Fatalf("Verify() error %q has no valid detail", e.Error())
		}
		if len(token) >= 24 && strings.Contains(e.Error(), string(token[:24])) {
			t.Fatalf("Verify() error %q contains token text", e.Error())
		}
		return
	}
	parts := bytes.Split(token, []byte("."))
	if len(parts) != 3 {
		t.Fatalf("Verify() accepted a token of %d segments", len(parts))
	}
	sig, derr := base64.RawURLEncoding.DecodeString(string(parts[2]))
	if derr != nil {
		t.Fatalf("Verify() accepted a signature that is not base64url: %v", derr)
	}
	key, kerr := set.Key(context.Background(), got.KeyID)
	if kerr != nil {
		t.Fatalf("Verify() accepted kid %q that the set does not hold", got.KeyID)
	}
	digest := sha256.Sum256(token[:len(parts[0])+1+len(parts[1])])
	switch got.Alg {
	case RS256:
		if rsa.VerifyPKCS1v15(key.Public().(*rsa.PublicKey), crypto.SHA256, digest[:], sig) != nil {
			t.Fatal("Verify() accepted an RS256 token that crypto/rsa refuses")
		}
	case PS256:
		if rsa.VerifyPSS(key.Public().(*rsa.PublicKey), crypto.SHA256, digest[:], sig, nil) != nil {
			t.Fatal("Verify() accepted a PS256 token that crypto/rsa refuses")
		}
	case ES256:
		if len(sig) != 64 || !ecdsa.Verify(key.Public().(*ecdsa.PublicKey), digest[:],
			new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			t.Fatal("Verify() accepted an ES256 token that crypto/ecdsa refuses")
		}
	default:
		t.Fatalf("Verify() accepted alg %q", got.Alg)
	}
	if got.Issuer != testIssuer || got.Expiry.Sub(got.NotBefore) > DefaultMaxLifetime ||
		len(got.Nonce) < DefaultNonceMinLength || len(got.Nonce) > DefaultNonceMaxLength {
		t.Fatalf("Verify() accepted claims that break the rules: iss ok %v, lifetime %v, nonce length %d",
			got.Issuer == testIssuer, got.Expiry.Sub(got.NotBefore), len(got.Nonce))
	}
	if _, verr := got.Payload.Validate(); verr != nil {
		t.Fatalf("Verify() accepted an invalid payload: %v", verr)
	}
	if len(got.Dropped) == 0 {
		if got.Claims != string(parts[1]) {
			t.Fatal("Verify().Claims is not the payload segment")
		}
		return
	}
	// Dropped optional fields leave the forwarded claims too: the claims are the segment's
	// members less exactly those fields.
	var want, have map[string]any
	if raw, err := base64.RawURLEncoding.DecodeString(string(parts[1])); err != nil || json.Unmarshal(raw, &want) != nil {
		t.Fatalf("Verify() accepted a payload segment that is not a JSON object")
	}
	if raw, err := base64.RawURLEncoding.DecodeString(got.Claims); err != nil || json.Unmarshal(raw, &have) != nil {
		t.Fatalf("Verify().Claims is not base64url JSON: %q", got.Claims)
	}
	for _, f := range got.Dropped {
		obj, name := want, f.Field
		if inner, ok := strings.CutPrefix(f.Field, "contact."); ok {
			obj, _ = want["contact"].(map[string]any)
			name = inner
		}
		if _, ok := obj[name]; !ok {
			t.Fatalf("Verify() dropped %s, which the token does not carry", f.Field)
		}
		delete(obj, name)
	}
	if !reflect.DeepEqual(have, want) {
		t.Fatalf("Verify().Claims = %v, want the segment less %v: %v", have, got.Dropped, want)
	}
}

// FuzzVerify feeds arbitrary token bytes to Verify. Mutations of a signed token break its
// signature, so what this exercises is everything before and around the signature check:
// framing, header decoding, algorithm and key selection. Nothing may panic, and nothing
// unsigned or forged may pass.
func FuzzVerify(f *testing.F) {
	set := standardSet(f)
	claims := claimsJSON(f, mainClaims())
	for _, alg := range []string{RS256, PS256, ES256} {
		f.Add([]byte(tokenOf(f, alg, kidFor(alg), mainClaims())))
		f.Add([]byte(tokenOf(f, alg, kidFor(alg), goClaims())))
	}
	for _, seed := range []string{
		"", ".", "..", "...", "a.b.c", "e30.e30.e30", "e30.e30.", "{}", `{"payload":"e30"}`,
		b64u([]byte(`{"alg":"none","typ":"JWT","kid":"rsa-1"}`)) + "." + b64u([]byte(claims)) + ".",
		b64u([]byte(`{"alg":"HS256","typ":"JWT","kid":"rsa-1"}`)) + "." + b64u([]byte(claims)) + ".c2ln",
		b64u([]byte(`{"alg":"ES256","typ":"JWT","kid":"ec-1"}`)) + "." + b64u([]byte(claims)) + "." + b64u(make([]byte, 64)),
		b64u([]byte(`{"alg":"RS256","alg":"RS256","typ":"JWT","kid":"rsa-1"}`)) + "." + b64u([]byte(claims)) + ".c2ln",
		b64u([]byte(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","jku":"http://127.0.0.1/"}`)) + "." + b64u([]byte(claims)) + ".c2ln",
		b64u([]byte(`{"alg":"RSA-OAEP","enc":"A256GCM"}`)) + ".AAAA.AAAA.AAAA.AAAA",
	} {
		f.Add([]byte(seed))
	}
	v := newTestVerifier(f, Rules{})
	f.Fuzz(func(t *testing.T, token []byte) {
		got, err := v.Verify(context.Background(), token, set)
		checkVerdict(t, token, set, got, err)
	})
}

// FuzzClaims signs arbitrary claims JSON with a key of the set and verifies it: the claims
// decoder and rules see every shape of JSON, behind a valid signature. Nothing may panic,
// every verdict has a known code, and an accepted token meets every rule.
func FuzzClaims(f *testing.F) {
	set := standardSet(f)
	f.Add(claimsJSON(f, mainClaims()))
	f.Add(claimsJSON(f, goClaims()))
	f.Add(rawClaims(f, "aud", `["x","svc-link"]`))
	f.Add(rawClaims(f, "exp", `"1772366700"`))
	f.Add(rawClaims(f, "exp", `1772366700.5`))
	f.Add(rawClaims(f, "nonce", `{"a":1}`))
	f.Add(rawClaims(f, "nonce", `"a","nonce":"b"`))
	f.Add(rawClaims(f, "contact", `{"id":1}`))
	f.Add(rawClaims(f, "deep", strings.Repeat("[", 500)+strings.Repeat("]", 500)))
	f.Add(`{}`)
	f.Add(`[]`)
	f.Add(`null`)
	f.Add("{\"iss\":\"\xff\"}")
	v := newTestVerifier(f, Rules{})
	ec := keys(f).EC
	f.Fuzz(func(t *testing.T, claims string) {
		token := []byte(signRaw(t, headerJSON(ES256, "ec-1"), claims, ES256, ec))
		if len(token) > MaxTokenLength {
			return
		}
		got, err := v.Verify(context.Background(), token, set)
		checkVerdict(t, token, set, got, err)
		if err == nil && got.Kind != linkspec.KindMain && got.Kind != linkspec.KindGo {
			t.Fatalf("Verify().Kind = %q", got.Kind)
		}
	})
}

// FuzzParseKeySet feeds arbitrary documents to ParseKeySet: nothing may panic, and every
// set it accepts holds only public RSA keys within the size bounds or P-256 keys, each with
// a unique non-empty kid.
func FuzzParseKeySet(f *testing.F) {
	k := keys(f)
	f.Add(jwksJSON(f, jwkJSON(f, &k.RSA.PublicKey, "rsa", RS256, nil), jwkJSON(f, &k.EC.PublicKey, "ec", "", map[string]any{"use": "sig"})))
	f.Add(jwksJSON(f, jwkJSON(f, k.RSA, "priv", "", nil)))
	f.Add(jwksJSON(f, jwkJSON(f, k.EC, "priv-ec", ES256, nil)))
	f.Add([]byte(`{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","kid":"e","n":"AQAB","e":"AQAAAAAAAAAB"}]}`))
	f.Add([]byte(`{"keys":[]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"z","x":"AA","y":"AA"}]}`))
	f.Add([]byte(`{"keys":[{"kid":"a"},{"kid":"a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseKeySet(data)
		if err != nil {
			if s != nil {
				t.Fatal("ParseKeySet() returned a set with an error")
			}
			return
		}
		if s.Len() == 0 || s.Len() != len(s.KeyIDs()) {
			t.Fatalf("ParseKeySet() accepted a set of %d keys, %d kids", s.Len(), len(s.KeyIDs()))
		}
		for _, kid := range s.KeyIDs() {
			key, err := s.Key(context.Background(), kid)
			if err != nil || kid == "" {
				t.Fatalf("Key(%q) = %v", kid, err)
			}
			switch pub := key.Public().(type) {
			case *rsa.PublicKey:
				if bits := pub.N.BitLen(); bits < MinRSABits || bits > MaxRSABits || pub.E < minRSAExponent || pub.E%2 == 0 {
					t.Fatalf("ParseKeySet() accepted an RSA key of %d bits, e=%d", bits, pub.E)
				}
			case *ecdsa.PublicKey:
				if pub.Curve.Params().Name != "P-256" {
					t.Fatalf("ParseKeySet() accepted curve %s", pub.Curve.Params().Name)
				}
			default:
				t.Fatalf("ParseKeySet() accepted a %T", pub)
			}
		}
	})
}
