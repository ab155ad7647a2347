package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	validator "github.com/pb33f/libopenapi-validator"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/harness/appstack"
	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/internal/testpayload"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
)

// answerChecker validates the gateway's real answers against the document.
type answerChecker struct {
	v        validator.Validator
	byStatus map[int][]string
	compiler *jsonschema.Compiler
}

func newAnswerChecker(t *testing.T) *answerChecker {
	return &answerChecker{v: newValidator(t), byStatus: documentedCodes(t, documentTree(t)), compiler: schemaCompiler(t)}
}

// pageCode reads the code and the status from the refusal page (problem/page.html).
var pageCode = regexp.MustCompile(`<code id="code">([a-z0-9_]+)</code> \(HTTP (\d{3})\)`)

// check validates resp, the answer to req, against the operation of req's path: status,
// headers, media type and body. A refusal's code must be one the document lists under the
// answer's status, for the page too, whose body no schema describes. It returns the code.
func (a *answerChecker) check(t *testing.T, req *http.Request, resp *harness.Response) string {
	t.Helper()
	ok, errs := a.v.ValidateHttpResponse(req, httpResponse(req, resp))
	if !ok {
		for _, e := range errs {
			t.Errorf("%s %s answered %d: %s: %s", req.Method, req.URL.Path, resp.StatusCode, e.Message, e.Reason)
			for _, s := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s", s.Reason, s.FieldPath)
			}
		}
	}
	if resp.StatusCode < 400 {
		return ""
	}
	code := a.refusalCode(t, resp)
	if code != "" && !slices.Contains(a.byStatus[resp.StatusCode], code) {
		t.Errorf("%s %s answered %d %s, which the document does not list under %d", req.Method, req.URL.Path, resp.StatusCode, code, resp.StatusCode)
	}
	return code
}

// refusalCode reads the code of a refusal, from the problem document or the page.
func (a *answerChecker) refusalCode(t *testing.T, resp *harness.Response) string {
	t.Helper()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		m := pageCode.FindSubmatch(resp.Body)
		if m == nil {
			t.Errorf("the %d page carries no code: %s", resp.StatusCode, resp.Body)
			return ""
		}
		if string(m[2]) != fmt.Sprint(resp.StatusCode) {
			t.Errorf("the page says HTTP %s, the answer is %d", m[2], resp.StatusCode)
		}
		return string(m[1])
	}
	var p struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(resp.Body, &p); err != nil {
		t.Errorf("the %d answer is no JSON: %v", resp.StatusCode, err)
	}
	return p.Code
}

// checkSchema validates a problem document that no operation describes (another method,
// another path) against the document's schema of its status.
func (a *answerChecker) checkSchema(t *testing.T, resp *harness.Response, schema string) {
	t.Helper()
	s, err := a.compiler.Compile(documentID + "#/components/schemas/" + schema)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(resp.Body))
	if err != nil {
		t.Fatalf("the answer is no JSON: %v", err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("the %d answer does not fit %s: %v", resp.StatusCode, schema, err)
	}
}

// httpResponse is resp with its body readable again, for the validator.
func httpResponse(req *http.Request, resp *harness.Response) *http.Response {
	r := *resp.Response
	r.Body = io.NopCloser(bytes.NewReader(resp.Body))
	r.Request = req
	return &r
}

