package gateway

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/partnerkit"
)

// refusedSet is a key set the gateway's loader (linktoken.ParseKeySet) refuses, with the
// words of the reason it must give.
type refusedSet struct {
	name   string
	body   []byte
	reason string
}

// refusedSets builds one key set for every refusal reason of linktoken/keys.go, in the
// order the loader checks them: the document, then each key's members, type, size and
// point, then the kids across keys. Two reasons are not reachable from a document and are
// left out: an EC key jwx reads on another curve than the P-256 its crv member names, and
// private material jwx finds under a member name the loader does not list.
func refusedSets(t *testing.T) []refusedSet {
	ec := harness.NewKey(t, "ES256", "acme-ec")
	rs := harness.NewKey(t, "RS256", "acme-rsa")
	pub := func(k *harness.Key, edit func(m map[string]any)) map[string]any {
		m := k.PublicJWK(t)
		if edit != nil {
			edit(m)
		}
		return m
	}
	set := func(keys ...map[string]any) []byte { return []byte(mustJSON(t, map[string]any{"keys": keys})) }
	b64 := base64.RawURLEncoding.EncodeToString
	rsaPub := rs.Private.Public().(*rsa.PublicKey)
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	huge := make([]byte, 1100) // 8800 bits, over the 8192 the loader accepts
	huge[0], huge[len(huge)-1] = 0x80, 1
	even := new(big.Int).SetBit(rsaPub.N, 0, 0)
	many := make([]map[string]any, linktoken.MaxKeys+1)
	for i := range many {
		many[i] = pub(ec, func(m map[string]any) { m["kid"] = fmt.Sprintf("k%d", i) })
	}
	return []refusedSet{
		{"larger than 256 KiB", []byte(`{"keys":[],"pad":"` + strings.Repeat("x", linktoken.MaxKeySetSize) + `"}`), "key set is larger than 262144 bytes"},
		{"not JSON", []byte("<html>not found</html>"), "parsing key set: "},
		{"duplicate member", []byte(`{"keys":[],"keys":[]}`), "parsing key set: "},
		{"a single key, not a set", []byte(mustJSON(t, pub(ec, nil))), `key set has no "keys" member`},
		{"no keys", []byte(`{"keys":[]}`), "key set has no keys"},
		{"too many keys", set(many...), "key set has 65 keys, more than 64"},
		{"key not an object", []byte(`{"keys":[7]}`), "key 0: key is not a JSON object whose kty, kid"},
		{"kid a number", set(pub(ec, func(m map[string]any) { m["kid"] = 7 })), "key 0: key is not a JSON object whose kty, kid"},
		{"EC private key (exportJWK(privateKey))", set(ec.PrivateJWK(t)), `key 0 (kid "acme-ec"): key holds private key material (member "d"): publish only the public key`},
		{"RSA private key after a good key", set(pub(ec, nil), rs.PrivateJWK(t)), `key 1 (kid "acme-rsa"): key holds private key material (member "d")`},
		{"symmetric key value", set(map[string]any{"kty": "oct", "kid": "s", "k": "c2VjcmV0"}), `key 0 (kid "s"): key holds private key material (member "k")`},
		{"no kid", set(pub(ec, func(m map[string]any) { delete(m, "kid") })), "key 0: key has no kid"},
		{"kid too long", set(pub(ec, func(m map[string]any) { m["kid"] = strings.Repeat("k", 257) })), "kid is longer than 256 bytes"},
		{"use enc", set(pub(ec, func(m map[string]any) { m["use"] = "enc" })), `key has use "enc": only signature keys`},
		{"key_ops without verify", set(pub(ec, func(m map[string]any) { m["key_ops"] = []string{"encrypt"} })), `key_ops does not allow "verify"`},
		{"RSA key with alg RS384", set(pub(rs, func(m map[string]any) { m["alg"] = "RS384" })), `RSA key has alg "RS384": only RS256 and PS256 are accepted`},
		{"RSA key without n", set(pub(rs, func(m map[string]any) { delete(m, "n") })), "RSA key has no valid modulus n"},
		{"RSA 1024 bits", set(map[string]any{"kty": "RSA", "kid": "weak", "n": b64(weak.N.Bytes()), "e": "AQAB"}), "RSA modulus has 1024 bits: between 2048 and 8192 are accepted"},
		{"RSA 8800 bits", set(map[string]any{"kty": "RSA", "kid": "huge", "n": b64(huge), "e": "AQAB"}), "RSA modulus has 8800 bits"},
		{"RSA without e", set(pub(rs, func(m map[string]any) { m["e"] = "" })), "RSA key has no valid exponent e"},
		{"RSA exponent of 9 bytes", set(pub(rs, func(m map[string]any) { m["e"] = b64(make([]byte, 9)) })), "RSA exponent is too large"},
		{"RSA exponent 3", set(pub(rs, func(m map[string]any) { m["e"] = "Aw" })), "RSA exponent 3 is not accepted"},
		{"RSA exponent even", set(pub(rs, func(m map[string]any) { m["e"] = b64(big.NewInt(65538).Bytes()) })), "RSA exponent 65538 is not accepted"},
		{"RSA modulus even", set(pub(rs, func(m map[string]any) { m["n"] = b64(even.Bytes()) })), "RSA modulus is even"},
		{"EC key with alg RS256", set(pub(ec, func(m map[string]any) { m["alg"] = "RS256" })), `EC key has alg "RS256": only ES256 is accepted`},
		{"EC key on P-384", set(pub(ec, func(m map[string]any) { m["crv"] = "P-384" })), `EC key on curve "P-384": only P-256 is accepted`},
		{"EC point not on the curve", set(pub(ec, func(m map[string]any) { m["y"] = m["x"] })), `key 0 (kid "acme-ec"): `},
		{"symmetric key without k", set(map[string]any{"kty": "oct", "kid": "s"}), "key is a symmetric (oct) key"},
		{"no kty", set(pub(ec, func(m map[string]any) { delete(m, "kty") })), "key has no kty"},
		{"OKP key", set(map[string]any{"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": b64(make([]byte, 32))}), `key type "OKP" is not accepted`},
		{"duplicate kid", set(pub(ec, nil), pub(rs, func(m map[string]any) { m["kid"] = ec.Kid })), `key 1 (kid "acme-ec"): kid is not unique in the set`},
	}
}

