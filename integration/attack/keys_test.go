package attack

// Key sets shaped to hurt: a modulus so large that every verification costs a second of
// CPU, exponents that make RSA trivial to forge (e = 1) or slow, private keys published by
// mistake. The loader must refuse each, at config time for jwks_file (caddy validate and
// caddy run fail with a message naming the key), and at fetch time for jwks_url (the last
// good set stays in use; with none, requests get 503 keys_unavailable).

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/partnergate/partnergate/internal/harness"
)

// badKey is one DoS-shaped or secret-leaking key.
type badKey struct {
	name string
	jwk  func(t *testing.T) map[string]any
	// want is a fragment the refusal message must carry, besides the kid.
	want string
}

// b64Int is a big-endian unsigned integer in base64url, as JWK writes n and e.
func b64Int(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.Bytes()) }

// oddModulus returns a random odd number of exactly bits bits: not a product of two
// primes, which no loader can tell cheaply, but what a DoS set needs to be.
func oddModulus(t *testing.T, bits int) *big.Int {
	t.Helper()
	r, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
	if err != nil {
		t.Fatal(err)
	}
	n := new(big.Int).SetBit(r, bits-1, 1)
	return n.SetBit(n, 0, 1)
}

// rsaJWK returns a public RSA JWK with kid "dos" and the given n and e.
func rsaJWK(n *big.Int, e *big.Int) map[string]any {
	return map[string]any{"kty": "RSA", "kid": "dos", "alg": "RS256", "use": "sig", "n": b64Int(n), "e": b64Int(e)}
}

// e1Key is an RSA key with a real 2048-bit modulus and exponent 1: with e = 1 a signature
// is the padded digest itself, so anyone can forge one. Its kid is "dos".
var e1Key struct {
	priv *rsa.PrivateKey
}

func badKeys(t *testing.T) []badKey {
	t.Helper()
	if e1Key.priv == nil {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		e1Key.priv = k
	}
	realN := e1Key.priv.N
	exp := func(e *big.Int) func(*testing.T) map[string]any {
		return func(*testing.T) map[string]any { return rsaJWK(realN, e) }
	}
	pow2plus1 := func(k uint) *big.Int {
		return new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), k), big.NewInt(1))
	}
	return []badKey{
		{"rsa 8193-bit modulus", func(t *testing.T) map[string]any { return rsaJWK(oddModulus(t, 8193), big.NewInt(65537)) }, "8193 bits"},
		{"rsa 16384-bit modulus", func(t *testing.T) map[string]any { return rsaJWK(oddModulus(t, 16384), big.NewInt(65537)) }, "16384 bits"},
		{"rsa 1024-bit modulus", func(t *testing.T) map[string]any { return rsaJWK(oddModulus(t, 1024), big.NewInt(65537)) }, "1024 bits"},
		{"rsa exponent 1", exp(big.NewInt(1)), "exponent"},
		{"rsa exponent 3", exp(big.NewInt(3)), "exponent"},
		{"rsa exponent even", exp(big.NewInt(65536)), "exponent"},
		{"rsa exponent 2^31+1", exp(pow2plus1(31)), "exponent"},
		{"rsa exponent 2^64+1", exp(pow2plus1(64)), "exponent"},
		{"rsa exponent 2^4096+1", exp(pow2plus1(4096)), "exponent"},
		{"rsa private key", func(t *testing.T) map[string]any {
			k := harness.NewKey(t, "RS256", "dos")
			return k.PrivateJWK(t)
		}, "private"},
		{"ec private key", func(t *testing.T) map[string]any {
			k := harness.NewKey(t, "ES256", "dos")
			return k.PrivateJWK(t)
		}, "private"},
		{"symmetric oct key", func(*testing.T) map[string]any {
			return map[string]any{"kty": "oct", "kid": "dos", "alg": "HS256", "k": base64.RawURLEncoding.EncodeToString([]byte("partner-public-key-as-secret"))}
		}, "symmetric"},
		{"ec P-384 key", func(t *testing.T) map[string]any {
			priv, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			jk, err := jwk.FromRaw(priv.Public())
			if err != nil {
				t.Fatal(err)
			}
			_ = jk.Set(jwk.KeyIDKey, "dos")
			var m map[string]any
			if err := json.Unmarshal(mustJSON(t, jk), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}, "P-384"},
		{"use enc", func(t *testing.T) map[string]any {
			m := harness.NewKey(t, "RS256", "dos").PublicJWK(t)
			m["use"] = "enc"
			return m
		}, "use"},
	}
}

