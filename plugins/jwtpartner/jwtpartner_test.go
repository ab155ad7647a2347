package jwtpartner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/partnergate/partnergate/internal/benchcpu"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/plugins/nonce"
	"github.com/partnergate/partnergate/problem"
)

const (
	testIssuer   = "https://partner.example"
	testAudience = "partnergate-demo"
)

// fakeStore is a nonce store for the handler's tests: a map, or a forced error.
type fakeStore struct {
	mu     sync.Mutex
	seen   map[string]nonce.Entry
	err    error
	claims int
}

func (s *fakeStore) Claim(_ context.Context, e nonce.Entry) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	if s.err != nil {
		return false, s.err
	}
	if s.seen == nil {
		s.seen = map[string]nonce.Entry{}
	}
	k := e.Partner + "\x00" + e.Nonce
	if _, ok := s.seen[k]; ok {
		return false, nil
	}
	s.seen[k] = e
	return true, nil
}

// recorder is the next handler: it records the request it was given.
type recorder struct {
	called  bool
	method  string
	path    string
	query   string
	header  http.Header
	trailer http.Header
	body    []byte
	length  int64
}

func (n *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	n.called = true
	n.method, n.path, n.query, n.header, n.length = r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), r.ContentLength
	n.trailer = r.Trailer
	n.body, _ = io.ReadAll(r.Body)
	w.WriteHeader(http.StatusOK)
	return nil
}

type fixture struct {
	h     *Handler
	store *fakeStore
	keys  map[string]*harness.Key
	now   time.Time
}

