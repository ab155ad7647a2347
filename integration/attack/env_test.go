package attack

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
)

// partner is one configured partner's agreed values.
type partner struct {
	issuer, audience string
}

// testKey is a partner's signing key with what the attacks need of it.
type testKey struct {
	*harness.Key
	partner string
	rsa     *rsa.PrivateKey // nil for EC keys
	ec      *ecdsa.PrivateKey
	jwkJSON []byte // the public JWK exactly as published
	sign    signer // with the key's own algorithm
}

// env is one running gateway with two partners, its recording upstream, and a server that
// a jku or x5u header names and that must never be asked.
type env struct {
	caddy     *harness.Caddy
	upstream  *harness.Upstream
	partners  map[string]partner
	keys      map[string]*testKey // by label
	jwksFiles map[string][]byte   // by partner
	jwksPaths map[string]string   // by partner: the files the gateway reads
	// attacker is a key of nobody's set; attackerCert its self-signed certificate.
	attacker     *testKey
	attackerCert []byte

	keyServer     *httptest.Server
	keyServerHits atomic.Int64
}

// gatewayCaddyfile is the gateway under attack. The server timeouts are part of the
// defence: the handler bounds how much of a body it reads, the server how long it waits
// for it (read_body), so that a slowloris-style body cannot hold a connection forever.
// Every field's header is on (field_headers all), so that the attacks on the fields'
// headers (markup, spoofing, Connection tokens) meet the widest contract.
var gatewayCaddyfile = harness.Gateway{
	Global: []string{"servers {\n\ttimeouts {\n\t\tread_header 5s\n\t\tread_body {{.Vars.read_body}}\n\t\tidle 1m\n\t}\n}"},
	Partners: []string{
		harness.PartnerBlock("acme", "jwks_file {{.Vars.acme}}", "issuer https://acme.example", "audience svc-link",
			"algorithms RS256 PS256 ES256", "origins {{.Vars.acme_origin}} http://localhost:8081"),
		harness.PartnerBlock("beta", "jwks_file {{.Vars.beta}}", "issuer https://beta.example", "audience svc-link", "algorithms ES256"),
	},
	Handler: []string{"upstream_secret {{.Vars.secret}}", "field_headers all"},
}.Caddyfile()

// acmeFormOrigin is the page acme's forms come from (its origins; beta has none).
const acmeFormOrigin = "https://ehr.acme.example"

// upstreamSecret is the secret the gateway signs its assertion with (X-Partner-Assertion);
// the catalogue verifies it on every forwarded request as the app service would.
const upstreamSecret = "attack-catalogue-upstream-secret-0123456789"

// readBodyTimeout is the test gateway's read_body. Short, so that the slow-body test ends
// soon; a production value is in SECURITY.md.
const readBodyTimeout = "3s"

// sharedEnv is the gateway under attack, started once per test process by the first test
// that asks for it and stopped by harness.Main after all tests.
var sharedEnv harness.Shared[*env]

// newEnv returns the shared gateway: the catalogue and the other tests send to one gateway
// (every token has a random nonce, and every check counts the upstream's requests before and
// after its own, so they do not interfere). The gateway does not depend on the test that
// started it: `go test -run TestX` and -shuffle=on run any of them alone or in any order.
func newEnv(t *testing.T) *env {
	t.Helper()
	return sharedEnv.Get(t, startEnv)
}

func TestMain(m *testing.M) { harness.Main(m) }

// startEnv starts the gateway with both partners and every key the tests use. tb belongs to
// the test process, not to a test (harness.Shared).
func startEnv(tb testing.TB) *env {
	e := &env{
		partners: map[string]partner{
			"acme": {issuer: "https://acme.example", audience: "svc-link"},
			"beta": {issuer: "https://beta.example", audience: "svc-link"},
		},
		keys:      map[string]*testKey{},
		jwksFiles: map[string][]byte{},
		jwksPaths: map[string]string{},
	}
	add := func(label, partnerName, alg, kid string, noAlg bool) *testKey {
		k := harness.NewKey(tb, alg, kid)
		k.NoAlg = noAlg
		tk := newTestKey(tb, k, partnerName)
		e.keys[label] = tk
		return tk
	}
	add("acme-rs", "acme", "RS256", "acme-rs", false)
	add("acme-ps", "acme", "PS256", "acme-ps", false)
	add("acme-es", "acme", "ES256", "acme-es", false)
	add("acme-any", "acme", "RS256", "acme-any", true)
	add("acme-shared", "acme", "ES256", "shared", false)
	add("beta-es", "beta", "ES256", "beta-es", false)
	add("beta-shared", "beta", "ES256", "shared", false)
	e.attacker = newTestKey(tb, harness.NewKey(tb, "RS256", "attacker"), "")
	e.attackerCert = selfSigned(tb, e.attacker.rsa)

	dir := tb.TempDir()
	vars := map[string]string{"read_body": readBodyTimeout, "secret": upstreamSecret, "acme_origin": acmeFormOrigin}
	for _, p := range []string{"acme", "beta"} {
		var ks []*harness.Key
		for _, l := range slices.Sorted(maps.Keys(e.keys)) {
			if e.keys[l].partner == p {
				ks = append(ks, e.keys[l].Key)
			}
		}
		e.jwksFiles[p] = harness.JWKS(tb, ks...)
		path := filepath.Join(dir, p+".jwks.json")
		if err := os.WriteFile(path, e.jwksFiles[p], 0o644); err != nil {
			tb.Fatal(err)
		}
		vars[p] = path
		e.jwksPaths[p] = path
	}

	// The server a jku or x5u names: it would serve the attacker's key, and counts every
	// request so that the catalogue can assert there was none.
	attackerSet := harness.JWKS(tb, e.attacker.Key)
	e.keyServer = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.keyServerHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(attackerSet)
	}))
	tb.Cleanup(e.keyServer.Close)

	e.upstream = harness.NewUpstream(tb)
	vars["upstream"] = e.upstream.Addr()
	e.caddy = harness.StartCaddy(tb, harness.Config{Caddyfile: gatewayCaddyfile, Vars: vars, Dir: dir})
	return e
}