// post sends body to path with contentType and returns the request (with its body readable
// again) and the answer.
func post(t *testing.T, g *harness.Caddy, path, contentType, body string, header http.Header) (*http.Request, *harness.Response) {
	t.Helper()
	resp := g.Post(t, path, contentType, body, header)
	req, err := http.NewRequest(http.MethodPost, g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", contentType)
	return req, resp
}

// form is the /payload body carrying tok.
func form(tok string) string { return url.Values{"payload": {tok}}.Encode() }

// TestGatewayRefusalsFitTheDocument posts every rejection case of the casebook to both
// endpoints of a real gateway, and the refusals that come before the token (media type,
// body size, the form, the query, an unknown partner, another method or path, a replay, a
// key set that cannot load), and validates each answer against docs/openapi.yaml.
//
// Each case's token is issued so that the moment it is meant to be read at is the real
// now, as in integration/gateway's casebook test; which code the gateway answers is that
// test's business, here only whether the answer fits the document. An answer the recording
// upstream gave (a token the endpoint's trim makes valid) is no answer of the service and
// is counted apart.
func TestGatewayRefusalsFitTheDocument(t *testing.T) {
	a := newAnswerChecker(t)
	base := time.Now()
	cases := linktokentest.RejectionsAt(base)
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, jwttest.StandardSetJSON(t), 0o644); err != nil {
		t.Fatal(err)
	}
	keysDown := harness.NewJWKSServer(t)
	keysDown.SetDown(true)
	up := harness.NewUpstream(t)

	// One handler per rule set: partners of one handler may not share an issuer and
	// audience.
	partnerOf := map[string]string{}
	var routes strings.Builder
	route := func(name string, lines []string) {
		fmt.Fprintf(&routes, "\troute /partner/%s/* {\n\t\tjwt_partner {\n%s\t\t}\n\t\treverse_proxy %s\n\t}\n",
			name, harness.PartnerBlock(name, lines...), up.Addr())
	}
	for _, c := range cases {
		key := fmt.Sprintf("%+v", c.Rules)
		if _, ok := partnerOf[key]; !ok {
			name := fmt.Sprintf("rules%d", len(partnerOf))
			partnerOf[key] = name
			route(name, linktokentest.CaddyfileLines(jwks, c.Rules))
		}
	}
	route("keysdown", []string{"jwks_url " + keysDown.JWKSURL(), "issuer " + jwttest.Issuer, "audience keysdown"})
	// A partner whose upstream is down (nothing listens there): upstream_unavailable.
	fmt.Fprintf(&routes, "\troute /partner/upstreamdown/* {\n\t\tjwt_partner {\n%s\t\t}\n\t\treverse_proxy 127.0.0.1:%d\n\t}\n",
		harness.PartnerBlock("upstreamdown", "jwks_file "+jwks, "issuer "+jwttest.Issuer, "audience upstreamdown"), freeport.For(t))
	// A partner that registered the origins of its form pages: origin_not_allowed.
	route("formsonly", []string{"jwks_file " + jwks, "issuer " + jwttest.Issuer, "audience formsonly", "origins https://ehr.partner.example"})
	// Every other path under /partner/ reaches a handler without such a partner (Caddy
	// tries the longer path matchers first).
	fmt.Fprintf(&routes, "\troute /partner/* {\n\t\tjwt_partner {\n%s\t\t}\n\t\treverse_proxy %s\n\t}\n",
		harness.PartnerBlock("other", "jwks_file "+jwks, "issuer "+jwttest.Issuer, "audience other"), up.Addr())
	g := harness.StartCaddy(t, harness.Config{
		Caddyfile: "{\n\tadmin {{.Admin}}\n}\n\nhttp://127.0.0.1:{{.Port}} {\n{{.Vars.routes}}}\n",
		Vars:      map[string]string{"routes": routes.String()},
	})

	fromUpstream := 0
	for i, c := range cases {
		offset := c.Now.Sub(base)
		name := partnerOf[fmt.Sprintf("%+v", c.Rules)]
		t.Run(c.Name, func(t *testing.T) {
			tok := linktokentest.RejectionsAt(time.Now().Add(-offset))[i].Token(t)
			for _, ep := range []struct{ path, contentType, body string }{
				{"/partner/" + name + "/url", "text/plain", tok},
				{"/partner/" + name + "/payload", "application/x-www-form-urlencoded", form(tok)},
			} {
				req, resp := post(t, g, ep.path, ep.contentType, ep.body, nil)
				if resp.StatusCode == http.StatusOK {
					fromUpstream++
					continue
				}
				a.check(t, req, resp)
			}
		})
	}
	if n := len(up.Requests()); n != fromUpstream {
		t.Errorf("the upstream recorded %d requests, the test counted %d answers from it", n, fromUpstream)
	}
	t.Logf("%d casebook cases on both endpoints; %d answers came from the recording upstream", len(cases), fromUpstream)

	// The refusals that come before the token. A valid token of the partner with the
	// default rules, with a nonce of its own, is sent twice for the replay.
	plain := partnerOf[fmt.Sprintf("%+v", linktoken.Rules{Issuer: jwttest.Issuer, Audience: jwttest.Audience})]
	claims := jwttest.MainClaimsAt(time.Now())
	claims["nonce"] = "contract-test-replayed-nonce-0001"
	valid := jwttest.Token(t, linktoken.RS256, "rsa-1", claims)
	keysDownToken := func() string {
		c := jwttest.MainClaimsAt(time.Now())
		c["aud"] = "keysdown"
		return jwttest.Token(t, linktoken.RS256, "rsa-1", c)
	}
	upstreamDownToken := func(nonce string) string {
		c := jwttest.MainClaimsAt(time.Now())
		c["aud"], c["nonce"] = "upstreamdown", "contract-test-upstream-down-"+nonce
		return jwttest.Token(t, linktoken.RS256, "rsa-1", c)
	}
	big := strings.Repeat("A", 17<<10)
	for _, tt := range []struct {
		name, path, contentType, body string
		header                        http.Header
		status                        int
		code                          string
	}{
		{"url, JSON media type", "/partner/" + plain + "/url", "application/json", valid, nil, 415, "unsupported_media_type"},
		{"payload, text media type", "/partner/" + plain + "/payload", "text/plain", valid, nil, 415, "unsupported_media_type"},
		{"url, body over the limit", "/partner/" + plain + "/url", "text/plain", big, nil, 413, "body_too_large"},
		{"payload, body over the limit", "/partner/" + plain + "/payload", "application/x-www-form-urlencoded", "payload=" + big, nil, 413, "body_too_large"},
		{"url, empty body", "/partner/" + plain + "/url", "text/plain", "", nil, 400, "token_missing"},
		{"url, token in the query", "/partner/" + plain + "/url?token=abc", "text/plain", valid, nil, 400, "token_in_query"},
		{"payload, no payload field", "/partner/" + plain + "/payload", "application/x-www-form-urlencoded", "token=abc", nil, 400, "token_missing"},
		{"payload, two payload fields", "/partner/" + plain + "/payload", "application/x-www-form-urlencoded", form(valid) + "&" + form(valid), nil, 400, "token_duplicated"},
		{"url, unknown partner", "/partner/nobody/url", "text/plain", valid, nil, 404, "partner_unknown"},
		{"payload, unknown partner", "/partner/nobody/payload", "application/x-www-form-urlencoded", form(valid), nil, 404, "partner_unknown"},
		{"url, key set not loaded", "/partner/keysdown/url", "text/plain", keysDownToken(), nil, 503, "keys_unavailable"},
		{"payload, key set not loaded", "/partner/keysdown/payload", "application/x-www-form-urlencoded", form(keysDownToken()), nil, 503, "keys_unavailable"},
		{"url, upstream down", "/partner/upstreamdown/url", "text/plain", upstreamDownToken("url"), nil, 502, "upstream_unavailable"},
		{"payload, upstream down", "/partner/upstreamdown/payload", "application/x-www-form-urlencoded", form(upstreamDownToken("payload")), nil, 502, "upstream_unavailable"},
		{"payload, form from another site", "/partner/formsonly/payload", "application/x-www-form-urlencoded", form(valid), http.Header{"Origin": {"http://evil.example"}}, 403, "origin_not_allowed"},
		{"url, first use", "/partner/" + plain + "/url", "text/plain", valid, nil, 200, ""},
		{"url, replayed", "/partner/" + plain + "/url", "text/plain", valid, nil, 409, "token_replayed"},
		{"payload, replayed", "/partner/" + plain + "/payload", "application/x-www-form-urlencoded", form(valid), nil, 409, "token_replayed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, resp := post(t, g, tt.path, tt.contentType, tt.body, tt.header)
			if resp.StatusCode != tt.status {
				t.Fatalf("POST %s answered %d (%s), want %d %s", tt.path, resp.StatusCode, resp.Body, tt.status, tt.code)
			}
			if tt.status == http.StatusOK {
				return // the recording upstream's answer
			}
			if code := a.check(t, req, resp); code != tt.code {
				t.Errorf("POST %s answered %s, want %s", tt.path, code, tt.code)
			}
		})
	}

	// No operation describes these: the document's schemas of their status do.
	t.Run("another method", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, g.URL+"/partner/"+plain+"/url", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp := harness.Do(t, req)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
			t.Fatalf("GET answered %d with Allow %q, want 405 with Allow POST", resp.StatusCode, resp.Header.Get("Allow"))
		}
		a.checkSchema(t, resp, "Problem405")
	})
	t.Run("another path", func(t *testing.T) {
		_, resp := post(t, g, "/partner/"+plain+"/link", "text/plain", valid, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("POST /partner/%s/link answered %d, want 404", plain, resp.StatusCode)
		}
		a.checkSchema(t, resp, "Problem404")
	})
}

