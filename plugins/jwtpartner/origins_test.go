package jwtpartner

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/partnergate/partnergate/internal/harness"
)

func TestSerializeOrigin(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"https://ehr.acme.example", "https://ehr.acme.example", ""},
		{"http://localhost:8081", "http://localhost:8081", ""},
		{"https://EHR.Acme.Example", "https://ehr.acme.example", ""},
		{"HTTPS://ehr.acme.example", "https://ehr.acme.example", ""},
		{"https://ehr.acme.example:443", "https://ehr.acme.example", ""},
		{"http://ehr.acme.example:80", "http://ehr.acme.example", ""},
		{"https://ehr.acme.example:80", "https://ehr.acme.example:80", ""},
		{"https://ehr.acme.example/", "https://ehr.acme.example", ""},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"http://[0:0::1]:8080", "http://[::1]:8080", ""},
		{"https://xn--bcher-kva.example", "https://xn--bcher-kva.example", ""},
		{"https://ehr.acme.example/links", "", "no user, path, query or fragment"},
		{"https://ehr.acme.example?x", "", "no user, path, query or fragment"},
		{"https://ehr.acme.example#x", "", "no user, path, query or fragment"},
		{"https://user@ehr.acme.example", "", "no user, path, query or fragment"},
		{"https://*.acme.example", "", "no wildcards"},
		{"*", "", "no wildcards"},
		{"ftp://ehr.acme.example", "", "want scheme://host"},
		{"ehr.acme.example", "", "want scheme://host"},
		{"https://", "", "want scheme://host"},
		{"https://bücher.example", "", "ASCII form"},
		{"https://ehr.acme.example:0", "", `port "0"`},
		{"https://ehr.acme.example:65536", "", `port "65536"`},
		{"null", "", "want scheme://host"},
	} {
		got, err := serializeOrigin(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("serializeOrigin(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("serializeOrigin(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCheckOrigins(t *testing.T) {
	for _, tt := range []struct {
		origins []string
		err     string
	}{
		{nil, ""},
		{[]string{"https://ehr.acme.example", "http://localhost:8081", "null"}, ""},
		{[]string{"https://ehr.acme.example:443"}, `origins "https://ehr.acme.example:443": write the origin as a browser sends it in the Origin header: https://ehr.acme.example`},
		{[]string{"https://EHR.acme.example"}, `write the origin as a browser sends it in the Origin header: https://ehr.acme.example`},
		{[]string{"https://ehr.acme.example/"}, `write the origin as a browser sends it in the Origin header: https://ehr.acme.example`},
		{[]string{"https://ehr.acme.example", "https://*.acme.example"}, `origins "https://*.acme.example": no wildcards`},
		{[]string{"NULL"}, `origins "NULL": want scheme://host`},
	} {
		err := checkOrigins(tt.origins)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("checkOrigins(%q) = %v, want %q", tt.origins, err, tt.err)
		}
	}
}

// TestServeHTTPOrigins: a partner with origins refuses a /payload form from any other page
// before it reads the token (issue 25, login CSRF): the nonce stays unspent, so the
// partner's own page can still use the token. A form without Origin is refused the same
// way (issue 34: no browser's form, but a server's that turns a token into a login page).
// On /url, and for a partner without origins, nothing changes. The refusal page may be framed by the listed pages only.
func TestServeHTTPOrigins(t *testing.T) {
	f := newFixture(t, func(h *Handler) {
		jwks := h.Partners["demo"].JWKSFile
		h.Partners["demo"].Origins = []string{"https://ehr.partner.example", "http://localhost:8081"}
		h.Partners["local"] = &Partner{Issuer: testIssuer, Audience: "aud-local", JWKSFile: jwks, Origins: []string{"https://ehr.partner.example", "null"}}
		h.Partners["open"] = &Partner{Issuer: testIssuer, Audience: "aud-open", JWKSFile: jwks}
	})
	form := func(partner, tok string, origins ...string) *http.Request {
		r := payloadRequest(partner, "payload="+url.QueryEscape(tok))
		for _, o := range origins {
			r.Header.Add("Origin", o)
		}
		return r
	}
	tests := []struct {
		name, partner string
		req           func(tok string) *http.Request
		code          string // "" forwarded
	}{
		{"foreign origin", "demo", func(tok string) *http.Request { return form("demo", tok, "http://evil.example") }, "origin_not_allowed"},
		{"null origin", "demo", func(tok string) *http.Request { return form("demo", tok, "null") }, "origin_not_allowed"},
		{"listed host, other scheme", "demo", func(tok string) *http.Request { return form("demo", tok, "http://ehr.partner.example") }, "origin_not_allowed"},
		{"listed host, other port", "demo", func(tok string) *http.Request { return form("demo", tok, "https://ehr.partner.example:8443") }, "origin_not_allowed"},
		{"listed origin with a path", "demo", func(tok string) *http.Request { return form("demo", tok, "https://ehr.partner.example/") }, "origin_not_allowed"},
		{"second Origin foreign", "demo", func(tok string) *http.Request {
			return form("demo", tok, "https://ehr.partner.example", "http://evil.example")
		}, "origin_not_allowed"},
		{"listed origin", "demo", func(tok string) *http.Request { return form("demo", tok, "https://ehr.partner.example") }, ""},
		{"listed origin with a port", "demo", func(tok string) *http.Request { return form("demo", tok, "http://localhost:8081") }, ""},
		{"no origin", "demo", func(tok string) *http.Request { return form("demo", tok) }, "origin_not_allowed"},
		{"empty origin", "demo", func(tok string) *http.Request { return form("demo", tok, "") }, "origin_not_allowed"},
		{"no origin, no origins: any page", "open", func(tok string) *http.Request { return form("open", tok) }, ""},
		{"url without origin", "demo", func(tok string) *http.Request { return urlRequest("demo", tok) }, ""},
		{"url ignores origins", "demo", func(tok string) *http.Request {
			r := urlRequest("demo", tok)
			r.Header.Set("Origin", "http://evil.example")
			return r
		}, ""},
		{"null listed", "local", func(tok string) *http.Request { return form("local", tok, "null") }, ""},
		{"no origins: any page", "open", func(tok string) *http.Request { return form("open", tok, "http://evil.example") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aud := testAudience
			if tt.partner != "demo" {
				aud = "aud-" + tt.partner
			}
			tok := f.token(t, "ES256", harness.Token{Audience: aud})
			claims := f.store.claims
			w, next, _, err := f.serve(tt.req(tok))
			if err != nil {
				t.Fatalf("ServeHTTP = %v", err)
			}
			if tt.code == "" {
				if !next.called {
					t.Fatalf("status %d, body %s; want it forwarded", w.Code, w.Body)
				}
				return
			}
			if next.called || w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `<code id="code">`+tt.code+`</code>`) {
				t.Fatalf("status %d, forwarded %v, body %s; want 403 %s", w.Code, next.called, w.Body, tt.code)
			}
			if f.store.claims != claims {
				t.Errorf("a refused form reached the nonce store")
			}
			if csp, want := w.Header().Get("Content-Security-Policy"), "frame-ancestors https://ehr.partner.example http://localhost:8081"; !strings.HasSuffix(csp, want) {
				t.Errorf("refusal page CSP = %q, want it to end %q", csp, want)
			}
			// The same token still works from the partner's page: its nonce was not spent.
			if _, next, _, _ := f.serve(form("demo", tok, "https://ehr.partner.example")); !next.called {
				t.Errorf("the refused token from the listed page: not forwarded; want its nonce unspent")
			}
		})
	}
	t.Run("refusal page frame-ancestors", func(t *testing.T) {
		for _, tt := range []struct{ partner, want string }{
			{"demo", "frame-ancestors https://ehr.partner.example http://localhost:8081"},
			{"local", "frame-ancestors https://ehr.partner.example"},
			{"open", "frame-ancestors 'none'"},
			{"nobody", "frame-ancestors 'none'"},
		} {
			w, _, _, _ := f.serve(form(tt.partner, "not a token"))
			if csp := w.Header().Get("Content-Security-Policy"); !strings.HasSuffix(csp, tt.want) {
				t.Errorf("%s's refusal page CSP = %q, want it to end %q", tt.partner, csp, tt.want)
			}
		}
	})
}

// TestOriginRefusalLogged: a refused form is a security signal, logged at info (as a
// replay is) with the page's origin for the operator, bounded, and never the token.
func TestOriginRefusalLogged(t *testing.T) {
	f := newFixture(t, func(h *Handler) { h.Partners["demo"].Origins = []string{"https://ehr.partner.example"} })
	core, logs := observer.New(zapcore.DebugLevel)
	f.h.logger = zap.New(core)
	tok := f.token(t, "ES256", harness.Token{})
	long := "https://" + strings.Repeat("a", 300) + ".example"
	for _, origin := range []string{"http://evil.example", long, ""} {
		r := payloadRequest("demo", "payload="+url.QueryEscape(tok))
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		f.serve(r)
	}
	entries := logs.All()
	if len(entries) != 3 {
		t.Fatalf("log entries = %+v, want three", entries)
	}
	for i, want := range []string{`"http://evil.example"`, `"https://` + strings.Repeat("a", 192) + `…"`, "form without Origin"} {
		e := entries[i]
		fields := e.ContextMap()
		if e.Level != zapcore.InfoLevel || fields["outcome"] != "origin_not_allowed" || fields["partner"] != "demo" {
			t.Errorf("log entry %d = %v %v, want info origin_not_allowed for demo", i, e.Level, fields)
		}
		if msg := fmt.Sprint(fields["error"]); !strings.Contains(msg, want) || strings.Contains(msg, tok) {
			t.Errorf("log entry %d error = %q, want the origin %s and no token", i, msg, want)
		}
	}
}
