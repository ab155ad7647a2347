package problem_test

import (
	"encoding/json"
	"html/template"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/problem"
)

func TestStatus(t *testing.T) {
	tests := map[problem.Code]int{
		problem.CodePartnerUnknown:        404,
		problem.CodeNotFound:              404,
		problem.CodeMethodNotAllowed:      405,
		problem.CodeUnsupportedMediaType:  415,
		problem.CodeBodyTooLarge:          413,
		problem.CodeTokenMissing:          400,
		problem.CodeTokenDuplicated:       400,
		problem.CodeTokenMalformed:        400,
		problem.CodeHeaderInvalid:         400,
		problem.CodeClaimsInvalid:         400,
		problem.CodeTimeInMilliseconds:    400,
		problem.CodePayloadInvalid:        400,
		problem.CodeLifetimeTooLong:       400,
		problem.CodeSignatureInvalid:      401,
		problem.CodeKeyUnknown:            401,
		problem.CodeTokenExpired:          401,
		problem.CodeAlgorithmNotAllowed:   401,
		problem.CodeKindNotAllowed:        403,
		problem.CodeTokenReplayed:         409,
		problem.CodeTokenBeforeStoreStart: 409,
		problem.CodeKeysUnavailable:       503,
		problem.CodeNonceStoreUnavailable: 503,
		problem.CodeNonceStoreFull:        503,
		problem.CodeInternal:              500,
		problem.CodeDryRunRateLimited:     429,
		problem.CodeUpstreamUnavailable:   502,
		problem.CodeAssertionInvalid:      403,
		problem.CodeAssertionReplayed:     409,
		problem.CodeLoginCodeInvalid:      400,
		problem.CodeLoginCodeUsed:         410,
		problem.CodeLoginCodeExpired:      410,
		problem.CodeCSRFInvalid:           403,
		problem.CodeSessionRequired:       401,
		problem.CodeOriginForbidden:       403,
		problem.CodeInvalidArgument:       400,
		problem.CodeRoleForbidden:         403,
		problem.CodeOrganizationRequired:  403,
		problem.CodeUnavailable:           503,
	}
	for code, want := range tests {
		if got := problem.Status(code); got != want {
			t.Errorf("Status(%q) = %d, want %d", code, got, want)
		}
	}
}

// TestEveryCodeHasATitle covers the verifier's codes too, which the table spells as strings
// until their constants move into this package.
func TestEveryCodeHasATitle(t *testing.T) {
	for _, c := range []problem.Code{
		problem.CodeNotFound, problem.CodePartnerUnknown, problem.CodeMethodNotAllowed,
		problem.CodeUnsupportedMediaType, problem.CodeBodyTooLarge, problem.CodeBodyUnreadable,
		problem.CodeTokenMissing, problem.CodeTokenDuplicated, problem.CodeTokenInQuery,
		problem.CodeTokenReplayed, problem.CodeTokenBeforeStoreStart,
		problem.CodeNonceStoreUnavailable, problem.CodeNonceStoreFull, problem.CodeInternal,
		problem.CodeDryRunRateLimited, problem.CodeUpstreamUnavailable,
		problem.CodeAssertionInvalid, problem.CodeAssertionReplayed, problem.CodeLoginCodeInvalid,
		problem.CodeLoginCodeUsed, problem.CodeLoginCodeExpired, problem.CodeCSRFInvalid,
		problem.CodeSessionRequired, problem.CodeOriginForbidden, problem.CodeInvalidArgument,
		problem.CodeRoleForbidden, problem.CodeOrganizationRequired, problem.CodeUnavailable,
		problem.CodeTokenMalformed, problem.CodeHeaderInvalid,
		problem.CodeAlgorithmNotAllowed, problem.CodeKeyIDMissing,
		problem.CodeKeyUnknown, problem.CodeKeysUnavailable,
		problem.CodeSignatureInvalid, problem.CodeClaimsInvalid, problem.CodeTimeInMilliseconds,
		problem.CodeIssuerInvalid, problem.CodeAudienceInvalid,
		problem.CodeLifetimeTooLong, problem.CodeTokenNotYetValid,
		problem.CodeTokenExpired, problem.CodeNonceMissing,
		problem.CodeNonceInvalid, problem.CodePayloadInvalid,
		problem.CodeKindNotAllowed,
	} {
		if problem.Title(c) == "Link rejected" {
			t.Errorf("Title(%q) has no title of its own", c)
		}
	}
}

