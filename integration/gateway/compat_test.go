package gateway

import (
	"crypto"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/cert"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
)

// The links real partners send (issue 12): tokens made by a JWT library with certificate
// hints beside kid, optional values the service cannot use, and Go links with extra user
// data, posted to the running gateway.

// goAudience is the audience of the go-only partner of compatCaddyfile: its own, since
// two partners with one issuer and audience would accept each other's tokens.
const goAudience = "partnergate-demo-go"

// compatCaddyfile is the gateway with partner demo (both kinds) and gonly (Go links only),
// its log as JSON on stderr (the tests read the warning lines), and every field's header on
// so that the tests see which fields reach the upstream as headers of their own.
var compatCaddyfile = harness.Gateway{
	Global: []string{"log {\n\toutput stderr\n\tformat json\n\tlevel INFO\n}"},
	Partners: []string{
		harness.PartnerBlock("demo", "{{.Vars.keys}}", "issuer "+issuer, "audience "+audience),
		harness.PartnerBlock("gonly", "{{.Vars.keys}}", "issuer "+issuer, "audience "+goAudience, "kinds go"),
	},
	Handler: []string{"field_headers all"},
}.Caddyfile()

// startCompat runs caddy with compatCaddyfile and the partners' keys.
func startCompat(t *testing.T, keys ...*harness.Key) *gateway {
	t.Helper()
	up := harness.NewUpstream(t)
	c := harness.StartCaddy(t, harness.Config{
		Caddyfile: compatCaddyfile,
		Vars:      map[string]string{"keys": fileKeys(t, keys...), "upstream": up.Addr()},
	})
	return &gateway{Caddy: c, up: up}
}

// certHints are the certificate hints of one self-signed certificate of a key, as a .NET
// or nimbus-jose-jwt signer puts them in the header.
type certHints struct {
	x5c          string // standard base64 DER (RFC 7515 §4.1.6)
	x5t, x5tS256 string // base64url SHA-1 and SHA-256 thumbprints (§4.1.7, §4.1.8)
}

func newCertHints(t *testing.T, key crypto.Signer, name string) certHints {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	s1, s256 := sha1.Sum(der), sha256.Sum256(der)
	return certHints{
		x5c:     base64.StdEncoding.EncodeToString(der),
		x5t:     base64.RawURLEncoding.EncodeToString(s1[:]),
		x5tS256: base64.RawURLEncoding.EncodeToString(s256[:]),
	}
}

