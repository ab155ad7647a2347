package linktoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/problem"
)

// fakeModulus returns an odd number of exactly bits bits as an RSA public key: the loader
// checks sizes, not primality, and a real 8192-bit key takes too long to generate.
func fakeRSAKey(tb testing.TB, bits, e int) *rsa.PublicKey {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
	if err != nil {
		tb.Fatal(err)
	}
	n.SetBit(n, bits-1, 1)
	n.SetBit(n, 0, 1)
	return &rsa.PublicKey{N: n, E: e}
}

func TestParseKeySetAccepts(t *testing.T) {
	k := keys(t)
	for _, tc := range []struct {
		name string
		keys []map[string]any
		kids []string
	}{
		{name: "RSA and EC", kids: []string{"ec", "rsa"}, keys: []map[string]any{
			jwkJSON(t, &k.RSA.PublicKey, "rsa", "", nil),
			jwkJSON(t, &k.EC.PublicKey, "ec", "", nil),
		}},
		{name: "alg and use sig and key_ops verify", kids: []string{"a", "b", "c"}, keys: []map[string]any{
			jwkJSON(t, &k.RSA.PublicKey, "a", RS256, map[string]any{"use": "sig"}),
			jwkJSON(t, &k.RSA2.PublicKey, "b", PS256, map[string]any{"key_ops": []string{"verify"}}),
			jwkJSON(t, &k.EC.PublicKey, "c", ES256, map[string]any{"use": "sig", "key_ops": []string{"sign", "verify"}}),
		}},
		{name: "RSA 8192 bits", kids: []string{"big"}, keys: []map[string]any{jwkJSON(t, fakeRSAKey(t, 8192, 65537), "big", "", nil)}},
		{name: "RSA 2048 bits exponent 2^31-1", kids: []string{"e"}, keys: []map[string]any{jwkJSON(t, fakeRSAKey(t, 2048, 1<<31-1), "e", "", nil)}},
		{name: "unknown members", kids: []string{"x"}, keys: []map[string]any{jwkJSON(t, &k.EC.PublicKey, "x", "", map[string]any{"x-note": "rotated 2026"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseKeySet(jwksJSON(t, tc.keys...))
			if err != nil {
				t.Fatalf("ParseKeySet(%s) = %v, want a set", tc.name, err)
			}
			if got, want := strings.Join(s.KeyIDs(), ","), strings.Join(tc.kids, ","); got != want {
				t.Errorf("ParseKeySet(%s).KeyIDs() = %q, want %q", tc.name, got, want)
			}
			if s.Len() != len(tc.kids) {
				t.Errorf("ParseKeySet(%s).Len() = %d, want %d", tc.name, s.Len(), len(tc.kids))
			}
			for _, kid := range tc.kids {
				key, err := s.Key(context.Background(), kid)
				if err != nil || key.KeyID() != kid {
					t.Errorf("Key(%q) = %v, %v, want the key", kid, key, err)
				}
			}
		})
	}
}

func TestParseKeySetRefuses(t *testing.T) {
	k := keys(t)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p521, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := func(kid string, extra map[string]any) map[string]any {
		return jwkJSON(t, &k.RSA.PublicKey, kid, "", extra)
	}
	ecPub := func(kid, alg string, extra map[string]any) map[string]any {
		return jwkJSON(t, &k.EC.PublicKey, kid, alg, extra)
	}
	set := func(keys ...map[string]any) []byte { return jwksJSON(t, keys...) }
	offCurve := ecPub("bad-point", "", nil)
	y := []byte(offCurve["y"].(string))
	if y[0] == 'A' {
		y[0] = 'B'
	} else {
		y[0] = 'A'
	}
	offCurve["y"] = string(y)

	for _, tc := range []struct {
		name string
		data []byte
		want []string // substrings of the error
	}{
		{"RSA private key", set(jwkJSON(t, k.RSA, "priv-rsa", "", nil)), []string{`"priv-rsa"`, "private"}},
		{"EC private key", set(pub("ok", nil), jwkJSON(t, k.EC, "priv-ec", "", nil)), []string{"key 1", `"priv-ec"`, "private"}},
		{"lone p member", set(pub("p-only", map[string]any{"p": "AQAB"})), []string{`"p-only"`, "private", `"p"`}},
		{"lone dq member", set(pub("dq-only", map[string]any{"dq": "AQAB"})), []string{"private", `"dq"`}},
		{"oth member", set(pub("oth", map[string]any{"oth": []any{}})), []string{"private", `"oth"`}},
		{"oct key", set(map[string]any{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}), []string{`"hmac"`, "private"}},
		{"oct key without k", set(map[string]any{"kty": "oct", "kid": "hmac"}), []string{"symmetric"}},
		{"RSA 1024 bits", set(jwkJSON(t, fakeRSAKey(t, 1024, 65537), "small", "", nil)), []string{"1024 bits"}},
		{"RSA 2047 bits", set(jwkJSON(t, fakeRSAKey(t, 2047, 65537), "small", "", nil)), []string{"2047 bits"}},
		{"RSA 8193 bits", set(jwkJSON(t, fakeRSAKey(t, 8193, 65537), "huge", "", nil)), []string{"8193 bits"}},
		{"RSA 16384 bits", set(jwkJSON(t, fakeRSAKey(t, 16384, 65537), "huge", "", nil)), []string{"16384 bits"}},
		{"exponent 1", set(pub("e1", map[string]any{"e": "AQ"})), []string{"exponent 1 "}},
		{"exponent 3", set(pub("e3", map[string]any{"e": "Aw"})), []string{"exponent 3 "}},
		{"exponent even", set(pub("even", map[string]any{"e": "AQAA"})), []string{"exponent 65536 "}},
		{"exponent 2^31+1", set(pub("big-e", map[string]any{"e": "gAAAAQ"})), []string{"exponent 2147483649 "}},
		{"exponent 9 bytes", set(pub("huge-e", map[string]any{"e": "AQAAAAAAAAAB"})), []string{"exponent is too large"}},
		{"exponent missing", set(pub("no-e", map[string]any{"e": nil})), []string{"exponent"}},
		{"modulus not base64url", set(pub("bad-n", map[string]any{"n": "n+/="})), []string{"modulus"}},
		{"P-384", set(jwkJSON(t, &p384.PublicKey, "p384", "", nil)), []string{`"P-384"`}},
		{"P-521", set(jwkJSON(t, &p521.PublicKey, "p521", "", nil)), []string{`"P-521"`}},
		{"secp256k1", set(ecPub("k1", "", map[string]any{"crv": "secp256k1"})), []string{`"secp256k1"`}},
		{"point off the curve", set(offCurve), []string{`"bad-point"`}},
		{"OKP", set(map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}), []string{`"OKP"`}},
		{"no kty", set(map[string]any{"kid": "x", "n": "AQAB"}), []string{"kty"}},
		{"use enc", set(pub("enc", map[string]any{"use": "enc"})), []string{`"enc"`}},
		{"use empty", set(pub("empty-use", map[string]any{"use": ""})), []string{"use"}},
		{"key_ops sign only", set(pub("ops", map[string]any{"key_ops": []string{"sign"}})), []string{"verify"}},
		{"alg HS256 on RSA", set(jwkJSON(t, &k.RSA.PublicKey, "hs", "HS256", nil)), []string{`"HS256"`}},
		{"alg RSA-OAEP", set(jwkJSON(t, &k.RSA.PublicKey, "oaep", "RSA-OAEP", nil)), []string{`"RSA-OAEP"`}},
		{"alg ES256 on RSA", set(jwkJSON(t, &k.RSA.PublicKey, "mix", ES256, nil)), []string{`"ES256"`}},
		{"alg RS256 on EC", set(ecPub("mix", RS256, nil)), []string{`"RS256"`}},
		{"alg none", set(ecPub("none", "none", nil)), []string{`"none"`}},
		{"duplicate kid", set(pub("same", nil), ecPub("same", "", nil)), []string{"key 1", "not unique"}},
		{"missing kid", set(pub("", nil)), []string{"no kid"}},
		{"empty kid", set(pub("", map[string]any{"kid": ""})), []string{"no kid"}},
		{"kid not a string", set(pub("", map[string]any{"kid": 7})), []string{"key 0"}},
		{"empty set", []byte(`{"keys":[]}`), []string{"no keys"}},
		{"no keys member", []byte(`{"kty":"RSA"}`), []string{`"keys"`}},
		{"not JSON", []byte(`-----BEGIN PUBLIC KEY-----`), []string{"parsing key set"}},
		{"duplicate keys member", []byte(`{"keys":[],"keys":[]}`), []string{"parsing key set"}},
		{"duplicate member in a key", []byte(`{"keys":[{"kty":"EC","kty":"EC","kid":"d","crv":"P-256"}]}`), []string{"duplicate"}},
		{"too large", []byte(`{"keys":[],"x":"` + strings.Repeat("a", MaxKeySetSize) + `"}`), []string{"larger"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseKeySet(tc.data)
			if err == nil {
				t.Fatalf("ParseKeySet(%s) = set of %v, want an error", tc.name, s.KeyIDs())
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("ParseKeySet(%s) = %q, want it to contain %q", tc.name, err, want)
				}
			}
		})
	}
}