// TestJSONShape pins the document's bytes: partners parse it.
func TestJSONShape(t *testing.T) {
	p := problem.New(problem.CodePayloadInvalid, "the payload is not valid")
	p.Fields = []problem.FieldError{{Field: "contact.firstname", Reason: "missing"}}
	p.RequestID = "r1"
	w := httptest.NewRecorder()
	if err := problem.WriteJSON(w, p); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"urn:partnergate:problem:payload_invalid","title":"Payload invalid","status":400,"detail":"the payload is not valid","code":"payload_invalid","fields":[{"field":"contact.firstname","reason":"missing"}],"request_id":"r1"}`
	if got := w.Body.String(); got != want {
		t.Errorf("WriteJSON = %s, want %s", got, want)
	}
	if w.Code != 400 || w.Header().Get("Content-Type") != "application/problem+json" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("status %d, headers %v; want 400 problem+json nosniff", w.Code, w.Header())
	}
	var back problem.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &back); err != nil || back.Code != "payload_invalid" {
		t.Errorf("decoding = %+v, %v", back, err)
	}
}

// TestJSONExtensionMembers pins the members that say what was expected and which link
// kind was read, and that they are absent where a code has none.
func TestJSONExtensionMembers(t *testing.T) {
	aud := problem.New(problem.CodeAudienceInvalid, "d")
	aud.Expected = "svc-link"
	life := problem.New(problem.CodeLifetimeTooLong, "d")
	life.MaxLifetime = 300
	kind := problem.New(problem.CodePayloadInvalid, "d")
	kind.Kind, kind.KindFrom = "main", []string{"employeeFirstname", "employeeLastname"}
	goKind := problem.New(problem.CodeKindNotAllowed, "d")
	goKind.Kind = "go"
	for _, tt := range []struct {
		p    problem.Problem
		want string
	}{
		{aud, `"code":"audience_invalid","expected":"svc-link"}`},
		{life, `"code":"lifetime_too_long","max_lifetime":300}`},
		{kind, `"code":"payload_invalid","kind":"main","kind_from":["employeeFirstname","employeeLastname"]}`},
		{goKind, `"code":"kind_not_allowed","kind":"go"}`},
		{problem.New(problem.CodeTokenExpired, "d"), `"code":"token_expired"}`},
	} {
		w := httptest.NewRecorder()
		if err := problem.WriteJSON(w, tt.p); err != nil {
			t.Fatal(err)
		}
		if got := w.Body.String(); !strings.HasSuffix(got, tt.want) {
			t.Errorf("WriteJSON(%s) = %s, want it to end in %s", tt.p.Code, got, tt.want)
		}
	}
}

func TestPageEscapes(t *testing.T) {
	w := httptest.NewRecorder()
	p := problem.Problem{
		Type: problem.TypePrefix + "payload_invalid", Title: "Payload invalid", Status: 400,
		Detail:    `<script>alert(1)</script>`,
		Code:      "payload_invalid",
		Fields:    []problem.FieldError{{Field: `contact."><img src=x>`, Reason: "<b>bad</b>"}},
		RequestID: `"><svg onload=alert(1)>`,
	}
	if err := problem.WritePage(w, p, nil, nil); err != nil {
		t.Fatal(err)
	}
	body := w.Body.String()
	for _, bad := range []string{"<script", "<img", "<svg", "<b>"} {
		if strings.Contains(body, bad) {
			t.Errorf("page contains unescaped %q:\n%s", bad, body)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "payload_invalid", "Payload invalid", "<style>", "The link could not be opened: "} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for k, want := range map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := w.Header().Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if w.Code != 400 {
		t.Errorf("status = %d, want 400", w.Code)
	}
}

// TestParsePageInLayout shows the page inside a service's layout: the service's
// problem_head, problem_detail and problem_foot replace the standalone parts.
func TestParsePageInLayout(t *testing.T) {
	tmpl := template.Must(problem.ParsePage(template.New("")))
	template.Must(tmpl.Parse(`{{define "problem_head"}}<main title="{{.}}">{{end}}` +
		`{{define "problem_detail"}}<p class="error">{{.Detail}}</p>{{end}}{{define "problem_foot"}}</main>{{end}}`))
	var b strings.Builder
	p := problem.New(problem.CodeLoginCodeUsed, "Used already.")
	if err := tmpl.ExecuteTemplate(&b, "problem", p); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{`<main title="Link already used">`, `<p class="error">Used already.</p>`, `Error code <code id="code">login_code_used</code> (HTTP 410)`, "</main>"} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<style>") || strings.Contains(got, "could not be opened") {
		t.Errorf("page keeps a standalone part:\n%s", got)
	}
}

// TestWritePageFramed: the page may be framed by the pages a partner's forms come from,
// and by nothing else (issue 25: the gateway's /payload page had no frame-ancestors).
func TestWritePageFramed(t *testing.T) {
	for _, tt := range []struct {
		ancestors []string
		csp, xfo  string
	}{
		{nil, "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'", "DENY"},
		{[]string{"https://ehr.acme.example"}, "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors https://ehr.acme.example", ""},
		{[]string{"https://a.example", "http://localhost:8081"}, "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors https://a.example http://localhost:8081", ""},
	} {
		w := httptest.NewRecorder()
		if err := problem.WritePage(w, problem.New(problem.CodeTokenExpired, "expired"), tt.ancestors, nil); err != nil {
			t.Fatal(err)
		}
		if got := w.Header().Get("Content-Security-Policy"); got != tt.csp {
			t.Errorf("WritePage(%q) CSP = %q, want %q", tt.ancestors, got, tt.csp)
		}
		if got := w.Header().Get("X-Frame-Options"); got != tt.xfo {
			t.Errorf("WritePage(%q) X-Frame-Options = %q, want %q", tt.ancestors, got, tt.xfo)
		}
		if w.Code != 401 || !strings.Contains(w.Body.String(), "token_expired") {
			t.Errorf("WritePage(%q) = %d %s", tt.ancestors, w.Code, w.Body)
		}
	}
}