// jwxToken signs a link with jwx's own jws.Sign, the way a partner's library does: typ,
// kid and the given hints in the protected header, set through jwx's header API (x5c as
// a cert.Chain).
func jwxToken(t *testing.T, signer crypto.Signer, alg, kid string, payload map[string]any, hints certHints, members ...string) string {
	t.Helper()
	claims, err := json.Marshal(harness.ClaimsOf(harness.Token{Issuer: issuer, Audience: audience, Payload: payload}))
	if err != nil {
		t.Fatal(err)
	}
	h := jws.NewHeaders()
	set := func(name string, v any) {
		if err := h.Set(name, v); err != nil {
			t.Fatalf("setting header %s: %v", name, err)
		}
	}
	set(jws.TypeKey, "JWT")
	set(jws.KeyIDKey, kid)
	for _, m := range members {
		switch m {
		case jws.X509CertChainKey:
			var chain cert.Chain
			if err := chain.AddString(hints.x5c); err != nil {
				t.Fatal(err)
			}
			set(m, &chain)
		case jws.X509CertThumbprintKey:
			set(m, hints.x5t)
		case jws.X509CertThumbprintS256Key:
			set(m, hints.x5tS256)
		}
	}
	tok, err := jws.Sign(claims, jws.WithKey(jwa.SignatureAlgorithm(alg), signer, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatalf("jws.Sign: %v", err)
	}
	return string(tok)
}

// headerOf decodes a compact token's header.
func headerOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.SplitN(tok, ".", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestCompatCertificateHintsAreIgnored(t *testing.T) {
	key := harness.NewKey(t, "RS256", "rs")
	g := startCompat(t, key)
	own := newCertHints(t, key.Private, "partner")
	attacker := harness.NewKey(t, "RS256", "attacker")
	other := newCertHints(t, attacker.Private, "attacker")

	for _, tc := range []struct {
		name    string
		members []string
	}{
		{"x5t (.NET)", []string{jws.X509CertThumbprintKey}},
		{"x5t#S256 (nimbus-jose-jwt)", []string{jws.X509CertThumbprintS256Key}},
		{"x5c with x5t and x5t#S256", []string{jws.X509CertChainKey, jws.X509CertThumbprintKey, jws.X509CertThumbprintS256Key}},
	} {
		t.Run("accepted/"+tc.name, func(t *testing.T) {
			g.up.Reset()
			tok := jwxToken(t, key.Private, "RS256", "rs", testpayload.Main(), own, tc.members...)
			h := headerOf(t, tok)
			for _, m := range tc.members {
				if _, ok := h[m]; !ok {
					t.Fatalf("jwx left %s out of the header %v", m, h)
				}
			}
			if h[jws.X509CertThumbprintKey] != nil && h[jws.X509CertThumbprintKey] != own.x5t {
				t.Fatalf("x5t %v is not the certificate's thumbprint %s", h[jws.X509CertThumbprintKey], own.x5t)
			}
			resp := g.PostURL(t, "demo", tok)
			if resp.StatusCode != 200 || string(resp.Body) != "upstream ok" {
				t.Fatalf("status %d body %s, want 200 from the upstream", resp.StatusCode, resp.Body)
			}
			got := g.up.Last(t).Header
			if k := header(t, got, "X-Partner-Key-Id"); k != "rs" {
				t.Errorf("upstream X-Partner-Key-Id = %q, want the partner's rs", k)
			}
		})
	}

	// Another key's certificate in the header, the token signed by that key: the key is
	// still the partner's of the kid, so the signature fails; with a kid outside the set,
	// there is no key at all. The certificate is never a key.
	t.Run("refused/x5c of another key, signed by it, partner's kid", func(t *testing.T) {
		g.up.Reset()
		tok := jwxToken(t, attacker.Private, "RS256", "rs", testpayload.Main(), other,
			jws.X509CertChainKey, jws.X509CertThumbprintKey, jws.X509CertThumbprintS256Key)
		resp := g.PostURL(t, "demo", tok)
		if p := decodeProblem(t, resp); resp.StatusCode != http.StatusUnauthorized || p.Code != "signature_invalid" {
			t.Errorf("status %d code %q (%s), want 401 signature_invalid", resp.StatusCode, p.Code, p.Detail)
		}
		if n := len(g.up.Requests()); n != 0 {
			t.Errorf("upstream received %d requests, want none", n)
		}
	})
	t.Run("refused/x5c of another key, signed by it, its own kid", func(t *testing.T) {
		g.up.Reset()
		tok := jwxToken(t, attacker.Private, "RS256", "attacker", testpayload.Main(), other, jws.X509CertChainKey, jws.X509CertThumbprintKey)
		resp := g.PostURL(t, "demo", tok)
		if p := decodeProblem(t, resp); resp.StatusCode != http.StatusUnauthorized || p.Code != "key_unknown" {
			t.Errorf("status %d code %q (%s), want 401 key_unknown", resp.StatusCode, p.Code, p.Detail)
		}
		if n := len(g.up.Requests()); n != 0 {
			t.Errorf("upstream received %d requests, want none", n)
		}
	})
}

func TestCompatProcessingMembersStayRefused(t *testing.T) {
	key := harness.NewKey(t, "RS256", "rs")
	attacker := harness.NewKey(t, "RS256", "attacker")
	g := startCompat(t, key)
	var fetched atomic.Int64
	keyServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(harness.JWKS(t, attacker))
	}))
	defer keyServer.Close()
	own := newCertHints(t, key.Private, "partner")

	for _, tc := range []struct {
		name   string
		header map[string]any
		signer *harness.Key
	}{
		{"jku", map[string]any{"jku": keyServer.URL + "/jwks.json", "kid": "attacker"}, attacker},
		{"jku with the partner's kid and key", map[string]any{"jku": keyServer.URL + "/jwks.json"}, key},
		{"x5u", map[string]any{"x5u": keyServer.URL + "/cert.pem"}, key},
		{"jwk", map[string]any{"jwk": attacker.PublicJWK(t)}, attacker},
		{"zip", map[string]any{"zip": "DEF"}, key},
		{"enc", map[string]any{"enc": "A256GCM"}, key},
		{"crit", map[string]any{"crit": []string{"exp"}}, key},
		{"b64", map[string]any{"b64": false, "crit": []string{"b64"}}, key},
		{"cty JWT", map[string]any{"cty": "JWT"}, key},
		{"jku beside accepted hints", map[string]any{"jku": keyServer.URL + "/jwks.json", "x5t": own.x5t, "x5c": []string{own.x5c}}, key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.up.Reset()
			tok := mint(t, tc.signer, harness.Token{Header: tc.header})
			resp := g.PostURL(t, "demo", tok)
			if p := decodeProblem(t, resp); resp.StatusCode != http.StatusBadRequest || p.Code != "header_invalid" {
				t.Errorf("status %d code %q (%s), want 400 header_invalid", resp.StatusCode, p.Code, p.Detail)
			}
			if n := len(g.up.Requests()); n != 0 {
				t.Errorf("upstream received %d requests, want none", n)
			}
		})
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("the gateway fetched a URL named by a token %d times, want never", n)
	}
}

