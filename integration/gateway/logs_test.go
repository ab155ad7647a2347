package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linkspec"
)

// privatePayload is a main-client payload whose every value is distinctive, so that any
// occurrence in a log is a leak and not a coincidence.
func privatePayload() map[string]any {
	return map[string]any{
		"employeeId":        "emp-q7Zk3Lw9",
		"employeeUsername":  "user-Hx4Rt8Vb",
		"employeeFirstname": "Ørjan-Pz5Nc",
		"employeeLastname":  "Łęcki-Wq2Mf",
		"employeeEmail":     "mail-Gt6Yh@partner.example",
		"organizationName":  "Klinik-Ub3Kj Öst",
		"organizationId":    "org-Vd8Ls2Qa",
		"caseId":            "case-Jr4Tn6Xe",
		"contact": map[string]any{
			"id":         "contact-Bf7Wm1Pc",
			"birthdate":  "1931-07-13",
			"ssn":        "20451231-4826",
			"gender":     "gender-Kx9",
			"firstname":  "Zoë-Ha2Qs",
			"middlename": "Mid-Lp5Rz",
			"lastname":   "Þórs-Nc8Vt",
			"mobile":     "+46700-19283",
			"email":      "contact-Ew3Yu@example.org",
			"diagnosis":  "diag-M54.5-Tq7",
		},
	}
}

func secrets(payload map[string]any) []string {
	var out []string
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		for _, v := range m {
			switch v := v.(type) {
			case string:
				out = append(out, v, linkspec.EncodeHeaderValue(v))
			case map[string]any:
				walk(v)
			}
		}
	}
	walk(payload)
	return out
}

func TestLogsCarryNoTokenNoncePayloadOrSSN(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	g := startGateway(t, fileKeys(t, key), "", "")

	var leaks []string
	send := func(tok harness.Token, payloadEndpoint bool, wantStatus int) {
		t.Helper()
		if tok.Issuer == "" {
			tok.Issuer = issuer
		}
		tok.Audience = audience
		if tok.Nonce == "" {
			tok.Nonce = harness.RandomNonce()
		}
		s := key.Sign(t, tok)
		parts := strings.Split(s, ".")
		leaks = append(leaks, s, parts[1], parts[2], tok.Nonce)
		var resp *harness.Response
		if payloadEndpoint {
			resp = g.PostPayload(t, "demo", s)
		} else {
			resp = g.PostURL(t, "demo", s)
		}
		if resp.StatusCode != wantStatus {
			t.Fatalf("status %d body %s, want %d", resp.StatusCode, resp.Body, wantStatus)
		}
	}
	p := privatePayload()
	leaks = append(leaks, secrets(p)...)
	send(harness.Token{Payload: p}, false, 200)
	replayed := harness.Token{Payload: privatePayload(), Nonce: harness.RandomNonce()}
	send(replayed, true, 200)
	send(replayed, true, 409)
	invalid := privatePayload()
	invalid["contact"].(map[string]any)["birthdate"] = "1931-02-30"
	invalid["employeeFirstname"] = "bad\u0007name-Yy6Ii"
	leaks = append(leaks, "1931-02-30", "name-Yy6Ii")
	send(harness.Token{Payload: invalid}, false, 400)
	send(harness.Token{Payload: privatePayload(), Issuer: "iss-leak-Rr5Ee"}, false, 401)
	leaks = append(leaks, "iss-leak-Rr5Ee")

	// Stop caddy so every buffered log line is written.
	g.Stop()
	logs := g.Logs()
	for _, s := range leaks {
		if s != "" && strings.Contains(logs, s) {
			t.Errorf("the logs contain %q", s)
		}
	}

	var accepted, access, rejected int
	for _, line := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		logger, _ := m["logger"].(string)
		switch {
		case logger == "http.handlers.jwt_partner" && m["msg"] == "partner link":
			if m["outcome"] == "accepted" {
				accepted++
				for _, f := range []string{"partner", "endpoint", "kind", "alg", "kid", "duration", "request_id"} {
					if _, ok := m[f]; !ok {
						t.Errorf("log line %s lacks %q", line, f)
					}
				}
			} else {
				rejected++
			}
		case logger == "http.handlers.jwt_partner" && strings.HasPrefix(fmt.Sprint(m["msg"]), proxyDebugWarning):
			// The gateway logs reverse_proxy at INFO, so there is nothing to warn about.
			t.Errorf("jwt_partner warned about debug logging at INFO: %s", line)
		case strings.HasPrefix(logger, "http.log.access"):
			access++
			if strings.Contains(line, "X-Partner") {
				t.Errorf("the access log shows a gateway header: %s", line)
			}
		}
	}
	if accepted != 2 || rejected != 3 || access < 5 {
		t.Errorf("log lines: %d accepted, %d rejected, %d access; want 2, 3 and at least 5\n%s", accepted, rejected, access, logs)
	}
}