// newFixture provisions a handler with one partner "demo" whose key set holds an RS256,
// a PS256 and an ES256 key, the fake store and a fixed clock.
func newFixture(t testing.TB, mod func(*Handler)) *fixture {
	t.Helper()
	f := &fixture{
		store: &fakeStore{},
		now:   time.Unix(1_800_000_000, 0),
		keys: map[string]*harness.Key{
			"RS256": harness.NewKey(t, "RS256", "rs-1"),
			"PS256": harness.NewKey(t, "PS256", "ps-1"),
			"ES256": harness.NewKey(t, "ES256", "es-1"),
		},
	}
	jwks := harness.WriteJWKS(t, t.TempDir(), f.keys["RS256"], f.keys["PS256"], f.keys["ES256"])
	f.h = &Handler{
		Partners: map[string]*Partner{
			"demo": {Issuer: testIssuer, Audience: testAudience, JWKSFile: jwks},
		},
		UpstreamSecret: strings.Repeat("s", 32),
		store:          f.store,
		now:            func() time.Time { return f.now },
	}
	if mod != nil {
		mod(f.h)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := f.h.Provision(ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if err := f.h.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// Caddy's default logger writes debug lines to stderr; the log line's content is
	// checked end to end in integration/gateway/logs_test.go.
	f.h.logger = zap.NewNop()
	return f
}

func (f *fixture) token(t testing.TB, alg string, tok harness.Token) string {
	t.Helper()
	if tok.Issuer == "" {
		tok.Issuer = testIssuer
	}
	if tok.Audience == "" && tok.Audiences == nil {
		tok.Audience = testAudience
	}
	if tok.Now.IsZero() {
		tok.Now = f.now
	}
	return f.keys[alg].Sign(t, tok)
}

func urlRequest(partner, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/partner/"+partner+"/url", strings.NewReader(body))
	r.Header.Set("Content-Type", "text/plain")
	return r
}

func payloadRequest(partner, form string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/partner/"+partner+"/payload", strings.NewReader(form))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

// serve runs the handler on r with a Caddy replacer in the context, as the server does.
func (f *fixture) serve(r *http.Request) (*httptest.ResponseRecorder, *recorder, *caddy.Replacer, error) {
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	next := &recorder{}
	err := f.h.ServeHTTP(w, r, next)
	return w, next, repl, err
}

func decodeProblem(t testing.TB, w *httptest.ResponseRecorder) problem.Problem {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json (body %s)", ct, w.Body)
	}
	var p problem.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("decoding the problem: %v", err)
	}
	return p
}

func TestServeHTTPForwardsValidLinks(t *testing.T) {
	// Every field's header on, so that their values are checked too (TestForwardFieldHeaders
	// covers the default, none).
	f := newFixture(t, func(h *Handler) { h.FieldHeaders = []string{"all"} })
	for _, alg := range []string{"RS256", "PS256", "ES256"} {
		for _, kind := range []string{"main", "go"} {
			for _, endpoint := range []string{"url", "payload"} {
				t.Run(alg+"/"+kind+"/"+endpoint, func(t *testing.T) {
					payload := testpayload.Main()
					if kind == "go" {
						payload = testpayload.Go()
					}
					tok := f.token(t, alg, harness.Token{Payload: payload})
					var r *http.Request
					if endpoint == "url" {
						r = urlRequest("demo", "\n "+tok+" \r\n")
					} else {
						r = payloadRequest("demo", "payload="+url.QueryEscape(tok))
					}
					r.Header.Set("X-Partner-Contact-Id", "spoofed")
					r.Header.Set("Connection", "X-Partner-Name, X-Partner-Assertion")
					r.URL.RawQuery = "utm_source=partner"
					w, next, repl, err := f.serve(r)
					if err != nil || !next.called {
						t.Fatalf("ServeHTTP = %v, next called %v (status %d, body %s)", err, next.called, w.Code, w.Body)
					}
					if next.method != http.MethodPost || next.path != "/partner/demo/"+endpoint {
						t.Errorf("upstream request = %s %s, want POST /partner/demo/%s", next.method, next.path, endpoint)
					}
					if next.query != "" {
						t.Errorf("upstream query = %q, want none", next.query)
					}
					if c := next.header.Get("Connection"); c != "" {
						t.Errorf("upstream Connection = %q, want the gateway's headers out of it", c)
					}
					if len(next.body) != 0 || next.length != 0 || next.header.Get("Content-Type") != "" {
						t.Errorf("upstream body = %q (length %d, type %q), want none", next.body, next.length, next.header.Get("Content-Type"))
					}
					want := map[string]string{
						"X-Partner-Name":     "demo",
						"X-Partner-Endpoint": endpoint,
						"X-Partner-Kind":     kind,
						"X-Partner-Issuer":   testIssuer,
						"X-Partner-Key-Id":   f.keys[alg].Kid,
					}
					contact := payload["contact"].(map[string]any)
					want["X-Partner-Contact-Id"] = contact["id"].(string)
					want["X-Partner-Contact-Firstname"] = contact["firstname"].(string)
					want["X-Partner-Contact-Lastname"] = contact["lastname"].(string)
					want["X-Partner-Contact-Ssn"] = contact["ssn"].(string)
					if kind == "main" {
						want["X-Partner-Employee-Lastname"] = payload["employeeLastname"].(string)
					}
					for name, value := range want {
						got, err := linkspec.DecodeHeaderValue(next.header.Get(name))
						if err != nil || got != value {
							t.Errorf("upstream %s = %q (decoded %q, %v), want %q", name, next.header.Get(name), got, err, value)
						}
					}
					if vs := next.header.Values("X-Partner-Contact-Id"); len(vs) != 1 {
						t.Errorf("upstream X-Partner-Contact-Id values = %q, want exactly one", vs)
					}
					if kind == "go" && next.header.Get("X-Partner-Employee-Id") != "" {
						t.Errorf("go link forwarded X-Partner-Employee-Id = %q", next.header.Get("X-Partner-Employee-Id"))
					}
					if got, want := next.header.Get("X-Partner-Claims"), strings.Split(tok, ".")[1]; got != want {
						t.Errorf("upstream X-Partner-Claims = %q, want the token's payload segment %q", got, want)
					}
					fwd := linkspec.Forwarded{
						Partner: "demo", Endpoint: endpoint, Kind: kind, Issuer: testIssuer,
						KeyID: f.keys[alg].Kid, Claims: next.header.Get("X-Partner-Claims"),
						RequestID: next.header.Get("X-Partner-Request-Id"),
					}
					if err := linkspec.VerifyAssertion([]byte(f.h.UpstreamSecret), next.header.Get("X-Partner-Assertion"), f.now, fwd); err != nil {
						t.Errorf("VerifyAssertion(upstream X-Partner-Assertion) = %v, want nil", err)
					}
					if got := repl.ReplaceAll("{http.jwt_partner.contact.firstname}|{http.jwt_partner.kind}|{http.jwt_partner.alg}", ""); got != contact["firstname"].(string)+"|"+kind+"|"+alg {
						t.Errorf("placeholders = %q", got)
					}
				})
			}
		}
	}
}

// TestServeHTTPEntryUsesPartnerLeeway: the store learns the window in which the token was
// acceptable by the partner's own leeway, not the handler's: a clean-start guard that
// compared nbf less a global leeway would let a replay of a long-leeway partner's token
// through after Redis forgot it.
func TestServeHTTPEntryUsesPartnerLeeway(t *testing.T) {
	f := newFixture(t, func(h *Handler) { h.Partners["demo"].Leeway = caddy.Duration(2 * time.Minute) })
	nbf := f.now.Add(90 * time.Second) // acceptable now only by the partner's leeway
	tok := f.token(t, "ES256", harness.Token{Nonce: "a-nonce-of-the-long-leeway", Now: nbf, Lifetime: time.Minute})
	if _, next, _, _ := f.serve(urlRequest("demo", tok)); !next.called {
		t.Fatal("token within the partner's leeway was not forwarded")
	}
	e := f.store.seen["demo\x00a-nonce-of-the-long-leeway"]
	if want := nbf.Add(-2 * time.Minute); !e.AcceptableFrom.Equal(want) {
		t.Errorf("AcceptableFrom = %v, want nbf - the partner's leeway = %v", e.AcceptableFrom, want)
	}
	if want := nbf.Add(time.Minute + 2*time.Minute); !e.Until.Equal(want) {
		t.Errorf("Until = %v, want exp + the partner's leeway = %v", e.Until, want)
	}
}

func TestServeHTTPClaimsNonceLast(t *testing.T) {
	f := newFixture(t, nil)
	tok := f.token(t, "ES256", harness.Token{Nonce: "a-nonce-of-enough-length", Lifetime: time.Minute})
	if _, next, _, _ := f.serve(urlRequest("demo", tok)); !next.called {
		t.Fatal("first use was not forwarded")
	}
	e := f.store.seen["demo\x00a-nonce-of-enough-length"]
	if !e.AcceptableFrom.Equal(f.now.Add(-30*time.Second)) || !e.Until.Equal(f.now.Add(time.Minute+30*time.Second)) {
		t.Errorf("claimed entry = %+v, want AcceptableFrom nbf-leeway and Until exp+leeway", e)
	}
	w, next, _, _ := f.serve(urlRequest("demo", tok))
	if next.called || w.Code != http.StatusConflict || decodeProblem(t, w).Code != "token_replayed" {
		t.Errorf("replay: status %d, forwarded %v, body %s; want 409 token_replayed", w.Code, next.called, w.Body)
	}

	// A token refused for another reason must not use up its nonce.
	before := f.store.claims
	bad := f.token(t, "ES256", harness.Token{Issuer: "https://other.example"})
	if w, _, _, _ := f.serve(urlRequest("demo", bad)); w.Code != http.StatusUnauthorized {
		t.Errorf("wrong issuer: status %d, want 401", w.Code)
	}
	if f.store.claims != before {
		t.Errorf("a refused token reached the nonce store")
	}
}

func TestServeHTTPRejections(t *testing.T) {
	f := newFixture(t, func(h *Handler) { h.MaxBodySize = 4096 })
	valid := func() string { return f.token(t, "RS256", harness.Token{}) }
	tests := []struct {
		name   string
		req    func() *http.Request
		status int
		code   string
	}{
		{"unknown partner", func() *http.Request { return urlRequest("nobody", valid()) }, 404, "partner_unknown"},
		{"unknown partner form", func() *http.Request { return payloadRequest("nobody", "payload="+valid()) }, 404, "partner_unknown"},
		{"unknown endpoint", func() *http.Request {
			r := urlRequest("demo", valid())
			r.URL.Path = "/partner/demo/other"
			return r
		}, 404, "not_found"},
		{"not a partner path", func() *http.Request {
			r := urlRequest("demo", valid())
			r.URL.Path = "/elsewhere"
			return r
		}, 404, "not_found"},
		{"GET", func() *http.Request { return httptest.NewRequest(http.MethodGet, "/partner/demo/url", nil) }, 405, "method_not_allowed"},
		{"wrong type on url", func() *http.Request {
			r := urlRequest("demo", valid())
			r.Header.Set("Content-Type", "application/json")
			return r
		}, 415, "unsupported_media_type"},
		{"no type", func() *http.Request {
			r := urlRequest("demo", valid())
			r.Header.Del("Content-Type")
			return r
		}, 415, "unsupported_media_type"},
		{"form type on url", func() *http.Request {
			r := urlRequest("demo", valid())
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, 415, "unsupported_media_type"},
		{"too large", func() *http.Request { return urlRequest("demo", strings.Repeat("a", 4097)) }, 413, "body_too_large"},
		{"too large, length unknown", func() *http.Request {
			r := urlRequest("demo", strings.Repeat("a", 5000))
			r.ContentLength = -1 // chunked: the limit is found while reading
			return r
		}, 413, "body_too_large"},
		{"empty", func() *http.Request { return urlRequest("demo", " \n ") }, 400, "token_missing"},
		{"garbage", func() *http.Request { return urlRequest("demo", "not a token") }, 400, "token_malformed"},
		{"expired", func() *http.Request {
			return urlRequest("demo", f.token(t, "RS256", harness.Token{Now: f.now.Add(-10 * time.Minute)}))
		}, 401, "token_expired"},
		{"not yet valid", func() *http.Request {
			return urlRequest("demo", f.token(t, "RS256", harness.Token{Now: f.now.Add(2 * time.Minute)}))
		}, 401, "token_not_yet_valid"},
		{"lifetime too long", func() *http.Request {
			return urlRequest("demo", f.token(t, "RS256", harness.Token{Lifetime: 6 * time.Minute}))
		}, 400, "lifetime_too_long"},
		{"bad signature", func() *http.Request {
			return urlRequest("demo", f.token(t, "RS256", harness.Token{CorruptSignature: true}))
		}, 401, "signature_invalid"},
		{"unknown kid", func() *http.Request {
			return urlRequest("demo", f.token(t, "RS256", harness.Token{Header: map[string]any{"kid": "nope"}}))
		}, 401, "key_unknown"},
		{"wrong audience", func() *http.Request {
			return urlRequest("demo", f.token(t, "RS256", harness.Token{Audience: "someone-else"}))
		}, 401, "audience_invalid"},
		{"no nonce", func() *http.Request {
			return urlRequest("demo", f.token(t, "RS256", harness.Token{Claims: map[string]any{"nonce": nil}}))
		}, 400, "nonce_missing"},
		{"invalid payload", func() *http.Request {
			p := testpayload.Main()
			p["employeeFirstname"] = ""
			return urlRequest("demo", f.token(t, "RS256", harness.Token{Payload: p}))
		}, 400, "payload_invalid"},
		{"form without payload", func() *http.Request { return payloadRequest("demo", "other=1") }, 400, "token_missing"},
		{"form with two payloads", func() *http.Request {
			return payloadRequest("demo", "payload="+valid()+"&payload="+valid())
		}, 400, "token_duplicated"},
		{"payload in query", func() *http.Request {
			r := payloadRequest("demo", "payload="+valid())
			r.URL.RawQuery = "payload=x"
			return r
		}, 400, "token_in_query"},
		{"token in query of url", func() *http.Request {
			r := urlRequest("demo", valid())
			r.URL.RawQuery = "token=" + valid()
			return r
		}, 400, "token_in_query"},
		{"payload after a semicolon in query", func() *http.Request {
			r := payloadRequest("demo", "payload="+valid())
			r.URL.RawQuery = "a;payload=x"
			return r
		}, 400, "token_in_query"},
		{"upper-case PAYLOAD in query", func() *http.Request {
			r := payloadRequest("demo", "payload="+valid())
			r.URL.RawQuery = "PAYLOAD=x"
			return r
		}, 400, "token_in_query"},
		{"percent-encoded token name in query of url", func() *http.Request {
			r := urlRequest("demo", valid())
			r.URL.RawQuery = "utm=1&%74oken=x"
			return r
		}, 400, "token_in_query"},
		{"text type on payload", func() *http.Request {
			r := payloadRequest("demo", "payload="+valid())
			r.Header.Set("Content-Type", "text/plain")
			return r
		}, 415, "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, next, repl, err := f.serve(tt.req())
			if err != nil {
				t.Fatalf("ServeHTTP returned %v, want a written response", err)
			}
			if next.called {
				t.Fatal("a rejected request reached the next handler")
			}
			if w.Code != tt.status {
				t.Errorf("status = %d, want %d (body %s)", w.Code, tt.status, w.Body)
			}
			var code string
			if strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
				code = tt.code // the page is checked in problem_test.go
				if !strings.Contains(w.Body.String(), tt.code) {
					t.Errorf("page does not name the code %q", tt.code)
				}
			} else {
				p := decodeProblem(t, w)
				code = p.Code
				if p.Status != tt.status || p.Type != problem.TypePrefix+tt.code || p.Title == "" {
					t.Errorf("problem = %+v", p)
				}
			}
			if code != tt.code {
				t.Errorf("code = %q, want %q", code, tt.code)
			}
			if got, _ := repl.GetString("http.jwt_partner.error_code"); got != tt.code {
				t.Errorf("{http.jwt_partner.error_code} = %q, want %q", got, tt.code)
			}
			if tt.status == 405 && w.Header().Get("Allow") != "POST" {
				t.Errorf("Allow = %q, want POST", w.Header().Get("Allow"))
			}
		})
	}
}

