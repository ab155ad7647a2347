// Package gateway tests the jwt_partner handler end to end: the caddy binary built from
// this checkout, a Caddyfile like Caddyfile.example, a recording upstream and partner keys
// served from a file or a URL.
package gateway

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
	"github.com/partnergate/partnergate/linkspec"
)

const (
	issuer   = "https://partner.example"
	audience = "partnergate-demo"
	// goOnlyAudience is the gonly partner's: partners of one handler may not share an
	// issuer and audience (probe finding 7 of issue 13).
	goOnlyAudience = "partnergate-demo-go"
	secret         = "an-upstream-secret-of-32-bytes-or-more"
)

// gatewayCaddyfile is Caddyfile.example's shape on free ports, with the gateway's own log
// at debug level (the privacy test reads it) and the access log on stderr.
var gatewayCaddyfile = harness.Gateway{
	Global: []string{
		"log {\n\toutput stderr\n\tformat json\n\tlevel INFO\n}",
		"log debuggateway {\n\toutput stderr\n\tformat json\n\tlevel DEBUG\n\tinclude http.handlers.jwt_partner\n}",
	},
	Partners: []string{
		harness.PartnerBlock("demo", "{{.Vars.keys}}", "issuer "+issuer, "audience "+audience, "{{.Vars.partner}}"),
		harness.PartnerBlock("gonly", "{{.Vars.keys}}", "issuer "+issuer, "audience "+goOnlyAudience, "kinds go"),
	},
	Handler: []string{"upstream_secret {env.TEST_UPSTREAM_SECRET}", "{{.Vars.handler}}"},
	Site: []string{
		"log {\n\toutput stderr\n\tformat json\n}",
		"reverse_proxy {{.Vars.upstream}} {\n\theader_up -X-Partner-*\n\theader_up -X-Partner_*\n}",
		"{{.Vars.site}}",
	},
}.Caddyfile()

type gateway struct {
	*harness.Caddy
	up *harness.Upstream
}

// startGateway runs caddy with gatewayCaddyfile; keys is the partner's key line
// (jwks_file … or jwks_url …), partner and handler are extra option lines.
func startGateway(t *testing.T, keys, partner, handler string) *gateway {
	t.Helper()
	return startGatewaySite(t, keys, partner, handler, "")
}

// startGatewaySite is startGateway with extra site-level lines (handle_errors, …).
func startGatewaySite(t *testing.T, keys, partner, handler, site string) *gateway {
	t.Helper()
	up := harness.NewUpstream(t)
	c := harness.StartCaddy(t, harness.Config{
		Caddyfile: gatewayCaddyfile,
		Vars:      map[string]string{"keys": keys, "partner": partner, "handler": handler, "site": site, "upstream": up.Addr()},
		Env:       []string{"TEST_UPSTREAM_SECRET=" + secret},
	})
	return &gateway{Caddy: c, up: up}
}

// fileKeys writes keys to a jwks.json and returns the jwks_file line.
func fileKeys(t *testing.T, keys ...*harness.Key) string {
	return "jwks_file " + harness.WriteJWKS(t, t.TempDir(), keys...)
}

func mint(t *testing.T, k *harness.Key, tok harness.Token) string {
	t.Helper()
	if tok.Issuer == "" {
		tok.Issuer = issuer
	}
	if tok.Audience == "" && tok.Audiences == nil {
		tok.Audience = audience
	}
	return k.Sign(t, tok)
}

// problemDoc decodes a problem+json answer.
type problemDoc struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Detail    string `json:"detail"`
	RequestID string `json:"request_id"`
	Fields    []struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	} `json:"fields"`
	Expected    string   `json:"expected"`
	MaxLifetime int64    `json:"max_lifetime"`
	Kind        string   `json:"kind"`
	KindFrom    []string `json:"kind_from"`
}

func decodeProblem(t *testing.T, r *harness.Response) problemDoc {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json (status %d, body %s)", ct, r.StatusCode, r.Body)
	}
	var p problemDoc
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("decoding problem %s: %v", r.Body, err)
	}
	return p
}

func header(t *testing.T, h http.Header, name string) string {
	t.Helper()
	v, err := linkspec.DecodeHeaderValue(h.Get(name))
	if err != nil {
		t.Errorf("decoding %s %q: %v", name, h.Get(name), err)
	}
	return v
}