// jwksOf wraps keys in a jwks.json document.
func jwksOf(t *testing.T, keys ...map[string]any) []byte {
	t.Helper()
	return mustJSON(t, map[string]any{"keys": keys})
}

// keyFileCaddyfile is a gateway whose acme keys are the file {{.Vars.jwks}}.
var keyFileCaddyfile = harness.Gateway{AdminOff: true, Next: `respond "upstream" 200`,
	Partners: []string{acmeFileBlock}}.Caddyfile()

// TestKeyFileRefusesDoSKeys: a jwks_file holding any bad key makes caddy validate fail,
// with a message naming the key and the reason.
func TestKeyFileRefusesDoSKeys(t *testing.T) {
	good := harness.NewKey(t, "RS256", "good").PublicJWK(t)
	for _, bk := range badKeys(t) {
		t.Run(bk.name, func(t *testing.T) {
			dir := t.TempDir()
			jwksPath := filepath.Join(dir, "jwks.json")
			// The bad key next to a good one: one bad key refuses the whole set.
			if err := os.WriteFile(jwksPath, jwksOf(t, good, bk.jwk(t)), 0o644); err != nil {
				t.Fatal(err)
			}
			text, _, _ := harness.Render(t, harness.Config{Caddyfile: keyFileCaddyfile, Vars: map[string]string{"jwks": jwksPath}, Dir: dir})
			cf := filepath.Join(dir, "Caddyfile")
			if err := os.WriteFile(cf, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := harness.RunCaddy(t, dir, "validate", "--config", cf, "--adapter", "caddyfile")
			if err == nil {
				t.Fatalf("caddy validate with a %s succeeded, want failure; output:\n%s", bk.name, out)
			}
			// The message is in a JSON log line: undo its escaping of quotes.
			msg := strings.ReplaceAll(out, `\"`, `"`)
			for _, want := range []string{`kid "dos"`, bk.want} {
				if !strings.Contains(msg, want) {
					t.Errorf("caddy validate output lacks %q:\n%s", want, lastLines(out, 5))
				}
			}
		})
	}
}

// TestKeyFileRefusedByRun: caddy run refuses to start on a key set with a private key, and
// says why.
func TestKeyFileRefusedByRun(t *testing.T) {
	dir := t.TempDir()
	jwksPath := filepath.Join(dir, "jwks.json")
	priv := harness.NewKey(t, "ES256", "dos").PrivateJWK(t)
	if err := os.WriteFile(jwksPath, jwksOf(t, priv), 0o644); err != nil {
		t.Fatal(err)
	}
	text, _, _ := harness.Render(t, harness.Config{Caddyfile: keyFileCaddyfile, Vars: map[string]string{"jwks": jwksPath}, Dir: dir})
	cf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// caddy run returns at once when the config does not load; a run that keeps going
	// is killed by RunCaddy's 60s bound and reported below.
	out, err := harness.RunCaddy(t, dir, "run", "--config", cf, "--adapter", "caddyfile")
	if err == nil || !strings.Contains(out, "private key material") {
		t.Fatalf("caddy run on a private key set: err %v, want an exit naming private key material; output:\n%s", err, lastLines(out, 8))
	}
}

// keyURLCaddyfile is a gateway whose acme keys are fetched from {{.Vars.jwks_url}}.
var keyURLCaddyfile = harness.Gateway{AdminOff: true, Partners: []string{harness.PartnerBlock("acme",
	"jwks_url {{.Vars.jwks_url}}", "refresh_cooldown 1s", "issuer https://acme.example", "audience svc-link")}}.Caddyfile()

// urlGateway starts a gateway whose acme keys come from srv.
func urlGateway(t *testing.T, srv *harness.JWKSServer, up *harness.Upstream) *harness.Caddy {
	t.Helper()
	return harness.StartCaddy(t, harness.Config{
		Caddyfile: keyURLCaddyfile,
		Vars:      map[string]string{"jwks_url": srv.JWKSURL(), "upstream": up.Addr()},
	})
}

// acmeToken mints a valid acme token with sign under kid.
func acmeToken(t *testing.T, alg, kid string, sign signer) string {
	t.Helper()
	c := claimsFor(t, partner{issuer: "https://acme.example", audience: "svc-link"}, time.Now())
	return compact(t, mustJSON(t, header(alg, kid)), mustJSON(t, c), sign)
}

// answer posts tok to acme's /url and returns the status and problem code.
func answer(t *testing.T, c *harness.Caddy, tok string) (int, string) {
	t.Helper()
	res := c.PostURL(t, "acme", tok)
	r := &response{status: res.StatusCode, header: res.Header, body: string(res.Body)}
	if res.StatusCode == http.StatusOK {
		return res.StatusCode, ""
	}
	return res.StatusCode, problemCode(t, r)
}

// eventually polls f every 100ms until it reports true or 30s pass. It is a liveness
// bound for background fetches, not a timing assertion.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// forgeE1 forges an RS256 signature for a key with exponent 1: the signature is the
// EMSA-PKCS1-v1_5 encoding of the digest (RFC 8017 §9.2), since s^1 = s.
func forgeE1(n *big.Int) signer {
	return func(t testing.TB, input []byte) []byte {
		prefix := []byte{0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20}
		k := (n.BitLen() + 7) / 8
		em := make([]byte, k)
		em[1] = 1
		tail := append(prefix, digest(crypto.SHA256, input)...)
		for i := 2; i < k-len(tail)-1; i++ {
			em[i] = 0xff
		}
		copy(em[k-len(tail):], tail)
		return em
	}
}

// TestKeyURLKeepsLastGoodSet: a jwks_url that starts serving a bad set leaves the gateway
// on the last good set, and no key of the bad set is ever used.
func TestKeyURLKeepsLastGoodSet(t *testing.T) {
	good := harness.NewKey(t, "RS256", "good")
	srv := harness.NewJWKSServer(t, good)
	up := harness.NewUpstream(t)
	c := urlGateway(t, srv, up)

	goodSign := signRS256(good.Private.(*rsa.PrivateKey))
	eventually(t, "the first key set loading", func() bool {
		st, _ := answer(t, c, acmeToken(t, "RS256", "good", goodSign))
		return st == http.StatusOK
	})

	for _, bk := range badKeys(t) {
		t.Run(bk.name, func(t *testing.T) {
			doc := bk.jwk(t)
			srv.SetBody(jwksOf(t, doc))
			// An unknown kid makes the gateway refetch (once per 1s cooldown); wait
			// until the bad set has been fetched.
			before := srv.Fetches()
			eventually(t, "a refetch of the bad set", func() bool {
				_, _ = answer(t, c, acmeToken(t, "RS256", "unknown-"+newNonce(t)[:8], goodSign))
				return srv.Fetches() > before
			})

			if st, code := answer(t, c, acmeToken(t, "RS256", "good", goodSign)); st != http.StatusOK {
				t.Errorf("token of the last good set after a %s was served: %d %s, want 200 accepted", bk.name, st, code)
			}
			// The bad set's key must not be usable: with e = 1 a forgery needs no
			// private key, and a published private key signs anything.
			var forged string
			switch {
			case bk.name == "rsa exponent 1":
				forged = acmeToken(t, "RS256", "dos", forgeE1(e1Key.priv.N))
			case bk.name == "rsa private key":
				forged = acmeToken(t, "RS256", "dos", constSig(nil))
				forged = forged[:strings.LastIndexByte(forged, '.')]
				forged += "." + b64(mustSignRSAJWK(t, doc, []byte(forged)))
			}
			if forged != "" {
				before := len(up.Requests())
				// Refused as the gateway refuses any kid missing from the last good set
				// while the set last fetched is refused: 503, with the refusal's reason.
				st, code := answer(t, c, forged)
				if st != http.StatusServiceUnavailable || code != codeKeysUnavailable {
					t.Errorf("token signed for the refused key: %d %s, want 503 %s", st, code, codeKeysUnavailable)
				}
				if n := len(up.Requests()) - before; n != 0 {
					t.Errorf("the upstream received %d requests for a token of a refused key, want 0", n)
				}
			}
			srv.SetKeys(t, good)
		})
	}
	if logs := c.Logs(); !strings.Contains(logs, "private key material") {
		t.Errorf("caddy's log does not say a fetched set held private key material:\n%s", lastLines(logs, 20))
	}
}

// mustSignRSAJWK signs input with RS256 using the private RSA JWK doc.
func mustSignRSAJWK(t *testing.T, doc map[string]any, input []byte) []byte {
	t.Helper()
	jk, err := jwk.ParseKey(mustJSON(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	var priv rsa.PrivateKey
	if err := jk.Raw(&priv); err != nil {
		t.Fatal(err)
	}
	return signRS256(&priv)(t, input)
}

// TestKeyURLOnlyBadSet: a gateway whose jwks_url has never served a good set answers 503
// keys_unavailable with Retry-After, and forwards nothing.
func TestKeyURLOnlyBadSet(t *testing.T) {
	for _, bk := range badKeys(t) {
		// A modulus too large, a forgeable exponent and a published private key: if
		// the gateway adopted either of the last two, the token below would pass.
		if bk.name != "rsa 16384-bit modulus" && bk.name != "rsa exponent 1" && bk.name != "rsa private key" {
			continue
		}
		t.Run(bk.name, func(t *testing.T) {
			doc := bk.jwk(t)
			srv := harness.NewJWKSServer(t)
			srv.SetBody(jwksOf(t, doc))
			up := harness.NewUpstream(t)
			c := urlGateway(t, srv, up)
			// A second fetch is the retry after the first failed: the first one's
			// outcome has been taken in by then.
			eventually(t, "the first fetch and its retry", func() bool { return srv.Fetches() >= 2 })
			var tok string
			switch bk.name {
			case "rsa exponent 1":
				tok = acmeToken(t, "RS256", "dos", forgeE1(e1Key.priv.N))
			case "rsa private key":
				tok = acmeToken(t, "RS256", "dos", constSig(nil))
				tok = tok[:strings.LastIndexByte(tok, '.')]
				tok += "." + b64(mustSignRSAJWK(t, doc, []byte(tok)))
			default:
				k := harness.NewKey(t, "RS256", "dos")
				tok = acmeToken(t, "RS256", "dos", signRS256(k.Private.(*rsa.PrivateKey)))
			}
			res := c.PostURL(t, "acme", tok)
			r := &response{status: res.StatusCode, header: res.Header, body: string(res.Body)}
			if got, want := outcome(res.StatusCode, problemCode(t, r)), outcome(http.StatusServiceUnavailable, codeKeysUnavailable); got != want {
				t.Errorf("answer = %s, want %s", got, want)
			}
			if res.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if n := len(up.Requests()); n != 0 {
				t.Errorf("the upstream received %d requests, want 0", n)
			}
		})
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