func newTestKey(t testing.TB, k *harness.Key, partnerName string) *testKey {
	t.Helper()
	tk := &testKey{Key: k, partner: partnerName, jwkJSON: mustJSON(t, k.PublicJWK(t))}
	switch priv := k.Private.(type) {
	case *rsa.PrivateKey:
		tk.rsa = priv
		if k.Alg == "PS256" {
			tk.sign = signPS256(priv)
		} else {
			tk.sign = signRS256(priv)
		}
	case *ecdsa.PrivateKey:
		tk.ec = priv
		tk.sign = signES256(priv)
	default:
		t.Fatalf("key type %T", k.Private)
	}
	return tk
}

// selfSigned returns a DER certificate for key, the x5c an attacker would embed.
func selfSigned(t testing.TB, key *rsa.PrivateKey) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "acme.example"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("x509.CreateCertificate = %v", err)
	}
	return der
}

// key returns the partner key with the given label; an unknown label is a bug in the
// catalogue.
func (e *env) key(label string) *testKey {
	k, ok := e.keys[label]
	if !ok {
		panic("no key labelled " + label)
	}
	return k
}

// attackerJWK is the attacker's public key as a JWK object, for an embedded jwk header.
func (e *env) attackerJWK(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.attacker.jwkJSON, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// send sends req for a case to the gateway and reads the answer.
func (e *env) send(t *testing.T, c attackCase, req request) *response {
	t.Helper()
	ep := c.endpoint
	if ep == "" {
		ep = "url"
	}
	p := c.partner
	if p == "" {
		p = "acme"
	}
	path := c.path
	if path == "" {
		path = "/partner/" + p + "/" + ep
	}
	method := req.method
	if method == "" {
		method = http.MethodPost
	}
	ct := req.contentType
	if ct == "" {
		ct = "text/plain"
		if ep == "payload" {
			ct = "application/x-www-form-urlencoded"
		}
	}
	body := req.body
	if req.token != "" && body == "" {
		if ep == "payload" && !strings.HasPrefix(ct, "text/") {
			body = "payload=" + url.QueryEscape(req.token)
		} else {
			body = req.token
		}
	}
	u := e.caddy.URL + path
	if req.rawQuery != "" {
		u += "?" + req.rawQuery
	}
	var rd io.Reader = strings.NewReader(body)
	if req.chunked {
		// A reader of unknown length: the client sends Transfer-Encoding: chunked.
		rd = io.MultiReader(strings.NewReader(body))
	}
	hr, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if _, named := req.header["Origin"]; ep == "payload" && !named {
		// A form on /payload comes from a browser, which names its page: acme's own, as
		// acme's origins want, unless the case names another page or none (Origin: nil).
		hr.Header.Set("Origin", acmeFormOrigin)
	}
	for k, vs := range req.header {
		if vs != nil {
			hr.Header[k] = vs
		}
	}
	if req.header.Get("Host") != "" {
		hr.Host = req.header.Get("Host")
	}
	if ct != "-" {
		hr.Header.Set("Content-Type", ct)
	}
	res := harness.Do(t, hr)
	return &response{status: res.StatusCode, header: res.Header, body: string(res.Body)}
}

// mustAccept sends tok to acme's /url (or the partner of its key) and fails unless the
// gateway forwards it: the first use that a replay case replays.
func (e *env) mustAccept(t *testing.T, tok string) {
	t.Helper()
	p := "acme"
	if tokenKid(tok) == "beta-es" {
		p = "beta"
	}
	before := len(e.upstream.Requests())
	res := e.send(t, attackCase{partner: p}, request{token: tok})
	if res.status != http.StatusOK || len(e.upstream.Requests()) != before+1 {
		t.Fatalf("first use of the token: status %d, body %s; want 200 and one upstream request", res.status, res.body)
	}
}

// tokenKid returns the kid of a compact token's header, "" if it has none.
func tokenKid(tok string) string {
	seg, _, _ := strings.Cut(tok, ".")
	var h struct {
		Kid string `json:"kid"`
	}
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil || json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.Kid
}

// lastUpstreamHeader returns the headers of the upstream's last request, nil if none.
func (e *env) lastUpstreamHeader() http.Header {
	reqs := e.upstream.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1].Header
}

// row is one line of the summary table.
type row struct {
	name, want, got string
	untouched       string
	failed          bool // an assertion of the case failed, the answer's or another
}

// summary collects the outcome of every case and prints it as a table.
type summary struct {
	mu   sync.Mutex
	rows []row
}

func (s *summary) add(r row) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, r)
}

func (s *summary) write(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nw := len("case")
	for _, r := range s.rows {
		nw = max(nw, len(r.name))
	}
	fmt.Fprintf(w, "%-*s  %-32s  %-32s  %s\n", nw, "case", "expected", "got", "upstream untouched")
	for _, r := range s.rows {
		mark := ""
		switch {
		case r.want != r.got:
			mark = "  <-- MISMATCH"
		case r.failed:
			mark = "  <-- CHECK FAILED"
		}
		fmt.Fprintf(w, "%-*s  %-32s  %-32s  %s%s\n", nw, r.name, r.want, r.got, r.untouched, mark)
	}
}