func TestValidLinksReachUpstream(t *testing.T) {
	keys := map[string]*harness.Key{
		"RS256": harness.NewKey(t, "RS256", "rs"),
		"PS256": harness.NewKey(t, "PS256", "ps"),
		"ES256": harness.NewKey(t, "ES256", "es"),
	}
	// Every field's header on, so that their values are checked too;
	// TestDefaultForwardsNoFieldHeaders covers the default, none.
	g := startGateway(t, fileKeys(t, keys["RS256"], keys["PS256"], keys["ES256"]), "", "field_headers all")
	for _, alg := range []string{"RS256", "PS256", "ES256"} {
		for _, kind := range []string{"main", "go"} {
			for _, endpoint := range []string{"url", "payload"} {
				t.Run(alg+"/"+kind+"/"+endpoint, func(t *testing.T) {
					g.up.Reset()
					payload := testpayload.Main()
					if kind == "go" {
						payload = testpayload.Go()
					}
					tok := mint(t, keys[alg], harness.Token{Payload: payload})
					var resp *harness.Response
					if endpoint == "url" {
						resp = g.PostURL(t, "demo", tok)
					} else {
						resp = g.PostPayload(t, "demo", tok)
					}
					if resp.StatusCode != 200 || string(resp.Body) != "upstream ok" {
						t.Fatalf("status %d body %s, want 200 from the upstream", resp.StatusCode, resp.Body)
					}
					reqs := g.up.Requests()
					if len(reqs) != 1 {
						t.Fatalf("upstream received %d requests, want 1", len(reqs))
					}
					got := reqs[0]
					if got.Method != "POST" || got.Path != "/partner/demo/"+endpoint || len(got.Body) != 0 {
						t.Errorf("upstream request = %s %s with %d body bytes, want POST /partner/demo/%s without body", got.Method, got.Path, len(got.Body), endpoint)
					}
					if strings.Contains(strings.Join(flatten(got.Header), "\n"), tok) {
						t.Error("the token reached the upstream")
					}
					contact := payload["contact"].(map[string]any)
					want := map[string]string{
						"X-Partner-Name":              "demo",
						"X-Partner-Endpoint":          endpoint,
						"X-Partner-Kind":              kind,
						"X-Partner-Issuer":            issuer,
						"X-Partner-Key-Id":            keys[alg].Kid,
						"X-Partner-Organization-Name": payload["organizationName"].(string),
						"X-Partner-Contact-Id":        contact["id"].(string),
						"X-Partner-Contact-Firstname": contact["firstname"].(string),
						"X-Partner-Contact-Lastname":  contact["lastname"].(string),
						"X-Partner-Contact-Ssn":       contact["ssn"].(string),
					}
					if kind == "main" {
						want["X-Partner-Employee-Id"] = payload["employeeId"].(string)
						want["X-Partner-Employee-Firstname"] = payload["employeeFirstname"].(string)
						want["X-Partner-Employee-Lastname"] = payload["employeeLastname"].(string)
					}
					for name, value := range want {
						if v := header(t, got.Header, name); v != value {
							t.Errorf("upstream %s = %q, want %q", name, v, value)
						}
					}
					if got.Header.Get("X-Partner-Request-Id") == "" {
						t.Error("upstream X-Partner-Request-Id is empty")
					}
					claims, err := base64.RawURLEncoding.DecodeString(got.Header.Get("X-Partner-Claims"))
					var m map[string]any
					if err != nil || json.Unmarshal(claims, &m) != nil || m["organizationId"] != payload["organizationId"] {
						t.Errorf("upstream X-Partner-Claims does not decode to the payload: %q", got.Header.Get("X-Partner-Claims"))
					}
					if got.Header.Get("X-Partner-Assertion") == "" {
						t.Error("upstream X-Partner-Assertion is missing although upstream_secret is set")
					}
				})
			}
		}
	}
}

func flatten(h http.Header) []string {
	var out []string
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, k+": "+v)
		}
	}
	return out
}

