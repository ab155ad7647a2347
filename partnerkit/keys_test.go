package partnerkit

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/linktoken"
)

func TestGenerateKeyFitsAlgorithm(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			key := keyFor(t, alg)
			if err := checkKeyForAlg(key.Public(), alg); err != nil {
				t.Errorf("checkKeyForAlg(GenerateKey(%q)) = %v, want nil", alg, err)
			}
		})
	}
	if _, err := GenerateKey("HS256", 0); err == nil {
		t.Error(`GenerateKey("HS256") = nil error, want a refusal`)
	}
	if _, err := GenerateKey("RS256", 1024); err == nil {
		t.Error(`GenerateKey("RS256", 1024) = nil error, want a refusal`)
	}
}

func TestCheckKeyForAlg(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  any
		alg  string
		want string // substring of the error; "" for none
	}{
		{"rsa RS256", keyFor(t, "RS256").Public(), "RS256", ""},
		{"rsa PS256", keyFor(t, "RS256").Public(), "PS256", ""},
		{"rsa ES256", keyFor(t, "RS256").Public(), "ES256", "RSA key cannot sign ES256"},
		{"ec RS256", keyFor(t, "ES256").Public(), "RS256", "EC key cannot sign RS256"},
		{"ec HS256", keyFor(t, "ES256").Public(), "HS256", "not accepted"},
		{"rsa none", keyFor(t, "RS256").Public(), "none", "not accepted"},
		{"rsa 1024", small.Public(), "RS256", "1024 bits"},
		{"ec P-384", p384.Public(), "ES256", "P-384"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkKeyForAlg(tt.key, tt.alg)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("checkKeyForAlg(%s) = %v, want %q", tt.name, err, tt.want)
			}
		})
	}
}

func TestPrivateKeyPEMRoundTrip(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			key := keyFor(t, alg)
			pemBytes, err := MarshalPrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(pemBytes), "-----BEGIN PRIVATE KEY-----") {
				t.Errorf("MarshalPrivateKey = %.30q, want a PKCS#8 block", pemBytes)
			}
			back, err := ParsePrivateKey(pemBytes)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(key.Public()) {
				t.Error("ParsePrivateKey(MarshalPrivateKey(k)) is another key")
			}
			if _, err := ParsePublicKey(pemBytes); err == nil || !strings.Contains(err.Error(), "private key") {
				t.Errorf("ParsePublicKey(private PEM) = %v, want a refusal naming the private key", err)
			}
			pub, err := MarshalPublicKey(key.Public())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ParsePrivateKey(pub); err == nil {
				t.Error("ParsePrivateKey(public PEM) = nil error, want a refusal")
			}
		})
	}
}

func entry(t *testing.T, alg, kid string) PublicKey {
	return PublicKey{KeyID: kid, Algorithm: alg, Key: keyFor(t, alg).Public()}
}

func TestJWKSHasWhatTheGatewayChecks(t *testing.T) {
	doc, err := MarshalJWKS(entry(t, "PS256", "a"), entry(t, "ES256", "b"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Keys) != 2 {
		t.Fatalf("MarshalJWKS: %d keys, want 2", len(raw.Keys))
	}
	for i, want := range []map[string]string{{"kid": "a", "alg": "PS256", "kty": "RSA"}, {"kid": "b", "alg": "ES256", "kty": "EC", "crv": "P-256"}} {
		for name, v := range want {
			if raw.Keys[i][name] != v {
				t.Errorf("key %d member %s = %v, want %q", i, name, raw.Keys[i][name], v)
			}
		}
		if raw.Keys[i]["use"] != "sig" {
			t.Errorf("key %d use = %v, want sig", i, raw.Keys[i]["use"])
		}
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
			if _, ok := raw.Keys[i][private]; ok {
				t.Errorf("key %d has private member %q", i, private)
			}
		}
	}
	set, err := linktoken.ParseKeySet(doc)
	if err != nil {
		t.Fatalf("linktoken.ParseKeySet(MarshalJWKS) = %v, want the gateway to accept it", err)
	}
	if got := strings.Join(set.KeyIDs(), ","); got != "a,b" {
		t.Errorf("gateway sees kids %q, want a,b", got)
	}
}