// TestAcceptedLinksFitTheDocument sends a valid link through the gateway to the real app
// service, on both endpoints and in both of /url's media types, and validates the request
// and the answer against docs/openapi.yaml.
func TestAcceptedLinksFitTheDocument(t *testing.T) {
	a := newAnswerChecker(t)
	const iss, aud = "https://partner.example", "partnergate-contract"
	s := appstack.Start(t, appstack.Config{Issuer: iss, Audience: aud, KeyID: "contract-1", Password: "contract-test-password"})
	mint := func(payload map[string]any) string {
		return s.Key.Sign(t, harness.Token{Issuer: iss, Audience: aud, Payload: payload})
	}
	for _, tt := range []struct {
		name, endpoint string
		payload        map[string]any
		accept         string
		contentType    string
	}{
		{"url, main link", "url", testpayload.Main(), "", "text/plain"},
		{"url, go link", "url", testpayload.Go(), "", "text/plain"},
		{"url, main link as JSON", "url", testpayload.Main(), "application/json", "application/json"},
		{"payload, main link", "payload", testpayload.Main(), "", "text/html"},
		{"payload, go link", "payload", testpayload.Go(), "", "text/html"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := mint(tt.payload)
			var header http.Header
			if tt.accept != "" {
				header = http.Header{"Accept": {tt.accept}}
			}
			path, ct, body := "/partner/demo/url", "text/plain", tok
			if tt.endpoint == "payload" {
				path, ct, body = "/partner/demo/payload", "application/x-www-form-urlencoded", form(tok)
			}
			req, resp := post(t, s.Gateway, path, ct, body, header)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.contentType) {
				t.Fatalf("POST %s answered %d %s (%s), want 200 %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Body, tt.contentType)
			}
			if ok, errs := a.v.ValidateHttpRequest(req); !ok {
				for _, e := range errs {
					t.Errorf("the request does not fit the document: %s: %s", e.Message, e.Reason)
				}
			}
			req.Body = io.NopCloser(strings.NewReader(body))
			a.check(t, req, resp)
		})
	}
}

