package jwtpartner

import (
	"context"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/partnergate/partnergate/integration/harness"
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
		{"HS256", func(h *Handler) { h.Partners["demo"].Algorithms = []string{"HS256"} }, `algorithms: "HS256" is not allowed`},
		{"none", func(h *Handler) { h.Partners["demo"].Algorithms = []string{"none"} }, `algorithms: "none" is not allowed`},
		{"missing issuer", func(h *Handler) { h.Partners["demo"].Issuer = "" }, "partner demo: issuer is required"},
		{"missing audience", func(h *Handler) { h.Partners["demo"].Audience = "" }, "partner demo: audience is required"},
		{"no keys", func(h *Handler) { h.Partners["demo"].JWKSFile = "" }, "no keys"},
		{"both key sources", func(h *Handler) { h.Partners["demo"].JWKSURL = "https://x.example/j" }, "exclusive"},
		{"http key url", func(h *Handler) {
			h.Partners["demo"].JWKSFile = ""
			h.Partners["demo"].JWKSURL = "http://partner.example/jwks.json"
		}, "https"},
		{"missing key file", func(h *Handler) { h.Partners["demo"].JWKSFile = jwks + ".missing" }, "partner demo: jwks_file"},
		{"lifetime over 5m", func(h *Handler) { h.MaxLifetime = caddy.Duration(6 * 60e9) }, "max_lifetime 6m0s"},
		{"bad kind", func(h *Handler) { h.Partners["demo"].Kinds = []string{"web"} }, `kinds: "web"`},
		{"bad partner name", func(h *Handler) { h.Partners["Demo!"] = good() }, `partner name "Demo!"`},
		{"bad errors mode", func(h *Handler) { h.Errors = "silent" }, `errors "silent"`},
		{"bad header prefix", func(h *Handler) { h.HeaderPrefix = "X Partner" }, "header_prefix"},
		{"short secret", func(h *Handler) { h.UpstreamSecret = "short" }, "upstream_secret: shorter than 32 bytes"},
		{"unset secret variable", func(h *Handler) { h.UpstreamSecret = "{env.PARTNERGATE_TEST_UNSET_SECRET}" }, "upstream_secret"},
		{"negative body size", func(h *Handler) { h.MaxBodySize = -1 }, "max_body_size"},
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
