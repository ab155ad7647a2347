package jwtpartner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/partnerkit"
)

func TestUnmarshalCaddyfileDryRun(t *testing.T) {
	const head = "jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_file testdata/jwks.json\n"
	tests := []struct {
		name, lines string
		want        string // the partner's JSON
		err         string
	}{
		{name: "off", lines: "", want: `{"issuer":"a","audience":"b","jwks_file":"testdata/jwks.json"}`},
		{name: "on with the default rate", lines: "dry_run", want: `{"issuer":"a","audience":"b","jwks_file":"testdata/jwks.json","dry_run":{}}`},
		{name: "on with a rate", lines: "dry_run 5/30s", want: `{"issuer":"a","audience":"b","jwks_file":"testdata/jwks.json","dry_run":{"max_events":5,"window":30000000000}}`},
		{name: "count without window", lines: "dry_run 10", err: `partner demo: dry_run "10": want <events>/<window>, such as 10/1m`},
		{name: "zero events", lines: "dry_run 0/1m", err: `dry_run "0/1m": want <events>/<window>`},
		{name: "negative events", lines: "dry_run -1/1m", err: `dry_run "-1/1m": want <events>/<window>`},
		{name: "events not a number", lines: "dry_run ten/1m", err: `dry_run "ten/1m": want <events>/<window>`},
		{name: "zero window", lines: "dry_run 10/0s", err: `dry_run "10/0s": want <events>/<window>`},
		{name: "bad window", lines: "dry_run 10/soon", err: `dry_run "10/soon": want <events>/<window>`},
		{name: "two rates", lines: "dry_run 1/1m 2/1m", err: "wrong argument count"},
		{name: "given twice", lines: "dry_run\ndry_run 1/1s", err: "partner demo: dry_run given more than once"},
		{name: "error names the line", lines: "dry_run 10", err: "Testfile:6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(head + tt.lines + "\n}\n}"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("UnmarshalCaddyfile(%q) error = %v, want one containing %q", tt.lines, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("UnmarshalCaddyfile(%q) error = %v", tt.lines, err)
			}
			got, _ := json.Marshal(h.Partners["demo"])
			if string(got) != tt.want {
				t.Errorf("UnmarshalCaddyfile(%q) partner =\n%s\nwant\n%s", tt.lines, got, tt.want)
			}
		})
	}
}

// TestProvisionRefusesNegativeDryRun: a JSON configuration meets the dry run's rules too.
func TestProvisionRefusesNegativeDryRun(t *testing.T) {
	for _, tt := range []struct {
		dr   DryRun
		want string
	}{
		{DryRun{MaxEvents: -1}, "partner demo: dry_run: max_events -1: must not be negative"},
		{DryRun{Window: -1}, "partner demo: dry_run: window -1ns: must not be negative"},
	} {
		h := &Handler{Partners: map[string]*Partner{"demo": {Issuer: "a", Audience: "b", JWKSFile: "testdata/jwks.json", DryRun: &tt.dr}}, store: &fakeStore{}}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		err := h.Provision(ctx)
		cancel()
		if err == nil || err.Error() != tt.want {
			t.Errorf("Provision(dry_run %+v) = %v, want %q", tt.dr, err, tt.want)
		}
	}
}

func checkRequest(partner, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/partner/"+partner+"/check", strings.NewReader(body))
	r.Header.Set("Content-Type", "text/plain")
	return r
}

// dryRunFixture is newFixture with demo's dry run on at rate, and the handler's log
// observed.
func dryRunFixture(t *testing.T, dr DryRun) (*fixture, *observer.ObservedLogs) {
	f := newFixture(t, func(h *Handler) { h.Partners["demo"].DryRun = &dr })
	core, logs := observer.New(zapcore.DebugLevel)
	f.h.logger = zap.New(core)
	return f, logs
}