func TestCompatMalformedOptionalFieldsAreDropped(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	g := startCompat(t, key)
	// Distinctive values, so that any occurrence in a header, the claims or a log is theirs.
	const badContactEmail, badEmployeeEmail, blankMiddle = "Qz7-no-address-Kp", "Vw3-at-example", " \t "
	payload := testpayload.Main()
	payload["employeeEmail"] = badEmployeeEmail
	contact := payload["contact"].(map[string]any)
	contact["email"] = badContactEmail
	contact["middlename"] = blankMiddle
	tok := mint(t, key, harness.Token{Payload: payload})
	resp := g.PostURL(t, "demo", tok)
	if resp.StatusCode != 200 || string(resp.Body) != "upstream ok" {
		t.Fatalf("status %d body %s, want the link accepted", resp.StatusCode, resp.Body)
	}
	got := g.up.Last(t).Header
	for _, name := range []string{"X-Partner-Employee-Email", "X-Partner-Contact-Email", "X-Partner-Contact-Middlename"} {
		if v, ok := got[name]; ok {
			t.Errorf("upstream %s = %q, want the dropped field not forwarded", name, v)
		}
	}
	if v := header(t, got, "X-Partner-Contact-Firstname"); v != contact["firstname"] {
		t.Errorf("upstream X-Partner-Contact-Firstname = %q, want %q (valid fields are kept)", v, contact["firstname"])
	}
	claims, err := base64.RawURLEncoding.DecodeString(got.Get("X-Partner-Claims"))
	if err != nil {
		t.Fatalf("X-Partner-Claims: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(claims, &m); err != nil {
		t.Fatalf("X-Partner-Claims is not JSON: %v", err)
	}
	c, _ := m["contact"].(map[string]any)
	if _, ok := m["employeeEmail"]; ok || c == nil || c["email"] != nil || c["middlename"] != nil || c["id"] != contact["id"] {
		t.Errorf("forwarded claims = %s, want the contact without email and middlename, and no employeeEmail", claims)
	}

	// The metric counts each dropped field per partner.
	mresp, err := http.Get("http://" + g.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, field := range []string{"employeeEmail", "contact.middlename", "contact.email"} {
		want := `partnergate_optional_fields_dropped_total{field="` + field + `",partner="demo"} 1`
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grep(string(metrics), "partnergate_optional"))
		}
	}

	// One warning line per field, naming partner, field and reason, never the value.
	deadline := time.Now().Add(10 * time.Second)
	var lines []string
	for {
		lines = lines[:0]
		for _, l := range strings.Split(g.Logs(), "\n") {
			if strings.Contains(l, `"optional payload field dropped"`) {
				lines = append(lines, l)
			}
		}
		if len(lines) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	fields := map[string]bool{}
	for _, l := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(l), &entry); err != nil {
			t.Errorf("log line is not JSON: %s", l)
			continue
		}
		if entry["level"] != "warn" || entry["partner"] != "demo" || entry["reason"] == nil || entry["reason"] == "" {
			t.Errorf("log line %s: want level warn, partner demo and a reason", l)
		}
		f, _ := entry["field"].(string)
		fields[f] = true
	}
	for _, f := range []string{"employeeEmail", "contact.middlename", "contact.email"} {
		if !fields[f] {
			t.Errorf("no warning line names %s; lines:\n%s", f, strings.Join(lines, "\n"))
		}
	}
	logs := g.Logs()
	for _, secret := range []string{badContactEmail, badEmployeeEmail, tok} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log carries the dropped value or the token %q", secret)
		}
	}

	t.Run("required field stays strict", func(t *testing.T) {
		g.up.Reset()
		p := testpayload.Go()
		p["contact"].(map[string]any)["email"] = badContactEmail // required in a Go link
		resp := g.PostURL(t, "demo", mint(t, key, harness.Token{Payload: p}))
		pr := decodeProblem(t, resp)
		if resp.StatusCode != http.StatusBadRequest || pr.Code != "payload_invalid" || len(pr.Fields) == 0 || pr.Fields[0].Field != "contact.email" {
			t.Errorf("status %d code %q fields %+v, want 400 payload_invalid naming contact.email", resp.StatusCode, pr.Code, pr.Fields)
		}
		if n := len(g.up.Requests()); n != 0 {
			t.Errorf("upstream received %d requests, want none", n)
		}
	})
}