func TestRotation(t *testing.T) {
	doc, err := MarshalJWKS(entry(t, "RS256", "old"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddKey(doc, entry(t, "ES256", "old")); err == nil {
		t.Error("AddKey(duplicate kid) = nil error, want a refusal")
	}
	both, err := AddKey(doc, entry(t, "ES256", "new"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ParseJWKS(both)
	if err != nil || len(keys) != 2 || keys[0].KeyID != "old" || keys[1].KeyID != "new" {
		t.Fatalf("after AddKey: %v, %v, want old then new", keys, err)
	}
	if _, err := RemoveKey(both, "nope"); err == nil {
		t.Error("RemoveKey(unknown kid) = nil error, want a refusal")
	}
	onlyNew, err := RemoveKey(both, "old")
	if err != nil {
		t.Fatal(err)
	}
	keys, _ = ParseJWKS(onlyNew)
	if len(keys) != 1 || keys[0].KeyID != "new" || keys[0].Algorithm != "ES256" {
		t.Errorf("after RemoveKey: %+v, want only new (ES256)", keys)
	}
	if _, err := RemoveKey(onlyNew, "new"); err == nil || !strings.Contains(err.Error(), "last key") {
		t.Errorf("RemoveKey(last key) = %v, want a refusal", err)
	}
}

func TestKeySetRefusesPrivateMaterial(t *testing.T) {
	// A private JWK (with "d") marshalled by jwx, as a partner might paste by mistake.
	priv := `{"keys":[{"kty":"EC","crv":"P-256","kid":"x","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}]}`
	for name, f := range map[string]func() error{
		"ParseJWKS": func() error { _, err := ParseJWKS([]byte(priv)); return err },
		"AddKey":    func() error { _, err := AddKey([]byte(priv), entry(t, "ES256", "y")); return err },
		"WriteJWKS": func() error { return WriteJWKS(filepath.Join(t.TempDir(), "jwks.json"), []byte(priv)) },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), "private key material") {
			t.Errorf("%s(private set) = %v, want a refusal naming private key material", name, err)
		}
	}
}

func TestWriteFileModes(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "private.pem")
	if err := WritePrivateKey(keyPath, keyFor(t, "ES256"), false); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivateKey(keyPath, keyFor(t, "ES256"), false); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("WritePrivateKey(existing, no overwrite) = %v, want a refusal", err)
	}
	if err := WritePrivateKey(keyPath, keyFor(t, "ES256"), true); err != nil {
		t.Errorf("WritePrivateKey(existing, overwrite) = %v", err)
	}
	doc, _ := MarshalJWKS(entry(t, "ES256", "k"))
	jwksPath := filepath.Join(dir, "jwks.json")
	if err := WriteJWKS(jwksPath, doc); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{keyPath: 0o600, jwksPath: 0o644} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("mode of %s = %v, want %v", filepath.Base(path), fi.Mode().Perm(), want)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestThumbprintAndFindKey(t *testing.T) {
	a, err := Thumbprint(keyFor(t, "ES256").Public())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Thumbprint(keyFor(t, "ES256").Public())
	c, _ := Thumbprint(keyFor(t, "RS256").Public())
	if a != b || a == c || len(a) != 43 {
		t.Errorf("Thumbprint = %q, %q, %q: want equal for one key, different for another, 43 characters", a, b, c)
	}
	keys := []PublicKey{entry(t, "RS256", "r"), entry(t, "ES256", "e")}
	if k, ok := FindKey(keys, keyFor(t, "ES256").Public()); !ok || k.KeyID != "e" {
		t.Errorf("FindKey(ES256 key) = %q, %v, want e", k.KeyID, ok)
	}
	if _, ok := FindKey(keys, keyFor(t, "PS256").Public()); ok {
		t.Error("FindKey(unpublished key) found one")
	}
}