// TestParseKeySetNoKeyMaterial: an error about a private key never repeats its members.
func TestParseKeySetNoKeyMaterial(t *testing.T) {
	k := keys(t)
	m := jwkJSON(t, k.RSA, "priv", "", nil)
	_, err := ParseKeySet(jwksJSON(t, m))
	if err == nil {
		t.Fatal("ParseKeySet(private key) = nil, want an error")
	}
	for _, member := range []string{"d", "p", "q", "n"} {
		v := m[member].(string)
		if strings.Contains(err.Error(), v[:16]) {
			t.Errorf("ParseKeySet(private key) error contains member %q", member)
		}
	}
}

func TestKeySetKey(t *testing.T) {
	s := standardSet(t)
	for _, tc := range []struct {
		kid, wantType, wantAlg string
		want                   problem.Code
	}{
		{kid: "rsa-1", wantType: "RSA"},
		{kid: "rsa-rs", wantType: "RSA", wantAlg: RS256},
		{kid: "ec-es", wantType: "EC", wantAlg: ES256},
		{kid: "nope", want: problem.CodeKeyUnknown},
		{kid: "", want: problem.CodeKeyUnknown},
		{kid: "RSA-1", want: problem.CodeKeyUnknown},
	} {
		t.Run(tc.kid, func(t *testing.T) {
			key, err := s.Key(context.Background(), tc.kid)
			if got := CodeOf(err); got != tc.want {
				t.Fatalf("Key(%q) code = %q, want %q", tc.kid, got, tc.want)
			}
			if tc.want != "" {
				if err.Error() != string(tc.want)+": no key with the token's kid in the partner's key set" {
					t.Errorf("Key(%q) = %q, want the fixed detail", tc.kid, err)
				}
				return
			}
			if key.Type() != tc.wantType || key.alg != tc.wantAlg || key.KeyID() != tc.kid {
				t.Errorf("Key(%q) = %s %q %q, want %s %q", tc.kid, key.Type(), key.alg, key.KeyID(), tc.wantType, tc.wantAlg)
			}
		})
	}
	var nilSet *KeySet
	if _, err := nilSet.Key(context.Background(), "rsa-1"); CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("(*KeySet)(nil).Key() = %v, want %q", err, problem.CodeKeysUnavailable)
	}
}

