package jwtpartner

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
)

func tokenWith(payload map[string]any) harness.Token { return harness.Token{Payload: payload} }

func TestProblemsCarryRequestID(t *testing.T) {
	f := newFixture(t, nil)
	for _, r := range []*http.Request{urlRequest("demo", "x.y.z"), payloadRequest("demo", "payload=x.y.z")} {
		w, _, repl, _ := f.serve(r)
		id, _ := repl.GetString("http.jwt_partner.request_id")
		if id == "" || !strings.Contains(w.Body.String(), id) {
			t.Errorf("%s: body %s lacks the request id %q", r.URL.Path, w.Body, id)
		}
		if w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control = %q, want no-store", r.URL.Path, w.Header().Get("Cache-Control"))
		}
	}
}

// TestProblemsCarryTheVerifierMembers: the verifier's members reach the problem document,
// and the endpoint's own rejections carry none.
func TestProblemsCarryTheVerifierMembers(t *testing.T) {
	f := newFixture(t, nil)
	w, _, _, _ := f.serve(urlRequest("demo", f.token(t, "ES256", harness.Token{Audience: "someone-else"})))
	if p := decodeProblem(t, w); p.Code != "audience_invalid" || p.Expected != testAudience || p.Kind != "" {
		t.Errorf("wrong audience = %+v, want audience_invalid expecting %q", p, testAudience)
	}
	w, _, _, _ = f.serve(urlRequest("demo", f.token(t, "ES256", harness.Token{Lifetime: 10 * time.Minute})))
	if p := decodeProblem(t, w); p.Code != "lifetime_too_long" || p.MaxLifetime != 300 {
		t.Errorf("10 minute token = %+v, want lifetime_too_long with max_lifetime 300", p)
	}
	w, _, _, _ = f.serve(urlRequest("demo", f.token(t, "ES256", harness.Token{Claims: map[string]any{"organizationId": nil}})))
	if p := decodeProblem(t, w); p.Code != "payload_invalid" || p.Kind != "main" || len(p.KindFrom) != 3 {
		t.Errorf("main link without organizationId = %+v, want payload_invalid of kind main from three fields", p)
	}
	w, _, _, _ = f.serve(urlRequest("nobody", "x.y.z"))
	if p := decodeProblem(t, w); p.Code != "partner_unknown" || p.Expected != "" || p.Kind != "" || p.MaxLifetime != 0 {
		t.Errorf("unknown partner = %+v, want no verifier members", p)
	}
}
