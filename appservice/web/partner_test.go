package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

func TestDecodeClaimsRefusesWhatParsersDisagreeOn(t *testing.T) {
	for _, claims := range []string{
		`{"employeeId":"emp-1","EMPLOYEEID":"emp-admin","contact":{"id":"c1"}}`,
		`{"employeeId":"emp-1","contact":{"id":"c1","ID":"c2"}}`,
		`{"employeeId":"emp-1","contact":"c1"}`,
	} {
		p, fields := decodeClaims(base64.RawURLEncoding.EncodeToString([]byte(claims)))
		if p != nil || len(fields) == 0 {
			t.Errorf("decodeClaims(%s) = %+v, %v; want refused", claims, p, fields)
		}
	}
	p, fields := decodeClaims(base64.RawURLEncoding.EncodeToString([]byte(`{"employeeId":"emp-1","extra":1}`)))
	if fields != nil || p == nil || p.EmployeeID != "emp-1" {
		t.Errorf("decodeClaims(valid) = %+v, %v; want employeeId emp-1", p, fields)
	}
}

func TestAssertionRefused(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, tt := range []struct {
		name   string
		mutate func(r *http.Request)
	}{
		{"no assertion (hand-made headers)", func(r *http.Request) { r.Header.Del("X-Partner-Assertion") }},
		{"assertion signed with another secret", func(r *http.Request) {
			r.Header.Set("X-Partner-Assertion", linkspec.SignAssertion([]byte("another-secret-0123456789abcdef-xyz"), testNow, linkspec.Forwarded{Partner: "demo"}))
		}},
		{"claims changed after signing", func(r *http.Request) {
			p := mainPayload()
			p.Contact.Firstname = "Mallory"
			b, _ := json.Marshal(p)
			r.Header.Set("X-Partner-Claims", base64.RawURLEncoding.EncodeToString(b))
		}},
		{"kind changed after signing", func(r *http.Request) { r.Header.Set("X-Partner-Kind", "go") }},
		{"path names another partner", func(r *http.Request) { r.URL.Path = "/partner/other/url" }},
		{"garbage assertion", func(r *http.Request) { r.Header.Set("X-Partner-Assertion", "v2.x.y") }},
		{"request id changed after signing", func(r *http.Request) { r.Header.Set("X-Partner-Request-Id", "req-other") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := forwardRequest(t, "url", mainPayload(), "main", testNow)
			tt.mutate(r)
			res := serve(f.h, r)
			var p problemBody
			json.Unmarshal([]byte(body(t, res)), &p)
			if res.StatusCode != http.StatusForbidden || p.Code != string(problem.CodeAssertionInvalid) {
				t.Errorf("status, code = %d, %q, want 403, %q", res.StatusCode, p.Code, string(problem.CodeAssertionInvalid))
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q, want application/problem+json", ct)
			}
		})
	}
	t.Run("expired assertion", func(t *testing.T) {
		res := serve(f.h, forwardRequest(t, "url", mainPayload(), "main", testNow.Add(-2*time.Minute)))
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("status = %d, want 403", res.StatusCode)
		}
	})
	t.Run("payload endpoint answers a page", func(t *testing.T) {
		r := forwardRequest(t, "payload", mainPayload(), "main", testNow)
		r.Header.Del("X-Partner-Assertion")
		res := serve(f.h, r)
		b := body(t, res)
		if res.StatusCode != http.StatusForbidden || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(b, string(problem.CodeAssertionInvalid)) {
			t.Errorf("status %d, type %q, body has code %v; want 403 HTML with the code", res.StatusCode, res.Header.Get("Content-Type"), strings.Contains(b, string(problem.CodeAssertionInvalid)))
		}
	})
	res := serve(f.h, forwardRequest(t, "url", mainPayload(), "main", testNow))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("control: a properly forwarded link = %d, want 200", res.StatusCode)
	}
}