// setServer serves each case's key set at /<partner>.json.
type setServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string][]byte
}

func newSetServer(t *testing.T) *setServer {
	s := &setServer{bodies: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body, ok := s.bodies[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), ".json")]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *setServer) set(name string, body []byte) {
	s.mu.Lock()
	s.bodies[name] = body
	s.mu.Unlock()
}

// answerOnceFetched posts tokens made by tok to partner until the gateway's answer is no
// longer the one before its first fetch of the key set, and returns it.
func answerOnceFetched(t *testing.T, c *harness.Caddy, partner string, tok func() string) (*harness.Response, problemDoc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := c.PostURL(t, partner, tok())
		if resp.StatusCode == http.StatusOK {
			return resp, problemDoc{}
		}
		p := decodeProblem(t, resp)
		if p.Detail != "the partner's key set is not available" || time.Now().After(deadline) {
			return resp, p
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKeySetRefusalsAnsweredAsCheckPredicts gives every key set the loader refuses to the
// running gateway and to partnerkit.Check (what `partnerlink check` prints). Served at a
// jwks_url, the gateway answers a token for that partner 503 keys_unavailable, with the
// same detail as Check, word for word, naming the refused key and why; given as a
// jwks_file, the set fails the configuration with the same reason.
func TestKeySetRefusalsAnsweredAsCheckPredicts(t *testing.T) {
	cases := refusedSets(t)
	signer := harness.NewKey(t, "ES256", "acme-ec")
	srv := newSetServer(t)
	var partners strings.Builder
	for i, c := range cases {
		name := fmt.Sprintf("set%d", i)
		srv.set(name, c.body)
		partners.WriteString(harness.PartnerBlock(name, "jwks_url "+srv.URL+"/"+name+".json",
			"issuer "+issuer, "audience "+audience+"-"+name))
	}
	g := harness.StartCaddy(t, harness.Config{
		Caddyfile: harness.PartnersCaddyfile,
		Vars:      map[string]string{"partners": partners.String(), "upstream": harness.NewUpstream(t).Addr()},
	})

	for i, c := range cases {
		name := fmt.Sprintf("set%d", i)
		t.Run(c.name, func(t *testing.T) {
			aud := audience + "-" + name
			tok := func() string { return mint(t, signer, harness.Token{Audience: aud}) }
			report := partnerkit.Check(context.Background(), tok(), c.body, linktoken.Rules{Issuer: issuer, Audience: aud}, time.Now())
			if !strings.Contains(report.KeySetError, c.reason) {
				t.Errorf("Check's key set error = %q, want it to contain %q", report.KeySetError, c.reason)
			}
			wantDetail := "the partner's published key set is refused: " + report.KeySetError
			if report.Code != "keys_unavailable" || report.Detail != wantDetail {
				t.Errorf("Check = %s %q, want keys_unavailable %q", report.Code, report.Detail, wantDetail)
			}

			resp, p := answerOnceFetched(t, g, name, tok)
			if resp.StatusCode != http.StatusServiceUnavailable || p.Code != string(report.Code) || p.Detail != report.Detail {
				t.Errorf("gateway = %d %s %q, want 503 and Check's %s %q", resp.StatusCode, p.Code, p.Detail, report.Code, report.Detail)
			}

			// jwks_file: the set is read at load, and the configuration fails with the reason.
			dir := t.TempDir()
			file := filepath.Join(dir, "jwks.json")
			if err := os.WriteFile(file, c.body, 0o644); err != nil {
				t.Fatal(err)
			}
			caddyfile := filepath.Join(dir, "Caddyfile")
			site := "{\n\tadmin off\n}\n\nhttp://127.0.0.1:8080 {\n\tjwt_partner {\n" +
				harness.PartnerBlock("demo", "jwks_file "+file, "issuer "+issuer, "audience "+aud) + "\t}\n\treverse_proxy 127.0.0.1:9080\n}\n"
			if err := os.WriteFile(caddyfile, []byte(site), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := harness.RunCaddy(t, dir, "validate", "--config", caddyfile, "--adapter", "caddyfile")
			quoted, _ := json.Marshal(report.KeySetError)
			if err == nil || !(strings.Contains(out, report.KeySetError) || strings.Contains(out, strings.Trim(string(quoted), `"`))) {
				t.Errorf("caddy validate with the set as jwks_file = %v, want it refused with %q:\n%s", err, report.KeySetError, out)
			}
		})
	}
}

// TestRefusedKeySetAfterAGoodOne: a partner publishes a good set, then a set whose new key
// is exported with its private part (exportJWK(privateKey)). The gateway keeps the good
// set: a token of its key is accepted; a token of the new kid, once answered key_unknown
// without a reason, is answered keys_unavailable with the refused key and why, the answer
// Check gives for the new set.
func TestRefusedKeySetAfterAGoodOne(t *testing.T) {
	old := harness.NewKey(t, "ES256", "acme-2026-03")
	leaked := harness.NewKey(t, "ES256", "acme-2026-09")
	srv := harness.NewJWKSServer(t, old)
	g := startGateway(t, "jwks_url "+srv.JWKSURL(), "", "")
	waitAccepted(t, g, func() string { return mint(t, old, harness.Token{}) })

	published := []byte(`{"keys":[` + mustJSON(t, old.PublicJWK(t)) + `,` + mustJSON(t, leaked.PrivateJWK(t)) + `]}`)
	srv.SetBody(published)
	tok := mint(t, leaked, harness.Token{})
	report := partnerkit.Check(context.Background(), tok, published, linktoken.Rules{Issuer: issuer, Audience: audience}, time.Now())
	const want = `the partner's published key set is refused: key 1 (kid "acme-2026-09"): key holds private key material (member "d"): ` +
		`publish only the public key, and replace this key since its private part is exposed`
	if report.Code != "keys_unavailable" || report.Detail != want {
		t.Errorf("Check = %s %q, want keys_unavailable %q", report.Code, report.Detail, want)
	}
	resp := g.PostURL(t, "demo", tok)
	if p := decodeProblem(t, resp); resp.StatusCode != http.StatusServiceUnavailable || p.Code != string(report.Code) || p.Detail != report.Detail {
		t.Errorf("gateway = %d %s %q, want 503 and Check's %s %q", resp.StatusCode, p.Code, p.Detail, report.Code, report.Detail)
	}
	if resp := g.PostURL(t, "demo", mint(t, old, harness.Token{})); resp.StatusCode != http.StatusOK {
		t.Errorf("a token of the last good set's key: %d %s, want 200", resp.StatusCode, resp.Body)
	}
}
