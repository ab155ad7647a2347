package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
)

// upstreamCaddyfile is the partner route of Caddyfile.example in front of an upstream
// the test controls, with reverse_proxy's retry lines ({{.Vars.proxy}}).
var upstreamCaddyfile = harness.Gateway{
	Global:   []string{"log {\n\toutput stderr\n\tformat json\n\tlevel INFO\n\texclude http.handlers.reverse_proxy\n}", "{{.Vars.proxylog}}"},
	Partners: []string{harness.PartnerBlock("demo", "{{.Vars.keys}}", "issuer "+issuer, "audience "+audience)},
	Next:     "reverse_proxy {{.Vars.upstream}} {\n\t{{.Vars.proxy}}\n}",
}.Caddyfile()

// startUpstreamGateway runs upstreamCaddyfile in front of upstream (host:port).
func startUpstreamGateway(t *testing.T, key *harness.Key, upstream, proxy string) *harness.Caddy {
	t.Helper()
	proxylog := ""
	if strings.Contains(proxy, "verbose_logs") {
		// reverse_proxy's debug log, whose "retrying" line tells the test that a request
		// is waiting for the upstream. It carries the forwarded headers (the claims): only
		// the restart test, which checks no log for secrets, has it.
		proxylog = "log proxy {\n\t\toutput stderr\n\t\tformat json\n\t\tlevel DEBUG\n\t\tinclude http.handlers.reverse_proxy\n\t}"
	}
	return harness.StartCaddy(t, harness.Config{
		Caddyfile: upstreamCaddyfile,
		Vars:      map[string]string{"keys": fileKeys(t, key), "upstream": upstream, "proxy": proxy, "proxylog": proxylog},
	})
}

// requestCount reads partnergate_requests_total for the partner demo at endpoint and
// outcome from the admin endpoint's /metrics.
func requestCount(t *testing.T, c *harness.Caddy, endpoint, outcome string) string {
	t.Helper()
	resp, err := http.Get("http://" + c.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	prefix := fmt.Sprintf(`partnergate_requests_total{endpoint=%q,outcome=%q,partner="demo"} `, endpoint, outcome)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return "0"
}

// gatewayLine returns the jwt_partner log line of the request id, decoded. The handler
// writes it once the answer has gone out, and caddy's output is read as it comes, so it
// waits for the line; the deadline only keeps a broken test from hanging.
func gatewayLine(t *testing.T, c *harness.Caddy, requestID string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		logs := c.Logs()
		for _, l := range strings.Split(logs, "\n") {
			if !strings.Contains(l, `"partner link"`) || !strings.Contains(l, requestID) {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("decoding the log line %s: %v", l, err)
			}
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no partner link line for request %s within 10s in:\n%s", requestID, logs)
		}
	}
}

// TestUpstreamDown: with nothing listening behind the gateway (the app service stopped),
// a link is answered upstream_unavailable in the gateway's shape on both endpoints,
// counted and logged as such; its nonce is spent, so the same token is then a replay.
func TestUpstreamDown(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	down := "127.0.0.1:" + strconv.Itoa(freeport.For(t))
	c := startUpstreamGateway(t, key, down, "")

	tok := mint(t, key, harness.Token{})
	resp := c.PostURL(t, "demo", tok)
	p := decodeProblem(t, resp)
	if resp.StatusCode != http.StatusBadGateway || p.Code != "upstream_unavailable" || p.Status != 502 || p.Type != "urn:partnergate:problem:upstream_unavailable" {
		t.Errorf("url with the upstream down = %d %+v, want 502 upstream_unavailable", resp.StatusCode, p)
	}
	if resp.Header.Get("Retry-After") != "5" || p.RequestID == "" || !strings.Contains(p.Detail, "freshly signed token") {
		t.Errorf("url answer: Retry-After %q, request id %q, detail %q; want 5, an id and a detail asking for a new token", resp.Header.Get("Retry-After"), p.RequestID, p.Detail)
	}
	line := gatewayLine(t, c, p.RequestID)
	if line["level"] != "error" || line["outcome"] != "upstream_unavailable" || line["upstream_error"] != "dial" || line["upstream_status"] != float64(502) {
		t.Errorf("log line = %v, want level error, outcome upstream_unavailable, upstream_error dial, upstream_status 502", line)
	}
	if strings.Contains(c.Logs(), tok) || strings.Contains(c.Logs(), strings.Split(tok, ".")[1]) {
		t.Error("the log carries the token")
	}

	replay := c.PostURL(t, "demo", tok)
	if rp := decodeProblem(t, replay); replay.StatusCode != http.StatusConflict || rp.Code != "token_replayed" {
		t.Errorf("the same token again = %d %+v, want 409 token_replayed: its nonce was spent", replay.StatusCode, rp)
	}

	page := c.PostPayload(t, "demo", mint(t, key, harness.Token{}))
	if ct := page.Header.Get("Content-Type"); page.StatusCode != http.StatusBadGateway || !strings.HasPrefix(ct, "text/html") ||
		!strings.Contains(string(page.Body), "upstream_unavailable") || !strings.Contains(string(page.Body), "open the link again") {
		t.Errorf("payload with the upstream down = %d %q %s, want the 502 problem page with upstream_unavailable", page.StatusCode, ct, page.Body)
	}

	for _, tt := range []struct{ endpoint, outcome, want string }{
		{"url", "upstream_unavailable", "1"},
		{"payload", "upstream_unavailable", "1"},
		{"url", "token_replayed", "1"},
		{"url", "accepted", "0"},
		{"payload", "accepted", "0"},
	} {
		if got := requestCount(t, c, tt.endpoint, tt.outcome); got != tt.want {
			t.Errorf("partnergate_requests_total{endpoint=%q,outcome=%q} = %s, want %s", tt.endpoint, tt.outcome, got, tt.want)
		}
	}
}

