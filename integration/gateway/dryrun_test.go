package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/partnerkit"
	"github.com/partnergate/partnergate/problem"
)

// dryRunNonce is the nonce rule's detail in the gateway's dry run answers.
const dryRunNonce = "not checked by a dry run, which neither looks up nor claims the nonce: the link endpoints accept each nonce once"

// TestDryRun runs a gateway whose demo partner has `dry_run 3/1h` and whose gonly partner
// has none. gonly's /check is answered as any unknown endpoint; demo's answers the report
// partnerkit.Check gives for the same token, rules and keys, for a valid and a rejected
// token, without reaching the upstream or spending the nonce (the valid token then works
// once at /url); the fourth dry run within the hour is 429 dry_run_rate_limited with
// Retry-After. The log has one line per dry run, never the token, and the metrics count
// the dry runs as their own outcome.
func TestDryRun(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	g := startGateway(t, fileKeys(t, key), "dry_run 3/1h", "")
	jwks := harness.JWKS(t, key)

	t.Run("off is not_found", func(t *testing.T) {
		tok := mint(t, key, harness.Token{Audience: goOnlyAudience, Payload: testpayload.Go()})
		check := g.Post(t, "/partner/gonly/check", "text/plain", tok, nil)
		unknown := g.Post(t, "/partner/gonly/nothing", "text/plain", tok, nil)
		got, want := decodeProblem(t, check), decodeProblem(t, unknown)
		got.RequestID, want.RequestID = "", ""
		if check.StatusCode != http.StatusNotFound || got.Code != "not_found" || mustJSON(t, got) != mustJSON(t, want) {
			t.Errorf("/check without dry_run = %d %+v, want %d %+v as for any unknown endpoint", check.StatusCode, got, unknown.StatusCode, want)
		}
		if resp := g.PostURL(t, "gonly", tok); resp.StatusCode != http.StatusOK {
			t.Errorf("the token at /url after /check: status %d body %s, want 200", resp.StatusCode, resp.Body)
		}
	})

	g.up.Reset()
	valid := mint(t, key, harness.Token{Payload: testpayload.Main()})
	tests := []struct {
		name, tok, verdict, code string
	}{
		{"valid", valid, "accepted", ""},
		{"wrong audience", mint(t, key, harness.Token{Audience: "someone-else"}), "rejected", "audience_invalid"},
		{"garbage", "garbage", "rejected", "token_malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := linktoken.Rules{Issuer: issuer, Audience: audience}
			before := partnerkit.Check(context.Background(), tt.tok, jwks, rules, time.Now())
			resp := g.Post(t, "/partner/demo/check", "text/plain", tt.tok, nil)
			after := partnerkit.Check(context.Background(), tt.tok, jwks, rules, time.Now())
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("dry run: status %d, Content-Type %q, body %s; want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Body)
			}
			var got partnerkit.Report
			if err := json.Unmarshal(resp.Body, &got); err != nil {
				t.Fatalf("decoding %s: %v", resp.Body, err)
			}
			if got.Accepted != (tt.verdict == "accepted") || got.Code != problem.Code(tt.code) {
				t.Errorf("verdict accepted=%v code %q, want %s %q", got.Accepted, got.Code, tt.verdict, tt.code)
			}
			// The kit's report says why the nonce is unchecked in its own words; the
			// gateway's names its request. Everything else is the same, read at the
			// gateway's clock (which lies between before and after).
			var matched bool
			for _, want := range []*partnerkit.Report{before, after} {
				want.Steps[len(want.Steps)-1].Detail = dryRunNonce
				want.RequestID = got.RequestID
				matched = matched || mustJSON(t, want) == string(resp.Body)
			}
			if !matched || got.RequestID == "" {
				t.Errorf("dry run answered\n%s\nwant partnerkit.Check's report with a request_id\n%s", resp.Body, mustJSON(t, after))
			}
		})
	}
	if n := len(g.up.Requests()); n != 0 {
		t.Errorf("the upstream received %d requests from dry runs, want none", n)
	}
	if resp := g.PostURL(t, "demo", valid); resp.StatusCode != http.StatusOK || string(resp.Body) != "upstream ok" {
		t.Errorf("the dry-run token at /url: status %d body %s, want 200 from the upstream (nonce not spent)", resp.StatusCode, resp.Body)
	}
	if resp := g.PostURL(t, "demo", valid); resp.StatusCode != http.StatusConflict {
		t.Errorf("the token at /url again: status %d, want 409: it works once", resp.StatusCode)
	}

	t.Run("rate limit", func(t *testing.T) {
		resp := g.Post(t, "/partner/demo/check", "text/plain", valid, nil)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("fourth dry run in the hour: status %d body %s, want 429", resp.StatusCode, resp.Body)
		}
		p := decodeProblem(t, resp)
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		// 3/1h refills one run every 20 minutes.
		if p.Code != "dry_run_rate_limited" || p.Status != 429 || err != nil || secs < 1 || secs > 1200 {
			t.Errorf("429 answer: code %q status %d Retry-After %q; want dry_run_rate_limited, 429, 1..1200 seconds", p.Code, p.Status, resp.Header.Get("Retry-After"))
		}
	})

	// caddy's output is read as it comes: wait for the last dry run's line.
	logs := g.Logs()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(logs, `"msg":"partner link dry run"`) < len(tests) && time.Now().Before(deadline); logs = g.Logs() {
		time.Sleep(20 * time.Millisecond)
	}
	if n := strings.Count(logs, `"msg":"partner link dry run"`); n != len(tests) {
		t.Errorf("%d dry run log lines, want %d\n%s", n, len(tests), logs)
	}
	if strings.Contains(logs, valid) {
		t.Error("the log carries a dry run's token")
	}
	resp, err := http.Get("http://" + g.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`partnergate_requests_total{endpoint="check",outcome="dry_run",partner="demo"} 3`,
		`partnergate_requests_total{endpoint="check",outcome="dry_run_rate_limited",partner="demo"} 1`,
		`partnergate_requests_total{endpoint="url",outcome="accepted",partner="demo"} 1`,
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grep(string(m), "partnergate_requests_total"))
		}
	}
}
