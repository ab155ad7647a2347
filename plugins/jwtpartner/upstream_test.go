package jwtpartner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"

	"github.com/partnergate/partnergate/internal/harness"
)

// refused is the error reverse_proxy returns when nothing listens at the upstream.
var refused = caddyhttp.Error(http.StatusBadGateway, reverseproxy.NewDialError(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}))

// answer is a next handler that writes a status, a Content-Type and a body, as
// reverse_proxy copies an upstream's answer, or returns err.
func answer(status int, contentType, body string, err error) caddyhttp.Handler {
	return caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error {
		if err != nil {
			return err
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.Header().Set("Retry-After", "30")
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
		return nil
	})
}

func TestServeNextOutcomes(t *testing.T) {
	const appProblem = `{"code":"unavailable","status":503}`
	for _, tt := range []struct {
		name     string
		payload  bool
		next     caddyhttp.Handler
		status   int
		ours     bool   // the gateway answers upstream_unavailable itself
		body     string // the upstream's body, when it passes through
		outcome  string
		retryFor string // Retry-After of the answer
	}{
		{"accepted", false, answer(200, "text/html", "ok", nil), 200, false, "ok", "accepted", "30"},
		{"redirect accepted", true, answer(303, "", "", nil), 303, false, "", "accepted", "30"},
		{"app 4xx", false, answer(403, "application/problem+json", `{"code":"gateway_assertion_invalid"}`, nil), 403, false, `{"code":"gateway_assertion_invalid"}`, "upstream_rejected", "30"},
		{"app 503 problem on url", false, answer(503, "application/problem+json", appProblem, nil), 503, false, appProblem, "upstream_error", "30"},
		{"app 503 page on payload", true, answer(503, "text/html; charset=utf-8", "<p>later</p>", nil), 503, false, "<p>later</p>", "upstream_error", "30"},
		{"html 500 on url", false, answer(500, "text/html", "<pre>panic</pre>", nil), 502, true, "", "upstream_unavailable", "5"},
		{"empty 502 on payload", true, answer(502, "", "", nil), 502, true, "", "upstream_unavailable", "5"},
		{"refused on url", false, answer(0, "", "", refused), 502, true, "", "upstream_unavailable", "5"},
		{"refused on payload", true, answer(0, "", "", refused), 502, true, "", "upstream_unavailable", "5"},
		{"timeout", false, answer(0, "", "", caddyhttp.Error(http.StatusGatewayTimeout, context.DeadlineExceeded)), 502, true, "", "upstream_unavailable", "5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			tok := f.token(t, "ES256", harness.Token{})
			r, endpoint := urlRequest("demo", tok), "url"
			if tt.payload {
				r, endpoint = payloadRequest("demo", "payload="+url.QueryEscape(tok)), "payload"
			}
			repl := caddy.NewReplacer()
			repl.Set("http.request.uuid", "req-1")
			r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
			w := httptest.NewRecorder()
			w.Header().Set("Server", "Caddy") // as Caddy's server sets it before any handler
			if err := f.h.ServeHTTP(w, r, tt.next); err != nil {
				t.Fatalf("ServeHTTP = %v, want nil (answered)", err)
			}
			if w.Header().Get("Server") != "Caddy" {
				t.Errorf("Server = %q, want the header set before the gateway kept", w.Header().Get("Server"))
			}
			if w.Code != tt.status || w.Header().Get("Retry-After") != tt.retryFor {
				t.Errorf("status %d Retry-After %q, want %d %q (body %s)", w.Code, w.Header().Get("Retry-After"), tt.status, tt.retryFor, w.Body)
			}
			if tt.ours {
				if w.Header().Get("X-Upstream") != "" {
					t.Errorf("the upstream's headers stayed on the gateway's answer: %v", w.Header())
				}
				if tt.payload {
					if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(w.Body.String(), "upstream_unavailable") || !strings.Contains(w.Body.String(), "req-1") {
						t.Errorf("payload answer = %q %s, want the problem page with upstream_unavailable and the request id", ct, w.Body)
					}
				} else if p := decodeProblem(t, w); p.Code != "upstream_unavailable" || p.RequestID != "req-1" || !strings.Contains(p.Detail, "freshly signed token") {
					t.Errorf("url answer = %+v, want upstream_unavailable with the request id and a detail asking for a new token", p)
				}
			} else if w.Body.String() != tt.body {
				t.Errorf("body = %q, want the upstream's %q untouched", w.Body, tt.body)
			}
			want := "demo/" + endpoint + "/" + tt.outcome
			if got := requestCounts(t, f.h); got[want] != 1 || len(got) != 1 {
				t.Errorf("partnergate_requests_total = %v, want only %s 1", got, want)
			}
			if code, _ := repl.GetString("http.jwt_partner.error_code"); tt.ours != (code == "upstream_unavailable") {
				t.Errorf("{http.jwt_partner.error_code} = %q, want upstream_unavailable only when the gateway answers", code)
			}
		})
	}
}