// TestUpstreamAnswers5xx: the app service's own 503 (its database down) is a problem
// document with Retry-After: it reaches the partner untouched, counted as upstream_error;
// a bare 502 from something else behind the gateway becomes upstream_unavailable.
func TestUpstreamAnswers5xx(t *testing.T) {
	const appProblem = `{"type":"urn:partnergate:problem:unavailable","title":"Service unavailable","status":503,"code":"unavailable"}`
	key := harness.NewKey(t, "ES256", "es")
	up := harness.NewUpstream(t)
	up.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/partner/demo/payload" {
			w.WriteHeader(http.StatusBadGateway) // no body, no Content-Type
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "17")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, appProblem)
	})
	c := startUpstreamGateway(t, key, up.Addr(), "")

	resp := c.PostURL(t, "demo", mint(t, key, harness.Token{}))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "17" || string(resp.Body) != appProblem {
		t.Errorf("url with the app answering 503 = %d Retry-After %q %s, want its 503, Retry-After 17 and body untouched", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Body)
	}
	if got := requestCount(t, c, "url", "upstream_error"); got != "1" {
		t.Errorf("partnergate_requests_total{endpoint=url,outcome=upstream_error} = %s, want 1", got)
	}

	page := c.PostPayload(t, "demo", mint(t, key, harness.Token{}))
	if page.StatusCode != http.StatusBadGateway || !strings.Contains(string(page.Body), "upstream_unavailable") {
		t.Errorf("payload with the upstream answering an empty 502 = %d %s, want the gateway's upstream_unavailable page", page.StatusCode, page.Body)
	}
	for _, tt := range []struct{ endpoint, outcome, want string }{
		{"payload", "upstream_unavailable", "1"},
		{"url", "accepted", "0"},
		{"payload", "accepted", "0"},
	} {
		if got := requestCount(t, c, tt.endpoint, tt.outcome); got != tt.want {
			t.Errorf("partnergate_requests_total{endpoint=%q,outcome=%q} = %s, want %s", tt.endpoint, tt.outcome, got, tt.want)
		}
	}
}

// TestUpstreamRestartRiddenOut: with Caddyfile.example's lb_try_duration, a link sent
// while the app service is down (restarting) waits for it and succeeds once it listens:
// the nonce was claimed once, before the proxy, and the retry is the same request. The
// upstream starts only after reverse_proxy has logged a failed try for this request.
func TestUpstreamRestartRiddenOut(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	addr := "127.0.0.1:" + strconv.Itoa(freeport.For(t))
	c := startUpstreamGateway(t, key, addr, "lb_try_duration 5s\n\t\t\tlb_try_interval 250ms\n\t\t\tverbose_logs")

	for _, endpoint := range []string{"url", "payload"} {
		tok := mint(t, key, harness.Token{})
		body, ct := tok, "text/plain"
		if endpoint == "payload" {
			body, ct = "payload="+tok, "application/x-www-form-urlencoded"
		}
		req, err := http.NewRequest(http.MethodPost, c.URL+"/partner/demo/"+endpoint, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		tries := strings.Count(c.Logs(), `"msg":"retrying"`)
		type result struct {
			resp *harness.Response
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := harness.Send(req)
			done <- result{resp, err}
		}()

		deadline := time.Now().Add(8 * time.Second)
		for strings.Count(c.Logs(), `"msg":"retrying"`) == tries {
			if time.Now().After(deadline) {
				t.Fatalf("%s: reverse_proxy never retried:\n%s", endpoint, c.Logs())
			}
			time.Sleep(20 * time.Millisecond)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("starting the upstream on %s: %v", addr, err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// No kept-alive connection: the next round starts with the upstream down.
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "upstream ok "+r.URL.Path)
		})}
		go func() { _ = srv.Serve(l) }()

		r := <-done
		_ = srv.Close()
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.resp.StatusCode != http.StatusOK || string(r.resp.Body) != "upstream ok /partner/demo/"+endpoint {
			t.Errorf("%s link across the restart = %d %s, want the upstream's 200", endpoint, r.resp.StatusCode, r.resp.Body)
		}
	}
	for _, endpoint := range []string{"url", "payload"} {
		if got := requestCount(t, c, endpoint, "accepted"); got != "1" {
			t.Errorf("partnergate_requests_total{endpoint=%q,outcome=accepted} = %s, want 1", endpoint, got)
		}
	}
}
