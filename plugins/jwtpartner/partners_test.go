package jwtpartner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linktoken"
)

// TestProvisionAndValidateRefuseBadJSON covers the checks a JSON configuration (which skips
// the Caddyfile's) meets at load.
func TestProvisionAndValidateRefuseBadJSON(t *testing.T) {
	jwks := harness.WriteJWKS(t, t.TempDir(), harness.NewKey(t, "ES256", "k"))
	good := func() *Partner { return &Partner{Issuer: "i", Audience: "a", JWKSFile: jwks} }
	tests := []struct {
		name string
		mod  func(*Handler)
		want string
	}{
		{"no partners", func(h *Handler) { h.Partners = nil }, "no partners configured"},
		{"HS256", func(h *Handler) { h.Partners["demo"].Algorithms = []string{"HS256"} }, `partner demo: algorithm "HS256" is not allowed (want RS256, PS256 or ES256`},
		{"none", func(h *Handler) { h.Partners["demo"].Algorithms = []string{"none"} }, `partner demo: algorithm "none" is not allowed`},
		{"missing issuer", func(h *Handler) { h.Partners["demo"].Issuer = "" }, "partner demo: issuer is required"},
		{"missing audience", func(h *Handler) { h.Partners["demo"].Audience = "" }, "partner demo: audience is required"},
		{"no keys", func(h *Handler) { h.Partners["demo"].JWKSFile = "" }, "partner demo: jwks_file or jwks_url is required"},
		{"both key sources", func(h *Handler) { h.Partners["demo"].JWKSURL = "https://x.example/j" }, "exclusive"},
		{"http key url", func(h *Handler) {
			h.Partners["demo"].JWKSFile = ""
			h.Partners["demo"].JWKSURL = "http://partner.example/jwks.json"
		}, "https"},
		{"missing key file", func(h *Handler) { h.Partners["demo"].JWKSFile = jwks + ".missing" }, "partner demo: jwks_file"},
		{"CA file without jwks_url", func(h *Handler) { h.Partners["demo"].JWKSCAFile = jwks }, "partner demo: jwks_ca_file is for a jwks_url"},
		{"missing CA file", func(h *Handler) {
			h.Partners["demo"].JWKSFile = ""
			h.Partners["demo"].JWKSURL = "https://x.example/j"
			h.Partners["demo"].JWKSCAFile = jwks + ".missing"
		}, "partner demo: jwks_ca_file: open "},
		{"CA file without a certificate", func(h *Handler) {
			h.Partners["demo"].JWKSFile = ""
			h.Partners["demo"].JWKSURL = "https://x.example/j"
			h.Partners["demo"].JWKSCAFile = jwks
		}, "partner demo: jwks_ca_file " + jwks + ": no PEM certificate in the file"},
		{"lifetime over 5m", func(h *Handler) { h.MaxLifetime = caddy.Duration(6 * 60e9) }, "max_lifetime 6m0s"},
		{"partner lifetime over 5m", func(h *Handler) { h.Partners["demo"].MaxLifetime = caddy.Duration(10 * time.Minute) }, "partner demo: max_lifetime 10m0s: at most 5m0s"},
		// The handler's default is checked even where every partner overrides it, as the
		// Caddyfile does.
		{"lifetime over 5m overridden", func(h *Handler) {
			h.MaxLifetime = caddy.Duration(6 * time.Minute)
			h.Partners["demo"].MaxLifetime = caddy.Duration(time.Minute)
		}, "max_lifetime 6m0s: at most 5m0s"},
		{"negative lifetime", func(h *Handler) { h.MaxLifetime = -1 }, "max_lifetime -1ns: must not be negative"},
		{"leeway over 5m", func(h *Handler) { h.Leeway = caddy.Duration(6 * time.Minute) }, "leeway 6m0s: at most 5m0s"},
		{"partner leeway over 5m", func(h *Handler) { h.Partners["demo"].Leeway = caddy.Duration(time.Hour) }, "partner demo: leeway 1h0m0s: at most 5m0s"},
		{"bad kind", func(h *Handler) { h.Partners["demo"].Kinds = []string{"web"} }, `partner demo: kind "web": want main or go`},
		{"origin with a path", func(h *Handler) { h.Partners["demo"].Origins = []string{"https://ehr.acme.example/x"} }, `partner demo: origins "https://ehr.acme.example/x": an origin has no user, path, query or fragment`},
		{"origin not as sent", func(h *Handler) { h.Partners["demo"].Origins = []string{"https://ehr.acme.example:443"} }, `partner demo: origins "https://ehr.acme.example:443": write the origin as a browser sends it in the Origin header: https://ehr.acme.example`},
		{"origin wildcard", func(h *Handler) { h.Partners["demo"].Origins = []string{"https://*.acme.example"} }, `partner demo: origins "https://*.acme.example": no wildcards`},
		{"bad partner name", func(h *Handler) { h.Partners["Demo!"] = &Partner{Issuer: "i", Audience: "b", JWKSFile: jwks} }, `partner name "Demo!"`},
		// Probe finding 7: a token would be accepted once at each partner of the pair.
		{"shared issuer and audience", func(h *Handler) { h.Partners["other"] = good() }, `partners demo and other have the same issuer "i" and audience "a"`},
		{"bad errors mode", func(h *Handler) { h.Errors = "silent" }, `errors "silent": want respond or handle_errors`},
		{"bad header prefix", func(h *Handler) { h.HeaderPrefix = "X:Bad" }, `header_prefix "X:Bad": want a header name prefix of letters, digits and '-', such as X-Partner-`},
		{"unknown field header", func(h *Handler) { h.FieldHeaders = []string{"contact.ssn", "contact.phone"} }, `field_headers "contact.phone": not a payload field; want all, or the JSON paths of payload fields: employeeId, employeeUsername, employeeFirstname, employeeLastname, employeeEmail, organizationName, organizationId, contact.id, contact.birthdate, contact.ssn, contact.gender, contact.firstname, contact.middlename, contact.lastname, contact.mobile, contact.email, contact.diagnosis, caseId`},
		{"empty field header", func(h *Handler) { h.FieldHeaders = []string{""} }, `field_headers "": not a payload field`},
		{"all with a field header", func(h *Handler) { h.FieldHeaders = []string{"caseId", "all"} }, "field_headers caseId all: all stands alone; give all, or the paths without it"},
		{"short secret", func(h *Handler) { h.UpstreamSecret = "short" }, "upstream_secret: shorter than 32 bytes"},
		{"unset secret variable", func(h *Handler) { h.UpstreamSecret = "{env.PARTNERGATE_TEST_UNSET_SECRET}" }, "upstream_secret"},
		{"negative body size", func(h *Handler) { h.MaxBodySize = -1 }, "max_body_size -1: want a size above 0 bytes, such as 8KiB or 8192"},
		{"body size over the token limit", func(h *Handler) { h.MaxBodySize = 16<<10 + 1 }, "max_body_size 16385: at most 16384 bytes (16 KiB), the longest token the verifier reads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{Partners: map[string]*Partner{"demo": good()}, store: &fakeStore{}}
			tt.mod(h)
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			err := h.Provision(ctx)
			if err == nil {
				err = h.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Provision+Validate(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
		})
	}
}

// TestLeeway: zero takes the default, a negative leeway (the Caddyfile's "leeway 0") means
// none, and a partner's own leeway, none included, wins over the handler's.
func TestLeeway(t *testing.T) {
	tests := []struct {
		name             string
		handler, partner caddy.Duration
		want             time.Duration
	}{
		{"default", 0, 0, linktoken.DefaultLeeway},
		{"handler's", caddy.Duration(10 * time.Second), 0, 10 * time.Second},
		{"handler's none", -1, 0, 0},
		{"partner's none over handler's", caddy.Duration(10 * time.Second), -1, 0},
		{"partner's over handler's none", -1, caddy.Duration(5 * time.Second), 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(h *Handler) {
				h.Leeway = tt.handler
				h.Partners["demo"].Leeway = tt.partner
			})
			if got := f.h.partners["demo"].verifier.Rules().Leeway; got != tt.want {
				t.Errorf("leeway (handler %v, partner %v) = %v, want %v", tt.handler, tt.partner, got, tt.want)
			}
		})
	}

	// With none, a token is refused the moment it expires, and its nonce is kept until then.
	f := newFixture(t, func(h *Handler) { h.Leeway = -1 })
	tok := f.token(t, "ES256", harness.Token{Now: f.now.Add(-time.Minute), Lifetime: time.Minute}) // exp == now
	if w, next, _, _ := f.serve(urlRequest("demo", tok)); next.called || w.Code != 401 || !strings.Contains(w.Body.String(), "token_expired") {
		t.Errorf("token at its exp with leeway none: status %d, forwarded %v, want 401 token_expired", w.Code, next.called)
	}
	tok = f.token(t, "ES256", harness.Token{Now: f.now.Add(-time.Minute), Lifetime: time.Minute + time.Second})
	if w, next, _, _ := f.serve(urlRequest("demo", tok)); !next.called {
		t.Fatalf("token one second before its exp with leeway none: status %d, want forwarded", w.Code)
	}
	for _, e := range f.store.seen {
		if want := f.now.Add(time.Second); !e.Until.Equal(want) {
			t.Errorf("nonce kept until %v, want exp %v", e.Until, want)
		}
	}
}