func TestLoadKeySetFile(t *testing.T) {
	k := keys(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(good, jwksJSON(t, jwkJSON(t, &k.EC.PublicKey, "ec", "", nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "private.json")
	if err := os.WriteFile(bad, jwksJSON(t, jwkJSON(t, k.EC, "leaked", "", nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadKeySetFile(good); err != nil || s.Len() != 1 {
		t.Errorf("LoadKeySetFile(good) = %v, %v, want one key", s, err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"private", bad, `"leaked"`},
		{"missing", filepath.Join(dir, "nope.json"), "reading key set"},
	} {
		if _, err := LoadKeySetFile(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadKeySetFile(%s) = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestParseKeySetDocumentedLimits: SECURITY.md, "Key sets": at most 64 keys per set; a
// kid of at most 256 bytes (bytes, not characters: a multi-byte kid counts its UTF-8
// length); an RSA modulus that is odd (an even one is no product of two odd primes).
func TestParseKeySetDocumentedLimits(t *testing.T) {
	if MaxKeys != 64 || MaxKeyIDLength != 256 {
		t.Fatalf("MaxKeys, MaxKeyIDLength = %d, %d, want the documented 64, 256", MaxKeys, MaxKeyIDLength)
	}
	k := keys(t)
	ecKeys := func(n int) []map[string]any {
		ks := make([]map[string]any, n)
		for i := range ks {
			ks[i] = jwkJSON(t, &k.EC.PublicKey, fmt.Sprintf("ec-%02d", i), "", nil)
		}
		return ks
	}
	evenN := fakeRSAKey(t, 2048, 65537)
	evenN.N.SetBit(evenN.N, 0, 0)
	ecWithKid := func(kid string) map[string]any { return jwkJSON(t, &k.EC.PublicKey, kid, "", nil) }

	for _, tc := range []struct {
		name    string
		keys    []map[string]any
		wantErr string // "" for a set that loads
	}{
		{"64 keys", ecKeys(64), ""},
		{"65 keys", ecKeys(65), "65 keys, more than 64"},
		{"kid of 256 bytes", []map[string]any{ecWithKid(strings.Repeat("k", 256))}, ""},
		{"kid of 257 bytes", []map[string]any{ecWithKid(strings.Repeat("k", 257))}, "kid is longer than 256 bytes"},
		{"kid of 128 two-byte characters, 256 bytes", []map[string]any{ecWithKid(strings.Repeat("é", 128))}, ""},
		{"kid of 129 two-byte characters, 258 bytes", []map[string]any{ecWithKid(strings.Repeat("é", 129))}, "kid is longer than 256 bytes"},
		{"odd modulus", []map[string]any{jwkJSON(t, fakeRSAKey(t, 2048, 65537), "odd", "", nil)}, ""},
		{"even modulus", []map[string]any{jwkJSON(t, evenN, "even", "", nil)}, "RSA modulus is even"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseKeySet(jwksJSON(t, tc.keys...))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ParseKeySet(%s) = %v, want a set", tc.name, err)
			case tc.wantErr == "" && s.Len() != len(tc.keys):
				t.Errorf("ParseKeySet(%s).Len() = %d, want %d", tc.name, s.Len(), len(tc.keys))
			case tc.wantErr != "" && err == nil:
				t.Fatalf("ParseKeySet(%s) = set of %d keys, want an error %q", tc.name, s.Len(), tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("ParseKeySet(%s) = %q, want it to contain %q", tc.name, err, tc.wantErr)
			}
		})
	}
}