// TestAssertionReplayRefused: a forwarded request captured on the way (headers and all)
// and sent again within the assertion's minute mints no second login code.
func TestAssertionReplayRefused(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, endpoint := range []string{"url", "payload"} {
		t.Run(endpoint, func(t *testing.T) {
			first := forwardRequest(t, endpoint, mainPayload(), "main", testNow)
			replay := first.Clone(context.Background())
			if res := serve(f.h, first); res.StatusCode != http.StatusOK {
				t.Fatalf("first request = %d, want 200", res.StatusCode)
			}
			f.now = f.now.Add(30 * time.Second)
			res := serve(f.h, replay)
			b := body(t, res)
			if res.StatusCode != http.StatusConflict || !strings.Contains(b, string(problem.CodeAssertionReplayed)) || strings.Contains(b, "/app/login") {
				t.Errorf("replay = %d %s, want 409 %s without a login URL", res.StatusCode, b, string(problem.CodeAssertionReplayed))
			}
		})
	}
}

func TestPayloadRevalidated(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, tt := range []struct {
		name    string
		payload *linkspec.Payload
		kind    string
		field   string
		// wantKind is the answer's kind: the kind the payload was checked as, none when
		// the gateway's is unknown.
		wantKind string
	}{
		{"kind disagrees with payload", goPayload(), "main", "employeeId", "main"},
		{"missing contact firstname", func() *linkspec.Payload { p := mainPayload(); p.Contact.Firstname = ""; return p }(), "main", "contact.firstname", "main"},
		{"bad birthdate", func() *linkspec.Payload { p := mainPayload(); p.Contact.Birthdate = "1990-02-30"; return p }(), "main", "contact.birthdate", "main"},
		{"go link without contact id", func() *linkspec.Payload { p := goPayload(); p.Contact.ID = ""; return p }(), "go", "contact.id", "go"},
		{"unknown kind", mainPayload(), "desktop", "kind", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := forwardRequest(t, "url", tt.payload, tt.kind, testNow)
			id := r.Header.Get("X-Partner-Request-Id")
			res := serve(f.h, r)
			var p problemBody
			json.Unmarshal([]byte(body(t, res)), &p)
			if res.StatusCode != http.StatusBadRequest || p.Code != string(problem.CodePayloadInvalid) || len(p.Fields) == 0 || p.Fields[0].Field != tt.field {
				t.Errorf("= %d %q %+v, want 400 %q naming %s", res.StatusCode, p.Code, p.Fields, string(problem.CodePayloadInvalid), tt.field)
			}
			if p.Kind != tt.wantKind {
				t.Errorf("kind = %q, want %q, as the gateway's payload_invalid carries it", p.Kind, tt.wantKind)
			}
			if p.RequestID != id || p.Type != "urn:partnergate:problem:payload_invalid" {
				t.Errorf("request_id, type = %q, %q, want the gateway's %q and the problem URN", p.RequestID, p.Type, id)
			}
		})
	}
}

func TestURLAnswer(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	t.Run("text", func(t *testing.T) {
		res := serve(f.h, forwardRequest(t, "url", mainPayload(), "main", testNow))
		b := body(t, res)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") || !loginURL.MatchString(b) {
			t.Errorf("= %d %q %q, want 200 text/plain login URL", res.StatusCode, res.Header.Get("Content-Type"), b)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := forwardRequest(t, "url", mainPayload(), "main", testNow)
		r.Header.Set("Accept", "application/json")
		res := serve(f.h, r)
		var out struct{ URL string }
		json.Unmarshal([]byte(body(t, res)), &out)
		if res.Header.Get("Content-Type") != "application/json" || !loginURL.MatchString(out.URL) {
			t.Errorf("= %q %q, want application/json with a login url", res.Header.Get("Content-Type"), out.URL)
		}
	})
	t.Run("payload page", func(t *testing.T) {
		res := serve(f.h, forwardRequest(t, "payload", mainPayload(), "main", testNow))
		b := body(t, res)
		m := regexp.MustCompile(`<meta http-equiv="refresh" content="0; url=(http://localhost:8080/app/login\?code=[A-Za-z0-9_-]{43})">`).FindStringSubmatch(b)
		if res.StatusCode != 200 || m == nil || !strings.Contains(b, `<a id="continue" href="`+m[1]+`">`) {
			t.Errorf("payload page = %d\n%s\nwant a meta refresh and a link to the login URL", res.StatusCode, b)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self' http://partner.localhost:*") || strings.Contains(csp, "script-src") {
			t.Errorf("CSP = %q, want the configured frame-ancestors and no script source", csp)
		}
	})
}