// TestDryRunFitsTheDocument sends a valid and a refused token to the dry-run endpoint of a
// partner with dry_run on (two runs, refilled per hour), then a third over the rate, and
// validates the requests and the answers against docs/openapi.yaml.
func TestDryRunFitsTheDocument(t *testing.T) {
	a := newAnswerChecker(t)
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, jwttest.StandardSetJSON(t), 0o644); err != nil {
		t.Fatal(err)
	}
	up := harness.NewUpstream(t)
	lines := append(linktokentest.CaddyfileLines(jwks, linktoken.Rules{Issuer: jwttest.Issuer, Audience: jwttest.Audience}), "dry_run 2/1h")
	g := harness.StartCaddy(t, harness.Config{
		Caddyfile: "{\n\tadmin {{.Admin}}\n}\n\nhttp://127.0.0.1:{{.Port}} {\n\troute /partner/* {\n\t\tjwt_partner {\n{{.Vars.partner}}\t\t}\n\t\treverse_proxy {{.Vars.upstream}}\n\t}\n}\n",
		Vars:      map[string]string{"partner": harness.PartnerBlock("trial", lines...), "upstream": up.Addr()},
	})
	valid := jwttest.Token(t, linktoken.RS256, "rsa-1", jwttest.MainClaimsAt(time.Now()))
	wrongAudience := jwttest.MainClaimsAt(time.Now())
	wrongAudience["aud"] = "someone-else"
	for _, tt := range []struct {
		name, token, verdict string
		status               int
	}{
		{"valid token", valid, "accepted", http.StatusOK},
		{"wrong audience", jwttest.Token(t, linktoken.RS256, "rsa-1", wrongAudience), "rejected", http.StatusOK},
		{"over the rate", valid, "", http.StatusTooManyRequests},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, resp := post(t, g, "/partner/trial/check", "text/plain", tt.token, nil)
			if resp.StatusCode != tt.status {
				t.Fatalf("POST /check answered %d (%s), want %d", resp.StatusCode, resp.Body, tt.status)
			}
			if ok, errs := a.v.ValidateHttpRequest(req); !ok {
				for _, e := range errs {
					t.Errorf("the request does not fit the document: %s: %s", e.Message, e.Reason)
				}
			}
			req.Body = io.NopCloser(strings.NewReader(tt.token))
			code := a.check(t, req, resp)
			if tt.status == http.StatusTooManyRequests {
				if code != "dry_run_rate_limited" {
					t.Errorf("over the rate answered %s, want dry_run_rate_limited", code)
				}
				return
			}
			var report struct{ Verdict string }
			if err := json.Unmarshal(resp.Body, &report); err != nil || report.Verdict != tt.verdict {
				t.Errorf("the report's verdict is %q (%v), want %q", report.Verdict, err, tt.verdict)
			}
		})
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("the upstream received %d dry runs, want none", n)
	}
}
