package jwtpartner

import (
	"net/http"
	"strings"
	"testing"

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