func TestSecretFromEnvironment(t *testing.T) {
	t.Setenv("PARTNERGATE_TEST_SECRET", strings.Repeat("k", 40))
	f := newFixture(t, func(h *Handler) { h.UpstreamSecret = "{env.PARTNERGATE_TEST_SECRET}" })
	if string(f.h.secret) != strings.Repeat("k", 40) {
		t.Errorf("secret = %q, want the environment's value", f.h.secret)
	}
}

// TestMetricsSharedBetweenHandlers shows that two handlers in one configuration share the
// collectors instead of failing on duplicate registration.
func TestMetricsSharedBetweenHandlers(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a, b := newMetrics(reg), newMetrics(reg)
	a.request("demo", "url", "accepted")
	b.request("demo", "url", "accepted")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == "partnergate_requests_total" {
			if got := mf.GetMetric()[0].GetCounter().GetValue(); got != 2 {
				t.Errorf("partnergate_requests_total = %v, want 2 from both handlers", got)
			}
			return
		}
	}
	t.Error("partnergate_requests_total not registered")
}

// TestPartnerRulesAgree: a partner option's rule is one function, so a Caddyfile and the
// JSON it adapts to are refused in the same words; the Caddyfile adds its file and line.
func TestPartnerRulesAgree(t *testing.T) {
	jwks := harness.WriteJWKS(t, t.TempDir(), harness.NewKey(t, "ES256", "k"))
	tests := []struct {
		name  string
		block string // partner demo's options, one a line
		json  Partner
	}{
		{"HS256", "issuer i\naudience a\njwks_file " + jwks + "\nalgorithms RS256 HS256", Partner{Issuer: "i", Audience: "a", JWKSFile: jwks, Algorithms: []string{"RS256", "HS256"}}},
		{"bad kind", "issuer i\naudience a\njwks_file " + jwks + "\nkinds go web", Partner{Issuer: "i", Audience: "a", JWKSFile: jwks, Kinds: []string{"go", "web"}}},
		{"http key url", "issuer i\naudience a\njwks_url http://partner.example/j", Partner{Issuer: "i", Audience: "a", JWKSURL: "http://partner.example/j"}},
		{"missing issuer", "audience a\njwks_file " + jwks, Partner{Audience: "a", JWKSFile: jwks}},
		{"missing audience", "issuer i\njwks_file " + jwks, Partner{Issuer: "i", JWKSFile: jwks}},
		{"missing keys", "issuer i\naudience a", Partner{Issuer: "i", Audience: "a"}},
		{"both key sources", "issuer i\naudience a\njwks_file " + jwks + "\njwks_url https://x.example/j", Partner{Issuer: "i", Audience: "a", JWKSFile: jwks, JWKSURL: "https://x.example/j"}},
		{"origin not as sent", "issuer i\naudience a\njwks_file " + jwks + "\norigins https://ehr.acme.example null HTTP://localhost:8081", Partner{Issuer: "i", Audience: "a", JWKSFile: jwks, Origins: []string{"https://ehr.acme.example", "null", "HTTP://localhost:8081"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fromFile Handler
			cerr := fromFile.UnmarshalCaddyfile(caddyfile.NewTestDispenser("jwt_partner {\npartner demo {\n" + tt.block + "\n}\n}"))
			h := &Handler{Partners: map[string]*Partner{"demo": &tt.json}, store: &fakeStore{}}
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			perr := h.Provision(ctx)
			if cerr == nil || perr == nil {
				t.Fatalf("UnmarshalCaddyfile(%s) = %v, Provision = %v, want both to refuse", tt.name, cerr, perr)
			}
			if want := perr.Error() + ", at Testfile:"; !strings.HasPrefix(cerr.Error(), want) {
				t.Errorf("UnmarshalCaddyfile(%s) = %q, want %q and the line", tt.name, cerr, want)
			}
		})
	}
}

// TestProvisionReportsKeyFile: the Caddyfile adapter only records a jwks_file's path, and
// Provision (which caddy validate runs) refuses a file that does not load, naming the
// partner, the path and the reason.
func TestProvisionReportsKeyFile(t *testing.T) {
	dir := t.TempDir()
	priv := filepath.Join(dir, "private.json")
	privJWK, _ := json.Marshal(map[string]any{"keys": []any{harness.NewKey(t, "ES256", "leaked").PrivateJWK(t)}})
	if err := os.WriteFile(priv, privJWK, 0o600); err != nil {
		t.Fatal(err)
	}
	enc := filepath.Join(dir, "enc.json")
	encJWK := harness.NewKey(t, "ES256", "golden-enc").PublicJWK(t)
	encJWK["use"] = "enc"
	encSet, _ := json.Marshal(map[string]any{"keys": []any{encJWK}})
	if err := os.WriteFile(enc, encSet, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope.json")
	tests := []struct {
		name, path, want string
	}{
		{"missing", missing, "partner demo: jwks_file: reading key set: open " + missing + ": no such file or directory"},
		{"private key", priv, "partner demo: jwks_file: key set " + priv + ": key 0 (kid \"leaked\"): "},
		{"use enc", enc, "partner demo: jwks_file: key set " + enc + `: key 0 (kid "golden-enc"): key has use "enc": only signature keys (use "sig" or no use) are accepted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			input := "jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_file " + tt.path + "\n}\n}"
			if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
				t.Fatalf("UnmarshalCaddyfile(%s) = %v, want the path recorded", tt.name, err)
			}
			h.store = &fakeStore{}
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			err := h.Provision(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Provision(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
		})
	}
}
