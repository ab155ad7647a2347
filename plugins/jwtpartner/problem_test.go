package jwtpartner

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
)

func tokenWith(payload map[string]any) harness.Token { return harness.Token{Payload: payload} }

func TestStatusOf(t *testing.T) {
	tests := map[Code]int{
		CodePartnerUnknown:                404,
		CodeNotFound:                      404,
		CodeMethodNotAllowed:              405,
		CodeUnsupportedMediaType:          415,
		CodeBodyTooLarge:                  413,
		CodeTokenMissing:                  400,
		CodeTokenDuplicated:               400,
		linktoken.CodeTokenMalformed:      400,
		linktoken.CodeHeaderInvalid:       400,
		linktoken.CodeClaimsInvalid:       400,
		linktoken.CodePayloadInvalid:      400,
		linktoken.CodeLifetimeTooLong:     400,
		linktoken.CodeSignatureInvalid:    401,
		linktoken.CodeKeyUnknown:          401,
		linktoken.CodeTokenExpired:        401,
		linktoken.CodeAlgorithmNotAllowed: 401,
		linktoken.CodeKindNotAllowed:      403,
		CodeTokenReplayed:                 409,
		CodeTokenBeforeStoreStart:         409,
		linktoken.CodeKeysUnavailable:     503,
		CodeNonceStoreUnavailable:         503,
		CodeNonceStoreFull:                503,
		CodeInternal:                      500,
	}
	for code, want := range tests {
		if got := statusOf(code); got != want {
			t.Errorf("statusOf(%q) = %d, want %d", code, got, want)
		}
		if titleOf(code) == "Link rejected" {
			t.Errorf("titleOf(%q) has no title of its own", code)
		}
	}
}

func TestHTMLProblemEscapes(t *testing.T) {
	w := httptest.NewRecorder()
	p := Problem{
		Type: problemTypePrefix + "payload_invalid", Title: "Payload invalid", Status: 400,
		Detail:    `<script>alert(1)</script>`,
		Code:      "payload_invalid",
		Fields:    []linkspec.FieldError{{Field: `contact."><img src=x>`, Reason: "<b>bad</b>"}},
		RequestID: `"><svg onload=alert(1)>`,
	}
	if err := writeHTMLProblem(w, p); err != nil {
		t.Fatal(err)
	}
	body := w.Body.String()
	for _, bad := range []string{"<script", "<img", "<svg", "<b>"} {
		if strings.Contains(body, bad) {
			t.Errorf("page contains unescaped %q:\n%s", bad, body)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "payload_invalid", "Payload invalid"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for k, want := range map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
		"X-Content-Type-Options":  "nosniff",
	} {
		if got := w.Header().Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if w.Code != 400 {
		t.Errorf("status = %d, want 400", w.Code)
	}
}

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