func TestServeHTTPStoreFailures(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code string
	}{
		{"unreachable", errors.New("dial tcp: connection refused"), "nonce_store_unavailable"},
		{"full", nonce.ErrFull, "nonce_store_full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.store.err = tt.err
			w, next, _, _ := f.serve(urlRequest("demo", f.token(t, "ES256", harness.Token{})))
			if next.called {
				t.Fatal("a token was forwarded although the nonce store failed (must fail closed)")
			}
			if w.Code != 503 || w.Header().Get("Retry-After") == "" {
				t.Errorf("status %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
			}
			if p := decodeProblem(t, w); p.Code != tt.code {
				t.Errorf("code = %q, want %q", p.Code, tt.code)
			}
		})
	}
}

// TestServeHTTPTokenBeforeStoreStart: a token refused by the store's clean-start guard is
// refused for good (409, no Retry-After: sending it again can never succeed) and logged at
// info, not as a broken dependency.
func TestServeHTTPTokenBeforeStoreStart(t *testing.T) {
	f := newFixture(t, nil)
	f.store.err = fmt.Errorf("claiming nonce: %w", nonce.ErrTooOld)
	core, logs := observer.New(zapcore.DebugLevel)
	f.h.logger = zap.New(core)
	w, next, _, _ := f.serve(urlRequest("demo", f.token(t, "ES256", harness.Token{})))
	if next.called {
		t.Fatal("a token the nonce store cannot vouch for was forwarded")
	}
	if w.Code != http.StatusConflict || w.Header().Get("Retry-After") != "" {
		t.Errorf("status %d, Retry-After %q; want 409 without Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if p := decodeProblem(t, w); p.Code != "token_before_store_start" {
		t.Errorf("code = %q, want token_before_store_start", p.Code)
	}
	if entries := logs.All(); len(entries) != 1 || entries[0].Level != zapcore.InfoLevel {
		t.Errorf("log entries = %+v, want one at info", entries)
	}
}

func TestServeHTTPHandleErrorsMode(t *testing.T) {
	f := newFixture(t, func(h *Handler) { h.Errors = ErrorsHandle })
	w, next, repl, err := f.serve(urlRequest("demo", "garbage"))
	var he caddyhttp.HandlerError
	if !errors.As(err, &he) || he.StatusCode != 400 {
		t.Fatalf("ServeHTTP = %v, want a caddyhttp.HandlerError with status 400", err)
	}
	if next.called || w.Body.Len() != 0 {
		t.Errorf("forwarded %v, body %q; want neither", next.called, w.Body)
	}
	if got, _ := repl.GetString("http.jwt_partner.error_code"); got != "token_malformed" {
		t.Errorf("{http.jwt_partner.error_code} = %q, want token_malformed", got)
	}
}

func TestServeHTTPKindLimit(t *testing.T) {
	f := newFixture(t, func(h *Handler) { h.Partners["demo"].Kinds = []string{"go"} })
	w, next, _, _ := f.serve(urlRequest("demo", f.token(t, "RS256", harness.Token{Payload: testpayload.Main()})))
	if next.called || w.Code != http.StatusForbidden || decodeProblem(t, w).Code != "kind_not_allowed" {
		t.Errorf("main link to a go-only partner: status %d, forwarded %v, body %s; want 403 kind_not_allowed", w.Code, next.called, w.Body)
	}
	if _, next, _, _ := f.serve(urlRequest("demo", f.token(t, "RS256", harness.Token{Payload: testpayload.Go()}))); !next.called {
		t.Error("go link to a go-only partner was not forwarded")
	}
}

func BenchmarkServeHTTP(b *testing.B) {
	f := newFixture(b, nil)
	for _, alg := range []string{"RS256", "PS256", "ES256"} {
		b.Run(alg, func(b *testing.B) {
			toks := make([]string, b.N)
			for i := range toks {
				toks[i] = f.token(b, alg, harness.Token{})
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := benchcpu.Start(b)
			for i := 0; i < b.N; i++ {
				_, next, _, _ := f.serve(urlRequest("demo", toks[i]))
				if !next.called {
					b.Fatal("not forwarded")
				}
			}
			cpu.Report(b)
		})
	}
}

// BenchmarkServeHTTPRefusal is the handler's share of a refusal: what each token of a
// flood costs the gateway besides Caddy and the sockets (docs/performance.md, phases e and
// g of the load benchmark). A well-formed token whose kid the partner does not have is
// refused at the key lookup, before any signature work.
func BenchmarkServeHTTPRefusal(b *testing.B) {
	f := newFixture(b, nil)
	rotated := harness.NewKey(b, "RS256", "rotated-0f1e2d3c4b5a69788796a5b4c3d2e1f0")
	tok := rotated.Sign(b, harness.Token{Issuer: testIssuer, Audience: testAudience, Now: f.now})
	// The request as net/http hands it over, without httptest's parsing of one from text,
	// which would cost more than the handler.
	u, _ := url.Parse("/partner/demo/url")
	req := func() *http.Request {
		return &http.Request{Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader(tok)),
			ContentLength: int64(len(tok)), Host: "gateway.example", RemoteAddr: "192.0.2.1:1234"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, next, _, _ := f.serve(req())
		if next.called || w.Code != http.StatusUnauthorized {
			b.Fatalf("unknown kid: status %d, forwarded %v; want 401", w.Code, next.called)
		}
	}
}

// FuzzReadToken feeds arbitrary content types, bodies and queries to the body reader of
// both endpoints: it must never panic, and a token it returns is non-empty, trimmed and
// within the body limit.
func FuzzReadToken(f *testing.F) {
	f.Add("text/plain", "eyJh.eyJi.c2ln", "", true)
	f.Add("text/plain; charset=utf-8", "  tok \n", "x=1", true)
	f.Add("application/x-www-form-urlencoded", "payload=a.b.c&submit=go", "", false)
	f.Add("application/x-www-form-urlencoded", "payload=a&payload=b", "", false)
	f.Add("application/x-www-form-urlencoded", "payload=%zz", "payload=x", false)
	f.Add("multipart/form-data; boundary=x", "--x--", "", false)
	h := &Handler{MaxBodySize: 1024}
	f.Fuzz(func(t *testing.T, contentType, body, query string, url bool) {
		endpoint := endpointPayload
		if url {
			endpoint = endpointURL
		}
		r := httptest.NewRequest(http.MethodPost, "/partner/demo/"+endpoint, strings.NewReader(body))
		r.URL.RawQuery = query
		r.Header.Set("Content-Type", contentType)
		var bodyRead bool
		var held *bytes.Buffer
		tok, rej := h.readToken(r, endpoint, &bodyRead, &held)
		defer releaseBody(held)
		if rej != nil {
			if tok != nil || rej.code == "" {
				t.Fatalf("readToken rejected with code %q and returned %q", rej.code, tok)
			}
			return
		}
		if len(tok) == 0 || len(tok) > 1024 || strings.TrimSpace(string(tok)) != string(tok) || !bodyRead {
			t.Fatalf("readToken(%q, %q) = %q (body read: %v)", contentType, body, tok, bodyRead)
		}
	})
}

func TestSplitPartnerPath(t *testing.T) {
	tests := []struct {
		escaped        string
		name, endpoint string
		ok             bool
	}{
		{"/partner/acme/url", "acme", "url", true},
		{"/partner/acme/payload", "acme", "payload", true},
		{"/partner/%61cme/%75rl", "acme", "url", true}, // encoded unreserved letters are the letters
		{"/partner/acme/other", "acme", "other", true}, // the caller tells endpoints apart
		{"/partner%2Facme%2Furl", "", "", false},       // an encoded slash is data, not a delimiter
		{"/partner/acme%2Furl", "", "", false},
		{"/partner/beta%2F..%2Facme/url", "", "", false},
		{"/partner/acme/url%2F", "", "", false},
		{"/partner/acme/url/", "", "", false},
		{"/partner//url", "", "", false},
		{"/partner/acme", "", "", false},
		{"/partner/%zz/url", "", "", false},
		{"/PARTNER/acme/url", "", "", false},
		{"/elsewhere", "", "", false},
	}
	for _, tt := range tests {
		name, endpoint, ok := splitPartnerPath(tt.escaped)
		if name != tt.name || endpoint != tt.endpoint || ok != tt.ok {
			t.Errorf("splitPartnerPath(%q) = %q, %q, %v, want %q, %q, %v", tt.escaped, name, endpoint, ok, tt.name, tt.endpoint, tt.ok)
		}
	}
}

// deadlineRecorder is a ResponseRecorder whose connection takes read deadlines, as an
// HTTP/1 connection does, and remembers the last one.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadline time.Time
	set      []time.Time // every deadline set, in order
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.deadline = t
	d.set = append(d.set, t)
	return nil
}

// TestServeHTTPReadTimeout: the body read gets read_timeout as its deadline, lifted once
// the token is read; read_timeout off (-1) sets none.
func TestServeHTTPReadTimeout(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout caddy.Duration
		want    time.Duration // 0: no deadline set at all
	}{
		{"default", 0, DefaultReadTimeout},
		{"configured", caddy.Duration(3 * time.Second), 3 * time.Second},
		{"off", -1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(h *Handler) { h.ReadTimeout = tt.timeout })
			r := urlRequest("demo", f.token(t, "RS256", harness.Token{}))
			r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
			w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			next := &recorder{}
			start := time.Now()
			if err := f.h.ServeHTTP(w, r, next); err != nil || !next.called {
				t.Fatalf("ServeHTTP = %v, forwarded %v; want a forwarded request", err, next.called)
			}
			end := time.Now()
			if tt.want == 0 {
				if len(w.set) != 0 {
					t.Errorf("read deadlines set = %v, want none", w.set)
				}
				return
			}
			if len(w.set) != 2 || !w.set[1].IsZero() {
				t.Fatalf("read deadlines set = %v, want one and then none (lifted)", w.set)
			}
			// set to the timeout from a moment during ServeHTTP, however long that took
			if got := w.set[0]; got.Before(start.Add(tt.want)) || got.After(end.Add(tt.want)) {
				t.Errorf("read deadline %v after the request's start, want %v after a moment within the %v ServeHTTP took", got.Sub(start), tt.want, end.Sub(start))
			}
		})
	}
}