func TestSpoofedHeadersNeverReachUpstream(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	// With the fields' headers on, a spoofed X-Partner-Contact-Id must give way to the
	// verified one; TestDefaultForwardsNoFieldHeaders shows it removed without them.
	g := startGateway(t, fileKeys(t, key), "", "field_headers all")
	spoof := http.Header{
		"X-Partner-Contact-Id":  {"evil"},
		"X-Partner-Employee-Id": {"admin"},
		"X-Partner-Assertion":   {"v1.0.forged"},
		"x-partner-name":        {"other"},
		"X-Partner_Kind":        {"main"},
	}
	t.Run("partner link", func(t *testing.T) {
		g.up.Reset()
		tok := mint(t, key, harness.Token{Payload: testpayload.Go()})
		hdr := spoof.Clone()
		// Hop-by-hop: a proxy deletes what Connection names, so a client could otherwise
		// strip the gateway's headers on their way to the upstream.
		hdr.Set("Connection", "X-Partner-Name, X-Partner-Assertion, X-Partner-Claims")
		resp := g.Post(t, "/partner/demo/url?utm=1", "text/plain", tok, hdr)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d body %s", resp.StatusCode, resp.Body)
		}
		h := g.up.Last(t).Header
		if v := h.Values("X-Partner-Contact-Id"); len(v) != 1 || v[0] != "c-8" {
			t.Errorf("upstream X-Partner-Contact-Id = %q, want only the verified c-8", v)
		}
		if v := h.Values("X-Partner-Employee-Id"); len(v) != 0 {
			t.Errorf("upstream X-Partner-Employee-Id = %q, want none for a go link", v)
		}
		if v := h.Values("X-Partner-Name"); len(v) != 1 || v[0] != "demo" {
			t.Errorf("upstream X-Partner-Name = %q, want only demo", v)
		}
		if v := h.Get("X-Partner-Claims"); v == "" {
			t.Error("upstream X-Partner-Claims missing: the client's Connection header stripped it")
		}
		if q := g.up.Last(t).RawQuery; q != "" {
			t.Errorf("upstream query = %q, want none", q)
		}
		//lint:ignore SA1008 Go leaves a name with '_' uncanonicalized; that raw key is the attack
		if v, ok := h["X-Partner_Kind"]; ok {
			t.Errorf("upstream X-Partner_Kind = %q, want it stripped", v)
		}
		if v := h.Values("X-Partner-Assertion"); len(v) != 1 || v[0] == "v1.0.forged" {
			t.Errorf("upstream X-Partner-Assertion = %q, want only the gateway's", v)
		}
	})
	t.Run("other paths", func(t *testing.T) {
		g.up.Reset()
		req, _ := http.NewRequest(http.MethodGet, g.URL+"/app/home", nil)
		for k, v := range spoof {
			req.Header[k] = v
		}
		if resp := harness.Do(t, req); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		for k := range g.up.Last(t).Header {
			if strings.HasPrefix(strings.ReplaceAll(strings.ToLower(k), "_", "-"), "x-partner-") {
				t.Errorf("upstream received %s on a non-partner path", k)
			}
		}
	})
	t.Run("rejected link", func(t *testing.T) {
		g.up.Reset()
		resp := g.Post(t, "/partner/demo/url", "text/plain", "garbage", spoof)
		if resp.StatusCode != 400 || len(g.up.Requests()) != 0 {
			t.Errorf("status %d, upstream requests %d; want 400 and none", resp.StatusCode, len(g.up.Requests()))
		}
	})
}

// TestDefaultForwardsNoFieldHeaders: without field_headers the upstream gets the fixed
// headers and the claims, which carry every field, and no header of a field of its own; a
// field's header the client sent is removed all the same.
func TestDefaultForwardsNoFieldHeaders(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	g := startGateway(t, fileKeys(t, key), "", "")
	payload := testpayload.Main()
	tok := mint(t, key, harness.Token{Payload: payload})
	spoof := http.Header{"X-Partner-Contact-Id": {"evil"}, "X-Partner_Contact-Ssn": {"evil"}}
	resp := g.Post(t, "/partner/demo/url", "text/plain", tok, spoof)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d body %s", resp.StatusCode, resp.Body)
	}
	h := g.up.Last(t).Header
	fixed := map[string]string{
		"X-Partner-Name": "demo", "X-Partner-Endpoint": "url", "X-Partner-Kind": "main",
		"X-Partner-Issuer": issuer, "X-Partner-Key-Id": key.Kid,
	}
	for name, want := range fixed {
		if v := header(t, h, name); v != want {
			t.Errorf("upstream %s = %q, want %q", name, v, want)
		}
	}
	for _, name := range []string{"X-Partner-Request-Id", "X-Partner-Assertion"} {
		if h.Get(name) == "" {
			t.Errorf("upstream %s missing", name)
		}
	}
	if got, want := h.Get("X-Partner-Claims"), strings.Split(tok, ".")[1]; got != want {
		t.Errorf("upstream X-Partner-Claims = %q, want the token's payload segment %q", got, want)
	}
	for _, f := range linkspec.Fields {
		if v := h.Values("X-Partner-" + f.Header); len(v) != 0 {
			t.Errorf("upstream X-Partner-%s = %q, want no field header without field_headers", f.Header, v)
		}
	}
	for k, v := range h {
		if strings.HasPrefix(strings.ReplaceAll(strings.ToLower(k), "_", "-"), "x-partner-") && strings.Contains(strings.Join(v, ","), "evil") {
			t.Errorf("upstream %s = %q: the client's header reached it", k, v)
		}
	}
}

func TestReplayIsRejected(t *testing.T) {
	key := harness.NewKey(t, "RS256", "rs")
	g := startGateway(t, fileKeys(t, key), "", "")
	tok := mint(t, key, harness.Token{})
	if resp := g.PostURL(t, "demo", tok); resp.StatusCode != 200 {
		t.Fatalf("first use: status %d body %s", resp.StatusCode, resp.Body)
	}
	for _, post := range []func(testing.TB, string, string) *harness.Response{g.PostURL, g.PostPayload} {
		resp := post(t, "demo", tok)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(resp.Body), "token_replayed") {
			t.Errorf("replay: status %d body %s, want 409 token_replayed", resp.StatusCode, resp.Body)
		}
	}
	if n := len(g.up.Requests()); n != 1 {
		t.Errorf("upstream received %d requests, want only the first use", n)
	}
}
