package harness

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwk"
)

// Key is a partner's signing key pair.
type Key struct {
	// Kid is the key id published in the key set and put in token headers.
	Kid string
	// Alg is the algorithm the key signs with (RS256, PS256 or ES256), published as the
	// key's alg member unless NoAlg is set.
	Alg string
	// NoAlg leaves the alg member out of the published key.
	NoAlg bool
	// Private is the private key.
	Private crypto.Signer
}

// NewKey generates a key for alg: RSA 2048 bits for RS256 and PS256, P-256 for ES256.
func NewKey(t testing.TB, alg, kid string) *Key {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case "RS256", "PS256":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("NewKey(%q): want RS256, PS256 or ES256", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Kid: kid, Alg: alg, Private: priv}
}

// PublicJWK returns the key's public JWK as a JSON object (kid, alg unless NoAlg, use sig).
func (k *Key) PublicJWK(t testing.TB) map[string]any {
	t.Helper()
	pub, err := jwk.FromRaw(k.Private.Public())
	if err != nil {
		t.Fatal(err)
	}
	_ = pub.Set(jwk.KeyIDKey, k.Kid)
	_ = pub.Set(jwk.KeyUsageKey, "sig")
	if !k.NoAlg {
		_ = pub.Set(jwk.AlgorithmKey, k.Alg)
	}
	b, err := json.Marshal(pub)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// PrivateJWK returns the key's private JWK as a JSON object, for tests that check a key set
// with private members is refused.
func (k *Key) PrivateJWK(t testing.TB) map[string]any {
	t.Helper()
	priv, err := jwk.FromRaw(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	_ = priv.Set(jwk.KeyIDKey, k.Kid)
	_ = priv.Set(jwk.AlgorithmKey, k.Alg)
	b, err := json.Marshal(priv)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// JWKS returns a jwks.json document holding the public keys.
func JWKS(t testing.TB, keys ...*Key) []byte {
	t.Helper()
	set := make([]map[string]any, 0, len(keys))
	for _, k := range keys {
		set = append(set, k.PublicJWK(t))
	}
	b, err := json.MarshalIndent(map[string]any{"keys": set}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// WriteJWKS writes JWKS(keys) to dir/jwks.json and returns its path.
func WriteJWKS(t testing.TB, dir string, keys ...*Key) string {
	t.Helper()
	path := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(path, JWKS(t, keys...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// JWKSServer serves a key set at /jwks.json on 127.0.0.1 (plain HTTP on loopback, which
// jwks_url allows), with switchable content, a down switch and a fetch counter.
type JWKSServer struct {
	*httptest.Server

	mu           sync.Mutex
	body         []byte
	cacheControl string
	down         bool
	fetches      atomic.Int64
}

// NewJWKSServer serves JWKS(keys), closed in t.Cleanup.
func NewJWKSServer(t testing.TB, keys ...*Key) *JWKSServer {
	t.Helper()
	s := &JWKSServer{body: JWKS(t, keys...)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		body, cc, down := s.body, s.cacheControl, s.down
		s.mu.Unlock()
		if down {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path != "/jwks.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// JWKSURL returns the key set's URL.
func (s *JWKSServer) JWKSURL() string { return s.URL + "/jwks.json" }

// SetKeys makes the server publish keys from now on.
func (s *JWKSServer) SetKeys(t testing.TB, keys ...*Key) { s.SetBody(JWKS(t, keys...)) }

// SetBody makes the server answer body from now on.
func (s *JWKSServer) SetBody(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
}

// SetCacheControl sets the Cache-Control header of later answers ("" for none).
func (s *JWKSServer) SetCacheControl(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cacheControl = v
}

// SetDown makes the server answer 503 (true) or the key set (false).
func (s *JWKSServer) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Fetches returns how many requests the server has answered.
func (s *JWKSServer) Fetches() int64 { return s.fetches.Load() }