// TestServeHTTPLeavesUnreadBody: a rejection that leaves the client's body unread gives
// net/http's own drain of that body a short deadline, or closes the HTTP/1 connection where
// nothing useful can come (a client waiting for 100 Continue, a body that failed), so the
// answer never waits on a body the gateway will not use. A rejection after the whole body
// was read changes neither.
func TestServeHTTPLeavesUnreadBody(t *testing.T) {
	f := newFixture(t, func(h *Handler) { h.MaxBodySize = 4096 })
	valid := f.token(t, "RS256", harness.Token{})
	declaredHuge := func() *http.Request {
		r := urlRequest("demo", "")
		r.ContentLength = 1 << 30
		return r
	}
	expecting := declaredHuge()
	expecting.Header.Set("Expect", "100-continue")
	wrongType := urlRequest("demo", valid)
	wrongType.Header.Set("Content-Type", "application/json")
	broken := urlRequest("demo", "")
	broken.Body = io.NopCloser(iotest.ErrReader(errors.New("connection reset")))
	broken.ContentLength = -1
	tests := []struct {
		name  string
		req   *http.Request
		code  string
		drain bool // a drain deadline is set
		close bool // Connection: close
	}{
		{"declared too large", declaredHuge(), "body_too_large", true, false},
		{"declared too large, expecting 100 Continue", expecting, "body_too_large", false, true},
		{"found too large", urlRequest("demo", strings.Repeat("a", 5000)), "body_too_large", true, false},
		{"wrong type, body unread", wrongType, "unsupported_media_type", true, false},
		{"body unreadable", broken, "body_unreadable", false, true},
		{"malformed token, body read", urlRequest("demo", "not a token"), "token_malformed", false, false},
		{"no body", httptest.NewRequest(http.MethodGet, "/partner/demo/url", nil), "method_not_allowed", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repl := caddy.NewReplacer()
			r := tt.req.WithContext(context.WithValue(tt.req.Context(), caddy.ReplacerCtxKey, repl))
			w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			next := &recorder{}
			start := time.Now()
			_ = f.h.ServeHTTP(w, r, next)
			end := time.Now()
			if next.called {
				t.Fatal("the next handler ran for a rejected request")
			}
			if got := decodeProblem(t, w.ResponseRecorder).Code; got != tt.code {
				t.Fatalf("code = %q, want %q", got, tt.code)
			}
			if got := w.Header().Get("Connection") == "close"; got != tt.close {
				t.Errorf("Connection: close set = %v, want %v", got, tt.close)
			}
			drain := !w.deadline.IsZero()
			if drain != tt.drain {
				t.Fatalf("read deadline after the answer = %v, want one set: %v", w.deadline, tt.drain)
			}
			// drainTimeout from a moment during ServeHTTP, however long that took
			if drain && (w.deadline.Before(start.Add(drainTimeout)) || w.deadline.After(end.Add(drainTimeout))) {
				t.Errorf("drain deadline %v after the request, want %v after a moment within the %v ServeHTTP took", w.deadline.Sub(start), drainTimeout, end.Sub(start))
			}
		})
	}
}

func TestTokenInQuery(t *testing.T) {
	tests := []struct {
		query string
		want  bool
	}{
		{"", false},
		{"utm_source=partner", false},
		{"payload=x", true},
		{"token=x", true},
		{"payload", true},
		{"payload=", true},
		{"a=1&payload=x", true},
		{"a;payload=x", true}, // url.ParseQuery drops the whole pair
		{"a=1;token=x", true}, // likewise
		{"PAYLOAD=x", true},   // url.Values.Has compares exactly
		{"Token=x", true},
		{"%70ayload=x", true}, // percent-encoded name
		{"%50AYLOAD=x", true}, // encoded and upper case
		{"payload+=x", true},  // '+' is a space in a form name
		{"%20token%20=x", true},
		{"pay%zzload=x", false}, // a bad escape is compared as written
		{"payloads=x", false},
		{"x=payload", false},
		{"mytoken=x&tokens=y", false},
		{"a=payload%3Dx", false},
		{"&&;;", false},
	}
	for _, tt := range tests {
		if got := tokenInQuery(tt.query); got != tt.want {
			t.Errorf("tokenInQuery(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}
