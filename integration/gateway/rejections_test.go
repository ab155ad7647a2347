package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
)

func TestRejectionsNeverReachUpstream(t *testing.T) {
	key := harness.NewKey(t, "RS256", "rs")
	other := harness.NewKey(t, "RS256", "rs") // same kid, key not in the set
	g := startGateway(t, fileKeys(t, key), "", "max_body_size 8KiB")
	good := func() string { return mint(t, key, harness.Token{}) }
	text := func(partner, body string) func() *harness.Response {
		return func() *harness.Response { return g.Post(t, "/partner/"+partner+"/url", "text/plain", body, nil) }
	}
	tokenCase := func(tok harness.Token) func() *harness.Response {
		return func() *harness.Response { return g.PostURL(t, "demo", mint(t, key, tok)) }
	}
	badPayload := testpayload.Main()
	badPayload["contact"].(map[string]any)["firstname"] = "   " // required: a malformed optional value would only be dropped
	tests := []struct {
		name   string
		do     func() *harness.Response
		status int
		code   string
	}{
		{"unknown partner", text("nobody", "x"), 404, "partner_unknown"},
		{"unknown endpoint", func() *harness.Response { return g.Post(t, "/partner/demo/json", "text/plain", good(), nil) }, 404, "not_found"},
		{"GET", func() *harness.Response {
			req, _ := http.NewRequest(http.MethodGet, g.URL+"/partner/demo/url", nil)
			return harness.Do(t, req)
		}, 405, "method_not_allowed"},
		{"wrong content type", func() *harness.Response { return g.Post(t, "/partner/demo/url", "application/json", good(), nil) }, 415, "unsupported_media_type"},
		{"charset allowed but type wrong", func() *harness.Response {
			return g.Post(t, "/partner/demo/payload", "text/plain; charset=utf-8", "payload="+good(), nil)
		}, 415, "unsupported_media_type"},
		{"body too large", text("demo", strings.Repeat("x", 9000)), 413, "body_too_large"},
		{"empty body", text("demo", "  \n"), 400, "token_missing"},
		{"malformed", text("demo", "a.b"), 400, "token_malformed"},
		{"two payload fields", func() *harness.Response {
			return g.Post(t, "/partner/demo/payload", "application/x-www-form-urlencoded", "payload="+good()+"&payload="+good(), nil)
		}, 400, "token_duplicated"},
		{"payload in query", func() *harness.Response {
			return g.Post(t, "/partner/demo/payload?payload="+url.QueryEscape(good()), "application/x-www-form-urlencoded", "payload="+good(), nil)
		}, 400, "token_in_query"},
		{"token in query of url", func() *harness.Response {
			return g.Post(t, "/partner/demo/url?token="+url.QueryEscape(good()), "text/plain", good(), nil)
		}, 400, "token_in_query"},
		{"typ not JWT", tokenCase(harness.Token{Header: map[string]any{"typ": "at+jwt"}}), 400, "header_invalid"},
		{"jku header", tokenCase(harness.Token{Header: map[string]any{"jku": "https://evil.example/jwks.json"}}), 400, "header_invalid"},
		{"crit header", tokenCase(harness.Token{Header: map[string]any{"crit": []string{"exp"}}}), 400, "header_invalid"},
		{"alg none without signature", func() *harness.Response {
			tok := mint(t, key, harness.Token{Header: map[string]any{"alg": "none"}})
			parts := strings.Split(tok, ".")
			return g.PostURL(t, "demo", parts[0]+"."+parts[1]+".")
		}, 400, "token_malformed"},
		{"alg none", tokenCase(harness.Token{Header: map[string]any{"alg": "none"}}), 401, "algorithm_not_allowed"},
		{"HS256 header", tokenCase(harness.Token{Header: map[string]any{"alg": "HS256"}}), 401, "algorithm_not_allowed"},
		{"no kid", tokenCase(harness.Token{Header: map[string]any{"kid": nil}}), 400, "key_id_missing"},
		{"unknown kid", tokenCase(harness.Token{Header: map[string]any{"kid": "nope"}}), 401, "key_unknown"},
		{"wrong key", func() *harness.Response { return g.PostURL(t, "demo", mint(t, other, harness.Token{})) }, 401, "signature_invalid"},
		{"corrupt signature", tokenCase(harness.Token{CorruptSignature: true}), 401, "signature_invalid"},
		{"wrong issuer", tokenCase(harness.Token{Issuer: "https://evil.example"}), 401, "issuer_invalid"},
		{"wrong audience", tokenCase(harness.Token{Audience: "other"}), 401, "audience_invalid"},
		{"expired", tokenCase(harness.Token{Now: time.Now().Add(-10 * time.Minute)}), 401, "token_expired"},
		{"not yet valid", tokenCase(harness.Token{Now: time.Now().Add(5 * time.Minute)}), 401, "token_not_yet_valid"},
		{"lifetime too long", tokenCase(harness.Token{Lifetime: 10 * time.Minute}), 400, "lifetime_too_long"},
		{"no exp", tokenCase(harness.Token{Claims: map[string]any{"exp": nil}}), 400, "claims_invalid"},
		{"no nonce", tokenCase(harness.Token{Claims: map[string]any{"nonce": nil}}), 400, "nonce_missing"},
		{"short nonce", tokenCase(harness.Token{Nonce: "short"}), 400, "nonce_invalid"},
		{"invalid payload", tokenCase(harness.Token{Payload: badPayload}), 400, "payload_invalid"},
		{"main link to go-only partner", func() *harness.Response {
			return g.PostURL(t, "gonly", mint(t, key, harness.Token{Audience: goOnlyAudience}))
		}, 403, "kind_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g.up.Reset()
			resp := tt.do()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d (body %s)", resp.StatusCode, tt.status, resp.Body)
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				// /payload answers a page; it names the code.
				if !strings.Contains(string(resp.Body), `<code id="code">`+tt.code+"</code>") {
					t.Errorf("page does not name the code %q: %s", tt.code, resp.Body)
				}
			} else {
				p := decodeProblem(t, resp)
				if p.Code != tt.code || p.Status != tt.status || p.Type != "urn:partnergate:problem:"+tt.code || p.RequestID == "" {
					t.Errorf("problem = %+v, want code %q status %d with a request id", p, tt.code, tt.status)
				}
			}
			if n := len(g.up.Requests()); n != 0 {
				t.Errorf("upstream received %d requests, want none", n)
			}
		})
	}
	t.Run("payload invalid names the field", func(t *testing.T) {
		p := decodeProblem(t, tokenCase(harness.Token{Payload: badPayload})())
		if len(p.Fields) == 0 || p.Fields[0].Field != "contact.firstname" {
			t.Errorf("fields = %+v, want contact.firstname", p.Fields)
		}
	})
	t.Run("payload endpoint answers a page", func(t *testing.T) {
		resp := g.PostPayload(t, "demo", "garbage<script>")
		if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("status %d type %q, want 400 text/html", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		body := string(resp.Body)
		if !strings.Contains(body, "token_malformed") || strings.Contains(body, "<script") {
			t.Errorf("page = %s, want the code and no script", body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("Content-Security-Policy = %q", csp)
		}
	})
}

func TestHandleErrorsMode(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	g := startGatewaySite(t, fileKeys(t, key), "", "errors handle_errors",
		"handle_errors {\n\t\trespond \"refused: {http.jwt_partner.error_code}\" {err.status_code}\n\t}")
	resp := g.PostURL(t, "demo", mint(t, key, harness.Token{Audience: "other"}))
	if resp.StatusCode != http.StatusUnauthorized || string(resp.Body) != "refused: audience_invalid" {
		t.Errorf("status %d body %q, want 401 from handle_errors naming audience_invalid", resp.StatusCode, resp.Body)
	}
	resp = g.PostURL(t, "demo", mint(t, key, harness.Token{}))
	if resp.StatusCode != 200 || string(resp.Body) != "upstream ok" {
		t.Errorf("valid link: status %d body %q, want the upstream's answer", resp.StatusCode, resp.Body)
	}
	if n := len(g.up.Requests()); n != 1 {
		t.Errorf("upstream received %d requests, want only the valid one", n)
	}
}
