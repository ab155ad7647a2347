package partnerkit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeGateway answers /partner/acme/url with answer after checking the request's shape.
func fakeGateway(t *testing.T, contentType, answer string, status int) (*httptest.Server, *string) {
	t.Helper()
	return fakeEndpoint(t, "url", contentType, answer, status, nil)
}

// fakeEndpoint answers POST /partner/acme/{endpoint} with answer and the headers hdr,
// after checking the request's shape, and records the body it was sent.
func fakeEndpoint(t *testing.T, endpoint, contentType, answer string, status int, hdr http.Header) (*httptest.Server, *string) {
	t.Helper()
	var got string
	path := "/partner/acme/" + endpoint
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path || r.Header.Get("Content-Type") != "text/plain" {
			t.Errorf("request %s %s %s, want POST %s text/plain", r.Method, r.URL.Path, r.Header.Get("Content-Type"), path)
		}
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestClientURL(t *testing.T) {
	tests := []struct {
		name, contentType, answer string
		want                      string
	}{
		{"text", "text/plain; charset=utf-8", "https://app.example/s?code=abc\n", "https://app.example/s?code=abc"},
		{"json", "application/json", `{"url":"https://app.example/s?code=abc"}`, "https://app.example/s?code=abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, body := fakeGateway(t, tt.contentType, tt.answer, 200)
			s := testSigner(t, "ES256")
			c := &Client{Gateway: srv.URL + "/", Partner: "acme", Signer: s}
			got, err := c.URL(context.Background(), goPayload())
			if err != nil || got != tt.want {
				t.Errorf("URL = %q, %v, want %q", got, err, tt.want)
			}
			decode(t, s, *body) // the body is the token, nothing else
		})
	}
}

func TestClientURLRejection(t *testing.T) {
	problem := `{"type":"about:blank","title":"Bad Request","status":400,"detail":"the payload does not match its table",
		"code":"payload_invalid","fields":[{"field":"contact.email","reason":"required"}],"request_id":"r-1"}`
	srv, _ := fakeGateway(t, "application/problem+json", problem, 400)
	c := &Client{Gateway: srv.URL, Partner: "acme", Signer: testSigner(t, "ES256")}
	_, err := c.URL(context.Background(), goPayload())
	var rej *Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("URL error = %v (%T), want *Rejection", err, err)
	}
	if rej.Status != 400 || rej.Code != "payload_invalid" || rej.RequestID != "r-1" || len(rej.Fields) != 1 || rej.Fields[0].Field != "contact.email" {
		t.Errorf("Rejection = %+v, want 400 payload_invalid r-1 contact.email", rej)
	}
	if !strings.Contains(rej.Error(), "payload_invalid") || !strings.Contains(rej.Error(), "contact.email: required") {
		t.Errorf("Rejection.Error() = %q, want code and field", rej.Error())
	}
}

func TestClientURLRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(503)
		io.WriteString(w, `{"status":503,"code":"nonce_store_unavailable"}`)
	}))
	defer srv.Close()
	c := &Client{Gateway: srv.URL, Partner: "acme", Signer: testSigner(t, "ES256")}
	_, err := c.URL(context.Background(), goPayload())
	var rej *Rejection
	if !errors.As(err, &rej) || rej.Code != "nonce_store_unavailable" || rej.RetryAfter != 5*time.Second {
		t.Errorf("URL (503) = %+v, want nonce_store_unavailable with RetryAfter 5s", err)
	}
}

func TestClientURLOddAnswers(t *testing.T) {
	tests := []struct {
		name, contentType, answer string
		status                    int
		want                      string
	}{
		{"not a url", "text/plain", "hello", 200, "not an absolute"},
		{"javascript url", "text/plain", "javascript:alert(1)", 200, "not an absolute"},
		{"json without url", "application/json", `{"link":"x"}`, 200, "not an absolute"},
		{"bad gateway", "text/html", "<h1>oops</h1>", 502, "502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := fakeGateway(t, tt.contentType, tt.answer, tt.status)
			c := &Client{Gateway: srv.URL, Partner: "acme", Signer: testSigner(t, "ES256")}
			got, err := c.URL(context.Background(), goPayload())
			var rej *Rejection
			if err == nil || errors.As(err, &rej) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("URL = %q, %v, want a plain error containing %q", got, err, tt.want)
			}
		})
	}
}

func TestClientEndpoint(t *testing.T) {
	tests := []struct {
		gateway, partner, want string
	}{
		{"https://sso.example.com", "acme", "https://sso.example.com/partner/acme/payload"},
		{"https://sso.example.com/base/", "acme", "https://sso.example.com/base/partner/acme/payload"},
		{"sso.example.com", "acme", ""},
		{"https://sso.example.com", "a/b", ""},
		{"https://sso.example.com", "", ""},
	}
	for _, tt := range tests {
		c := &Client{Gateway: tt.gateway, Partner: tt.partner}
		got, err := c.Endpoint("payload")
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("Endpoint(%q, %q) = %q, %v, want %q", tt.gateway, tt.partner, got, err, tt.want)
		}
	}
}