func TestMetricsAndReload(t *testing.T) {
	key := harness.NewKey(t, "RS256", "rs")
	keys := fileKeys(t, key)
	g := startGateway(t, keys, "", "")
	tok := mint(t, key, harness.Token{})
	if resp := g.PostURL(t, "demo", tok); resp.StatusCode != 200 {
		t.Fatalf("status %d body %s", resp.StatusCode, resp.Body)
	}
	g.PostURL(t, "demo", "garbage")

	metrics := func() string {
		resp, err := http.Get("http://" + g.Admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	m := metrics()
	for _, want := range []string{
		`partnergate_requests_total{endpoint="url",outcome="accepted",partner="demo"} 1`,
		`partnergate_requests_total{endpoint="url",outcome="token_malformed",partner="demo"} 1`,
		`partnergate_verify_duration_seconds_count{partner="demo"} 2`,
		`partnergate_nonce_store_duration_seconds_count{result="ok"} 1`,
		`partnergate_keys{partner="demo"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A reload provisions a new handler (new metrics registration, same memory store): the
	// token used before the reload stays used.
	up := g.up.Addr()
	g.Reload(t, gatewayCaddyfile, map[string]string{"keys": keys, "partner": "leeway 20s", "handler": "", "site": "", "upstream": up})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := g.PostURL(t, "demo", tok)
		if resp.StatusCode == http.StatusConflict {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay after reload: status %d body %s, want 409", resp.StatusCode, resp.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp := g.PostURL(t, "demo", mint(t, key, harness.Token{})); resp.StatusCode != 200 {
		t.Errorf("new token after reload: status %d body %s", resp.StatusCode, resp.Body)
	}
	if m := metrics(); !strings.Contains(m, `partnergate_requests_total{endpoint="url",outcome="token_replayed",partner="demo"}`) {
		t.Errorf("/metrics after reload lacks the replay count:\n%s", grep(m, "partnergate_"))
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// debugCaddyfile is the gateway with Caddy's global debug option: every logger at DEBUG,
// but those the log excludes ({{.Vars.exclude}}). Every field's header is on, so that the
// test sees a plain field header (X-Partner-Contact-Ssn) in reverse_proxy's line as well as
// the claims, which it logs in every configuration.
var debugCaddyfile = harness.Gateway{
	Global:   []string{"debug", "log {\n\toutput stderr\n\tformat json\n\t{{.Vars.exclude}}\n}"},
	Partners: []string{harness.PartnerBlock("demo", "{{.Vars.keys}}", "issuer "+issuer, "audience "+audience)},
	Handler:  []string{"upstream_secret {env.TEST_UPSTREAM_SECRET}", "field_headers all"},
}.Caddyfile()

// proxyDebugWarning is the start of the handler's warning that reverse_proxy logs at debug.
const proxyDebugWarning = "reverse_proxy logs at debug level"

// TestDebugLogsShowForwardedHeaders records what SECURITY.md and docs/jwt_partner.md say about
// Caddy-wide DEBUG logging: the gateway's own lines still carry no token, nonce or payload
// value, but Caddy's reverse_proxy logs every header it sends upstream ("upstream
// roundtrip"), the verified identity included, and jwt_partner warns about it at load. The
// documented remedy, a debug log that excludes reverse_proxy, has neither the line nor the
// warning. Should Caddy stop logging upstream headers, this test fails and the documents
// change.
func TestDebugLogsShowForwardedHeaders(t *testing.T) {
	for _, tt := range []struct {
		name    string
		exclude string
		leaks   bool // reverse_proxy logs the forwarded headers, and jwt_partner warns
	}{
		{"debug", "", true},
		{"debug without reverse_proxy", "exclude http.handlers.reverse_proxy", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := harness.NewKey(t, "ES256", "es")
			up := harness.NewUpstream(t)
			c := harness.StartCaddy(t, harness.Config{
				Caddyfile: debugCaddyfile,
				Vars:      map[string]string{"keys": fileKeys(t, key), "upstream": up.Addr(), "exclude": tt.exclude},
				Env:       []string{"TEST_UPSTREAM_SECRET=" + secret},
			})
			p := privatePayload()
			tok := harness.Token{Payload: p, Nonce: harness.RandomNonce()}
			s := mint(t, key, tok)
			if resp := c.PostURL(t, "demo", s); resp.StatusCode != 200 {
				t.Fatalf("status %d body %s, want 200", resp.StatusCode, resp.Body)
			}
			c.Stop()

			ssn := p["contact"].(map[string]any)["ssn"].(string)
			parts := strings.Split(s, ".")
			var warned, roundtripWithSSN, roundtripWithClaims, debugLines bool
			for _, line := range strings.Split(c.Logs(), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) != nil {
					continue
				}
				logger, _ := m["logger"].(string)
				msg, _ := m["msg"].(string)
				debugLines = debugLines || m["level"] == "debug"
				if logger == "http.handlers.jwt_partner" && m["level"] == "warn" && strings.HasPrefix(msg, proxyDebugWarning) {
					warned = true
				}
				// The token and its nonce travel in the body, which no logger writes.
				for _, leak := range []string{s, parts[2], tok.Nonce} {
					if strings.Contains(line, leak) {
						t.Errorf("a %s line carries the token or its nonce: %s", logger, line)
					}
				}
				if logger == "http.handlers.reverse_proxy" {
					if msg == "upstream roundtrip" && strings.Contains(line, "X-Partner-Contact-Ssn") && strings.Contains(line, ssn) {
						roundtripWithSSN = true
					}
					if msg == "upstream roundtrip" && strings.Contains(line, "X-Partner-Claims") && strings.Contains(line, parts[1]) {
						roundtripWithClaims = true
					}
					continue
				}
				// Every other logger, jwt_partner's own included, is clean at DEBUG too.
				for _, leak := range append(secrets(p), parts[1]) {
					if strings.Contains(line, leak) {
						t.Errorf("a %s line carries a payload value or the claims: %s", logger, line)
					}
				}
			}
			if !debugLines {
				t.Fatalf("no debug line: the test does not run at DEBUG\n%s", c.Logs())
			}
			if warned != tt.leaks {
				t.Errorf("jwt_partner warned that reverse_proxy logs at debug level: %v, want %v\n%s", warned, tt.leaks, c.Logs())
			}
			if roundtripWithSSN != tt.leaks {
				t.Errorf("reverse_proxy's upstream roundtrip line shows X-Partner-Contact-Ssn: %v, want %v (if Caddy changed, correct SECURITY.md and docs/jwt_partner.md, then this test)\n%s", roundtripWithSSN, tt.leaks, c.Logs())
			}
			if roundtripWithClaims != tt.leaks {
				t.Errorf("reverse_proxy's upstream roundtrip line shows X-Partner-Claims: %v, want %v (if Caddy changed, correct SECURITY.md and docs/jwt_partner.md, then this test)\n%s", roundtripWithClaims, tt.leaks, c.Logs())
			}
		})
	}
}