func TestCompatLinkKind(t *testing.T) {
	key := harness.NewKey(t, "PS256", "ps")
	g := startCompat(t, key)
	goWithEmail := func() map[string]any {
		p := testpayload.Go()
		p["employeeEmail"] = "coach@partner.example" // extra user data, for prefilling
		return p
	}
	mainWithout := func() map[string]any {
		p := testpayload.Main()
		delete(p, "employeeId")
		return p
	}
	for _, tc := range []struct {
		name, partner string
		payload       map[string]any
		status        int
		kind, code    string
		field         string
	}{
		{"go link with employeeEmail", "demo", goWithEmail(), 200, "go", "", ""},
		{"go link with employeeEmail to a go-only partner", "gonly", goWithEmail(), 200, "go", "", ""},
		{"main link without employeeId", "demo", mainWithout(), 400, "", "payload_invalid", "employeeId"},
		{"main link without employeeId to a go-only partner", "gonly", mainWithout(), 403, "", "kind_not_allowed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.up.Reset()
			tok := harness.Token{Payload: tc.payload}
			if tc.partner == "gonly" {
				tok.Audience = goOnlyAudience
			}
			resp := g.PostURL(t, tc.partner, mint(t, key, tok))
			if tc.status == 200 {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d body %s, want 200", resp.StatusCode, resp.Body)
				}
				got := g.up.Last(t).Header
				if k := header(t, got, "X-Partner-Kind"); k != tc.kind {
					t.Errorf("upstream X-Partner-Kind = %q, want %q", k, tc.kind)
				}
				if e := header(t, got, "X-Partner-Employee-Email"); e != tc.payload["employeeEmail"] {
					t.Errorf("upstream X-Partner-Employee-Email = %q, want the extra user data passed on", e)
				}
				if v, ok := got["X-Partner-Employee-Id"]; ok {
					t.Errorf("upstream X-Partner-Employee-Id = %q on a go link", v)
				}
				return
			}
			p := decodeProblem(t, resp)
			if resp.StatusCode != tc.status || p.Code != tc.code {
				t.Errorf("status %d code %q (%s), want %d %s", resp.StatusCode, p.Code, p.Detail, tc.status, tc.code)
			}
			if tc.field != "" && (len(p.Fields) == 0 || p.Fields[0].Field != tc.field) {
				t.Errorf("fields %+v, want the first to be %s", p.Fields, tc.field)
			}
			if n := len(g.up.Requests()); n != 0 {
				t.Errorf("upstream received %d requests, want none", n)
			}
		})
	}
}
