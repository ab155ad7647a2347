package partnerkit

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// RSA key sizes. The gateway accepts moduli of 2048 to 8192 bits; 3072 is the default
// because it is NIST's size for security beyond 2030 (SP 800-57) and still signs in about a
// millisecond, while 2048 is only the floor.
const (
	DefaultRSABits = 3072
	MinRSABits     = 2048
	MaxRSABits     = 8192
)

// Algorithms lists the signature algorithms the gateway accepts (docs/interface.md
// A-AUTH-1 to A-AUTH-3), in the order the guide recommends them.
var Algorithms = []string{"RS256", "PS256", "ES256"}

// GenerateKey makes a new private key for alg: RSA of rsaBits bits (0 means DefaultRSABits)
// for RS256 and PS256, ECDSA on P-256 for ES256.
func GenerateKey(alg string, rsaBits int) (crypto.Signer, error) {
	switch alg {
	case "RS256", "PS256":
		if rsaBits == 0 {
			rsaBits = DefaultRSABits
		}
		if rsaBits < MinRSABits || rsaBits > MaxRSABits {
			return nil, fmt.Errorf("RSA key size %d outside %d..%d bits", rsaBits, MinRSABits, MaxRSABits)
		}
		return rsa.GenerateKey(rand.Reader, rsaBits)
	case "ES256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	return nil, errAlgorithm(alg)
}

func errAlgorithm(alg string) error {
	return fmt.Errorf("algorithm %q not accepted: use RS256, PS256 or ES256", alg)
}

// checkKeyForAlg refuses a key the gateway would not accept with alg, so that a partner
// learns it when signing rather than from a rejected link.
func checkKeyForAlg(pub crypto.PublicKey, alg string) error {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if alg != "RS256" && alg != "PS256" {
			if alg == "ES256" {
				return fmt.Errorf("an RSA key cannot sign %s", alg)
			}
			return errAlgorithm(alg)
		}
		if n := k.N.BitLen(); n < MinRSABits || n > MaxRSABits {
			return fmt.Errorf("RSA key of %d bits outside %d..%d bits", n, MinRSABits, MaxRSABits)
		}
	case *ecdsa.PublicKey:
		if alg != "ES256" {
			if alg == "RS256" || alg == "PS256" {
				return fmt.Errorf("an EC key cannot sign %s", alg)
			}
			return errAlgorithm(alg)
		}
		if k.Curve != elliptic.P256() {
			return fmt.Errorf("EC key on %s: ES256 needs P-256", k.Curve.Params().Name)
		}
	default:
		return fmt.Errorf("key type %T not accepted: use RSA or EC P-256", pub)
	}
	return nil
}

// DefaultAlgorithm is the algorithm a key signs with when none is named: RS256 for RSA,
// ES256 for EC.
func DefaultAlgorithm(pub crypto.PublicKey) string {
	switch pub.(type) {
	case *rsa.PublicKey:
		return "RS256"
	case *ecdsa.PublicKey:
		return "ES256"
	}
	return ""
}

// MarshalPrivateKey encodes key as a PKCS#8 PEM block ("PRIVATE KEY"), the form every JWT
// library reads.
func MarshalPrivateKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey reads a PEM private key: PKCS#8 ("PRIVATE KEY"), PKCS#1 ("RSA PRIVATE
// KEY") or SEC 1 ("EC PRIVATE KEY"), RSA or ECDSA.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %v", err)
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("private key type %T not accepted: use RSA or EC P-256", key)
}

// ParsePublicKey reads a PEM public key ("PUBLIC KEY", "RSA PUBLIC KEY" or a certificate).
// A private key is refused: what is published must never carry private material.
func ParsePublicKey(data []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
		return nil, errors.New("this is a private key: give the public key (or pass the private key with --key, and only its public half is used)")
	default:
		return nil, fmt.Errorf("PEM block %q is not a public key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing public key: %v", err)
	}
	switch key.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey:
		return key, nil
	}
	return nil, fmt.Errorf("public key type %T not accepted: use RSA or EC P-256", key)
}

// MarshalPublicKey encodes pub as a PKIX PEM block ("PUBLIC KEY").
func MarshalPublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// PublicKey is one entry of a published key set.
type PublicKey struct {
	KeyID     string
	Algorithm string
	Key       crypto.PublicKey
}

// publicJWK converts k into a jwk with kid, alg and use "sig": exactly the members the
// gateway checks (docs/architecture.md, Keys).
func publicJWK(k PublicKey) (jwk.Key, error) {
	if k.KeyID == "" {
		return nil, errors.New("a key needs a kid")
	}
	if err := checkKeyForAlg(k.Key, k.Algorithm); err != nil {
		return nil, err
	}
	key, err := jwk.FromRaw(k.Key)
	if err != nil {
		return nil, fmt.Errorf("encoding key %q: %v", k.KeyID, err)
	}
	for name, v := range map[string]any{jwk.KeyIDKey: k.KeyID, jwk.AlgorithmKey: jwa.SignatureAlgorithm(k.Algorithm), jwk.KeyUsageKey: jwk.ForSignature} {
		if err := key.Set(name, v); err != nil {
			return nil, fmt.Errorf("encoding key %q: %v", k.KeyID, err)
		}
	}
	return key, nil
}

// MarshalJWKS returns a jwks.json document holding keys, in the given order.
func MarshalJWKS(keys ...PublicKey) ([]byte, error) {
	set := jwk.NewSet()
	for _, k := range keys {
		key, err := publicJWK(k)
		if err != nil {
			return nil, err
		}
		if _, dup := set.LookupKeyID(k.KeyID); dup {
			return nil, fmt.Errorf("kid %q given twice", k.KeyID)
		}
		if err := set.AddKey(key); err != nil {
			return nil, err
		}
	}
	return marshalSet(set)
}