// TestDryRunOffIsNotFound: without dry_run, /check is answered exactly as any unknown
// endpoint of a known partner, and nothing is verified, claimed or forwarded.
func TestDryRunOffIsNotFound(t *testing.T) {
	f := newFixture(t, nil)
	tok := f.token(t, "ES256", harness.Token{})
	unknown, _, _, _ := f.serve(httptest.NewRequest(http.MethodPost, "/partner/demo/nothing", strings.NewReader(tok)))
	w, next, _, err := f.serve(checkRequest("demo", tok))
	if err != nil || next.called || f.store.claims != 0 {
		t.Fatalf("ServeHTTP = %v, forwarded %v, claims %d; want a written refusal, nothing claimed", err, next.called, f.store.claims)
	}
	got, want := decodeProblem(t, w), decodeProblem(t, unknown)
	got.RequestID, want.RequestID = "", ""
	if w.Code != http.StatusNotFound || got.Code != "not_found" || !equalJSON(t, got, want) {
		t.Errorf("/check without dry_run = %d %+v, want %d %+v as for any unknown endpoint", w.Code, got, unknown.Code, want)
	}
}

// requestCounts reads the handler's partnergate_requests_total as "partner/endpoint/outcome"
// → count.
func requestCounts(t *testing.T, h *Handler) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h.metrics.requests)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["partner"]+"/"+labels["endpoint"]+"/"+labels["outcome"]] = m.GetCounter().GetValue()
		}
	}
	return got
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("marshal: %v %v", err1, err2)
	}
	return string(x) == string(y)
}

// TestDryRunAnswersTheCheckReport: with dry_run, /check answers partnerkit.Check's report
// for the partner's rules and keys (the nonce rule said to be unchecked), 200 whether the
// verdict is accepted or rejected; nothing is claimed, forwarded or set in the request's
// X-Partner-* headers, so the same token then works at /url.
func TestDryRunAnswersTheCheckReport(t *testing.T) {
	f, logs := dryRunFixture(t, DryRun{})
	jwks, err := os.ReadFile(f.h.Partners["demo"].JWKSFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		tok      string
		accepted bool
		code     string
		status   int
	}{
		{"valid", f.token(t, "ES256", harness.Token{Payload: testpayload.Go()}), true, "", 0},
		{"wrong audience", f.token(t, "RS256", harness.Token{Audience: "someone-else"}), false, "audience_invalid", 401},
		{"expired", f.token(t, "PS256", harness.Token{Now: f.now.Add(-10 * time.Minute)}), false, "token_expired", 401},
		{"garbage", "garbage", false, "token_malformed", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := f.store.claims
			r := checkRequest("demo", tt.tok+"\n")
			w, next, _, err := f.serve(r)
			if err != nil || next.called || f.store.claims != claims {
				t.Fatalf("ServeHTTP = %v, forwarded %v, claims %d (before %d); want an answer, nothing claimed", err, next.called, f.store.claims, claims)
			}
			for name := range r.Header {
				if strings.HasPrefix(name, "X-Partner-") {
					t.Errorf("the dry run set %s on the request", name)
				}
			}
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Cache-Control") != "no-store" {
				t.Fatalf("status %d, Content-Type %q, Cache-Control %q; want 200 application/json no-store (%s)", w.Code, w.Header().Get("Content-Type"), w.Header().Get("Cache-Control"), w.Body)
			}
			var raw map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			wantVerdict := map[bool]string{true: "accepted", false: "rejected"}[tt.accepted]
			if raw["verdict"] != wantVerdict || (tt.code != "" && (raw["code"] != tt.code || raw["status"] != float64(tt.status))) {
				t.Errorf("verdict %v code %v status %v, want %s %s %d", raw["verdict"], raw["code"], raw["status"], wantVerdict, tt.code, tt.status)
			}

			var got partnerkit.Report
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			want := partnerkit.Check(context.Background(), tt.tok, jwks, linktoken.Rules{Issuer: testIssuer, Audience: testAudience}, f.now)
			last := &want.Steps[len(want.Steps)-1]
			last.Detail = dryRunNonceDetail
			if got.RequestID == "" {
				t.Error("the report has no request_id")
			}
			want.RequestID = got.RequestID
			if !equalJSON(t, &got, want) {
				gb, _ := json.Marshal(&got)
				wb, _ := json.Marshal(want)
				t.Errorf("dry run report =\n%s\nwant partnerkit.Check's\n%s", gb, wb)
			}
		})
	}
	if entries := logs.FilterMessage("partner link dry run").All(); len(entries) != len(tests) || entries[0].Level != zapcore.InfoLevel {
		t.Errorf("log: %d dry run lines, want %d at info", len(entries), len(tests))
	}
	for _, e := range logs.All() {
		for _, tt := range tests {
			if b, _ := json.Marshal(e.ContextMap()); strings.Contains(string(b), tt.tok) {
				t.Errorf("log line %q carries the token", e.Message)
			}
		}
	}
	if got, want := requestCounts(t, f.h), map[string]float64{"demo/check/dry_run": float64(len(tests))}; !equalJSON(t, got, want) {
		t.Errorf("partnergate_requests_total = %v, want %v: a dry run is its own outcome, not an accepted or rejected link", got, want)
	}

	// The valid token's nonce was not spent: it works once at /url.
	w, next, _, _ := f.serve(urlRequest("demo", tests[0].tok))
	if w.Code != http.StatusOK || !next.called {
		t.Errorf("the dry-run token at /url: status %d, forwarded %v; want 200 forwarded", w.Code, next.called)
	}
}