func TestFormPage(t *testing.T) {
	s := testSigner(t, "ES256")
	c := &Client{Gateway: "https://sso.example.com", Partner: "acme", Signer: s}
	page, err := c.FormPage(goPayload())
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{
		`<form id="link" method="post" action="https://sso.example.com/partner/acme/payload">`,
		`<input type="hidden" name="payload" value="ey`,
		`document.getElementById("link").submit()`,
		`expires at 2026-03-01T12:02:00Z`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("FormPage lacks %q:\n%s", want, html)
		}
	}
	start := strings.Index(html, `name="payload" value="`) + len(`name="payload" value="`)
	tok := html[start : start+strings.IndexByte(html[start:], '"')]
	decode(t, s, tok)

	evil, err := FormPageFor(`https://x.example/"><script>`, `a"b`, "soon")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(evil), `"><script>`) || strings.Contains(string(evil), `value="a"b"`) {
		t.Errorf("FormPageFor does not escape its inputs:\n%s", evil)
	}
}

// TestClientDryRun: DryRun posts the token as text/plain to /partner/{name}/check and
// reads the gateway's report, or its refusal as a *Rejection; any other answer is an error.
func TestClientDryRun(t *testing.T) {
	const report = `{"verdict":"rejected","code":"issuer_invalid","status":401,"detail":"wrong issuer","expected":"https://acme.example",
		"rules":[{"id":"A-AUTH-9","text":"iss is the partner's issuer","result":"failed","code":"issuer_invalid"}],"request_id":"r-9"}`
	tests := []struct {
		name, contentType, answer string
		status                    int
		retryAfter                string
		check                     func(t *testing.T, r *Report, err error)
	}{
		{"report", "application/json", report, 200, "", func(t *testing.T, r *Report, err error) {
			if err != nil || r.Accepted || r.Code != "issuer_invalid" || r.Expected != "https://acme.example" || r.RequestID != "r-9" ||
				len(r.Steps) != 1 || r.Steps[0].Outcome != Failed || r.Steps[0].RuleID != "A-AUTH-9" {
				t.Errorf("DryRun = %+v, %v, want the rejected report with its rule and request id", r, err)
			}
		}},
		{"off", "application/problem+json", `{"status":404,"code":"not_found","request_id":"r-1"}`, 404, "", func(t *testing.T, r *Report, err error) {
			var rej *Rejection
			if !errors.As(err, &rej) || rej.Code != "not_found" || rej.Status != 404 || r != nil {
				t.Errorf("DryRun (off) = %+v, %v, want a not_found *Rejection", r, err)
			}
		}},
		{"rate limited", "application/problem+json", `{"status":429,"code":"dry_run_rate_limited"}`, 429, "7", func(t *testing.T, r *Report, err error) {
			var rej *Rejection
			if !errors.As(err, &rej) || rej.Code != "dry_run_rate_limited" || rej.RetryAfter != 7*time.Second {
				t.Errorf("DryRun (429) = %v, want dry_run_rate_limited with RetryAfter 7s", err)
			}
		}},
		{"html", "text/html", "<p>hello</p>", 200, "", func(t *testing.T, r *Report, err error) {
			if err == nil || !strings.Contains(err.Error(), "not a JSON report") {
				t.Errorf("DryRun (html) = %+v, %v, want a not-a-JSON-report error", r, err)
			}
		}},
		{"bad verdict", "application/json", `{"verdict":"maybe","rules":[]}`, 200, "", func(t *testing.T, r *Report, err error) {
			if err == nil {
				t.Errorf("DryRun (verdict maybe) = %+v, want an error", r)
			}
		}},
		{"server error", "text/plain", "oops", 500, "", func(t *testing.T, r *Report, err error) {
			if err == nil || !strings.Contains(err.Error(), "500") {
				t.Errorf("DryRun (500) = %+v, %v, want an error naming the status", r, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr http.Header
			if tt.retryAfter != "" {
				hdr = http.Header{"Retry-After": {tt.retryAfter}}
			}
			srv, got := fakeEndpoint(t, "check", tt.contentType, tt.answer, tt.status, hdr)
			c := &Client{Gateway: srv.URL, Partner: "acme"}
			r, err := c.DryRun(context.Background(), "a.b.c")
			tt.check(t, r, err)
			if *got != "a.b.c" {
				t.Errorf("the gateway got body %q, want the token", *got)
			}
		})
	}
}