func marshalSet(set jwk.Set) ([]byte, error) {
	b, err := json.MarshalIndent(set, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding key set: %v", err)
	}
	return append(b, '\n'), nil
}

// parseSet reads a published key set and refuses one with private key material or keys
// without a kid, the two mistakes that must never reach a partner's web server.
func parseSet(data []byte) (jwk.Set, error) {
	set, err := jwk.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("parsing key set: %v", err)
	}
	for i := 0; i < set.Len(); i++ {
		key, _ := set.Key(i)
		private, err := jwk.IsPrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("key %d (kid %q) is symmetric: only RSA and EC public keys belong in a jwks.json", i, key.KeyID())
		}
		if private {
			return nil, fmt.Errorf("key %d (kid %q) holds private key material: remove it and publish only public keys", i, key.KeyID())
		}
		if key.KeyID() == "" {
			return nil, fmt.Errorf("key %d has no kid", i)
		}
	}
	return set, nil
}

// ParseJWKS reads a jwks.json document. It refuses private key material and keys without a
// kid; it does not apply every rule of the gateway (linktoken.ParseKeySet does).
func ParseJWKS(data []byte) ([]PublicKey, error) {
	set, err := parseSet(data)
	if err != nil {
		return nil, err
	}
	keys := make([]PublicKey, 0, set.Len())
	for i := 0; i < set.Len(); i++ {
		key, _ := set.Key(i)
		var raw any
		if err := key.Raw(&raw); err != nil {
			return nil, fmt.Errorf("key %q: %v", key.KeyID(), err)
		}
		alg := ""
		if key.Algorithm() != nil {
			alg = key.Algorithm().String()
		}
		keys = append(keys, PublicKey{KeyID: key.KeyID(), Algorithm: alg, Key: raw})
	}
	return keys, nil
}

// AddKey returns jwks with k added after the keys already there, for the first step of a
// rotation: publish the new key beside the old one before signing with it. Existing keys
// are kept as they are; a kid already present is refused.
func AddKey(jwks []byte, k PublicKey) ([]byte, error) {
	set, err := parseSet(jwks)
	if err != nil {
		return nil, err
	}
	if _, dup := set.LookupKeyID(k.KeyID); dup {
		return nil, fmt.Errorf("kid %q is already in the key set: pick a new kid for a new key", k.KeyID)
	}
	key, err := publicJWK(k)
	if err != nil {
		return nil, err
	}
	if err := set.AddKey(key); err != nil {
		return nil, err
	}
	return marshalSet(set)
}

// RemoveKey returns jwks without the key kid, the last step of a rotation. It refuses to
// remove the last key, since an empty set would reject every link.
func RemoveKey(jwks []byte, kid string) ([]byte, error) {
	set, err := parseSet(jwks)
	if err != nil {
		return nil, err
	}
	key, ok := set.LookupKeyID(kid)
	if !ok {
		return nil, fmt.Errorf("kid %q is not in the key set (it has %v)", kid, kids(set))
	}
	if set.Len() == 1 {
		return nil, fmt.Errorf("kid %q is the last key: add its successor first", kid)
	}
	if err := set.RemoveKey(key); err != nil {
		return nil, err
	}
	return marshalSet(set)
}

func kids(set jwk.Set) []string {
	var out []string
	for i := 0; i < set.Len(); i++ {
		k, _ := set.Key(i)
		out = append(out, k.KeyID())
	}
	sort.Strings(out)
	return out
}

// WritePrivateKey writes key to path as PKCS#8 PEM with mode 0600. An existing file is
// refused unless overwrite is set: a private key is never lost to a mistyped command.
func WritePrivateKey(path string, key crypto.Signer, overwrite bool) error {
	data, err := MarshalPrivateKey(key)
	if err != nil {
		return err
	}
	return writeFile(path, data, 0o600, overwrite)
}

// WriteJWKS writes a key set to path with mode 0644 (it is public), replacing the file
// atomically so a web server serving it never sees half a document.
func WriteJWKS(path string, jwks []byte) error {
	if _, err := parseSet(jwks); err != nil {
		return err
	}
	return writeFile(path, jwks, 0o644, true)
}

// writeFile writes through a temporary file in the same folder and renames it into place,
// so readers see the old or the new content, never a mix; the mode is set explicitly
// because the umask must not widen or narrow it.
func writeFile(path string, data []byte, mode os.FileMode, overwrite bool) error {
	if !overwrite {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s exists: refusing to overwrite it", path)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if !overwrite {
		// Link fails if path appeared meanwhile, which a plain rename would clobber.
		if err := os.Link(tmp.Name(), path); err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%s exists: refusing to overwrite it", path)
			}
			return err
		}
		return nil
	}
	return os.Rename(tmp.Name(), path)
}

// Thumbprint returns the RFC 7638 SHA-256 thumbprint of pub, base64url: a kid that names
// the key itself, for partners with no naming scheme of their own.
func Thumbprint(pub crypto.PublicKey) (string, error) {
	key, err := jwk.FromRaw(pub)
	if err != nil {
		return "", fmt.Errorf("encoding key: %v", err)
	}
	tp, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("computing thumbprint: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// FindKey returns the entry of keys whose public key is pub, so a signer can take its kid
// and alg from the published set instead of from a person's memory.
func FindKey(keys []PublicKey, pub crypto.PublicKey) (PublicKey, bool) {
	eq, ok := pub.(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return PublicKey{}, false
	}
	for _, k := range keys {
		if eq.Equal(k.Key) {
			return k, true
		}
	}
	return PublicKey{}, false
}