// TestDryRunRateLimit: the partner's bucket answers MaxEvents dry runs at once, then 429
// dry_run_rate_limited with Retry-After (the whole seconds until the next run refills),
// and refills MaxEvents per Window. Requests over the limit are not verified.
func TestDryRunRateLimit(t *testing.T) {
	f, _ := dryRunFixture(t, DryRun{MaxEvents: 2, Window: caddy.Duration(time.Minute)})
	tok := f.token(t, "ES256", harness.Token{})
	post := func() *httptest.ResponseRecorder {
		w, next, _, _ := f.serve(checkRequest("demo", tok))
		if next.called {
			t.Fatal("a dry run was forwarded")
		}
		return w
	}
	for i := range 2 {
		if w := post(); w.Code != http.StatusOK {
			t.Fatalf("dry run %d: status %d, want 200 (%s)", i+1, w.Code, w.Body)
		}
	}
	w := post()
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" {
		t.Fatalf("dry run 3: status %d, Retry-After %q; want 429 with 30 (one run refills in 60s/2)", w.Code, w.Header().Get("Retry-After"))
	}
	if p := decodeProblem(t, w); p.Code != "dry_run_rate_limited" || p.Status != 429 || p.Title == "" {
		t.Errorf("problem = %+v, want dry_run_rate_limited 429", p)
	}
	f.now = f.now.Add(29 * time.Second)
	if w := post(); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("after 29s: status %d, Retry-After %q; want 429 with 1", w.Code, w.Header().Get("Retry-After"))
	}
	f.now = f.now.Add(time.Second)
	if w := post(); w.Code != http.StatusOK {
		t.Errorf("after 30s: status %d, want 200", w.Code)
	}
	// Another partner's bucket is its own: /url is never limited.
	if w, _, _, _ := f.serve(urlRequest("demo", tok)); w.Code != http.StatusOK {
		t.Errorf("/url while the dry run is limited: status %d, want 200", w.Code)
	}
}

// TestDryRunRequestRules: the dry run takes a POST of text/plain, as /url does.
func TestDryRunRequestRules(t *testing.T) {
	f, _ := dryRunFixture(t, DryRun{})
	get := httptest.NewRequest(http.MethodGet, "/partner/demo/check", nil)
	w, _, _, _ := f.serve(get)
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET: status %d, Allow %q; want 405 POST", w.Code, w.Header().Get("Allow"))
	}
	form := checkRequest("demo", "payload=x")
	form.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w, _, _, _ = f.serve(form)
	if p := decodeProblem(t, w); w.Code != http.StatusUnsupportedMediaType || !strings.HasPrefix(p.Detail, "the check endpoint takes Content-Type text/plain, the body being the compact token") {
		t.Errorf("form: status %d detail %q; want 415 naming the check endpoint", w.Code, p.Detail)
	}
	w, _, _, _ = f.serve(checkRequest("demo", "  \n"))
	if p := decodeProblem(t, w); w.Code != http.StatusBadRequest || p.Code != "token_missing" {
		t.Errorf("empty body: status %d code %q; want 400 token_missing", w.Code, p.Code)
	}
	w, _, _, _ = f.serve(checkRequest("nobody", "x"))
	if p := decodeProblem(t, w); w.Code != http.StatusNotFound || p.Code != "partner_unknown" {
		t.Errorf("unknown partner: status %d code %q; want 404 partner_unknown", w.Code, p.Code)
	}
}