// TestHeaderSnapshot: what keep saw is what restore puts back, as a clone would, whatever
// the next handler did to the header in between (set, add, delete, edit a value in place).
func TestHeaderSnapshot(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    http.Header
	}{
		{"none", http.Header{}},
		{"one", http.Header{"Server": {"Caddy"}}},
		{"four", http.Header{"Server": {"Caddy"}, "Alt-Svc": {"h3"}, "X-A": {"a"}, "X-B": {"b"}}},
		{"five", http.Header{"Server": {"Caddy"}, "Alt-Svc": {"h3"}, "X-A": {"a"}, "X-B": {"b"}, "X-C": {"c"}}},
		{"two values", http.Header{"Server": {"Caddy"}, "Vary": {"Origin", "Accept"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.h.Clone()
			var s headerSnapshot
			s.keep(tt.h)
			for k, v := range tt.h {
				v[0] = "edited in place"
				tt.h.Add(k, "added")
			}
			tt.h.Set("X-Upstream", "yes")
			tt.h.Del("Server")
			s.restore(tt.h)
			if fmt.Sprint(tt.h) != fmt.Sprint(want) {
				t.Errorf("restored %v, want %v", tt.h, want)
			}
		})
	}
}

func TestServeNextHandleErrorsMode(t *testing.T) {
	f := newFixture(t, func(h *Handler) { h.Errors = ErrorsHandle })
	r := urlRequest("demo", f.token(t, "ES256", harness.Token{}))
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := httptest.NewRecorder()
	err := f.h.ServeHTTP(w, r, answer(0, "", "", refused))
	var he caddyhttp.HandlerError
	if !errors.As(err, &he) || he.StatusCode != http.StatusBadGateway || w.Body.Len() != 0 {
		t.Errorf("ServeHTTP = %v (body %q), want a 502 HandlerError for handle_errors and no body", err, w.Body)
	}
}

func TestServeNextClientClosed(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	r := urlRequest("demo", f.token(t, "ES256", harness.Token{})).WithContext(ctx)
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		cancel()
		return caddyhttp.Error(499, context.Canceled)
	})
	w := httptest.NewRecorder()
	if err := f.h.ServeHTTP(w, r, next); err == nil || w.Body.Len() != 0 {
		t.Errorf("ServeHTTP = %v (body %q), want reverse_proxy's error back and no answer", err, w.Body)
	}
	if got := requestCounts(t, f.h); got["demo/url/client_closed"] != 1 {
		t.Errorf("partnergate_requests_total = %v, want demo/url/client_closed 1", got)
	}
}

func TestUpstreamClass(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{refused, "dial"},
		{caddyhttp.Error(504, context.DeadlineExceeded), "timeout"},
		{caddyhttp.Error(502, fmt.Errorf("reading: %w", io.ErrUnexpectedEOF)), "reset"},
		{caddyhttp.Error(503, errors.New("no upstreams available")), "no_upstream"},
		{caddyhttp.Error(502, errors.New("something else")), "error"},
	} {
		if got := upstreamClass(tt.err); got != tt.want {
			t.Errorf("upstreamClass(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
