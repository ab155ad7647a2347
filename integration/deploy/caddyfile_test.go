package deploy

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/webwrapper/site"
)

// TestDeployCaddyfileRuns runs deploy/Caddyfile in a real Caddy, with what only production
// has pointed at the test's stand-ins: the site on loopback HTTP instead of HTTPS for its
// name, the admin API on a TCP port, the partner's jwks_url at a local key server, the
// memory nonce store instead of Redis over TLS (integration/redisstore covers that), and
// the access log in the test's folder. A refused link then shows on the metrics listener,
// which serves no partner route, and its access log line carries the request id and the
// code but no Authorization or Cookie header. The desktop wrapper's site is served from
// its folder, without the app service.
func TestDeployCaddyfileRuns(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root(t), "deploy", "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	store := regexp.MustCompile(`(?s)\t\t\tnonce_store redis \{.*?\n\t\t\t\}\n`)
	if !store.MatchString(text) {
		t.Fatal("deploy/Caddyfile has no nonce_store redis block: update this test with it")
	}
	text = store.ReplaceAllString(text, "\t\t\tnonce_store memory\n")
	for _, r := range []struct{ old, new string }{
		{"admin unix//run/partnergate-gateway/admin.sock", "admin {{.Admin}}"},
		{"gateway.example.com {", "http://localhost:{{.Port}} {"},
		{"/var/log/partnergate-gateway/access.log", "{{.Dir}}/access.log"},
		{"https://links.acme.example/.well-known/jwks.json", "{{.Vars.jwks}}"},
		{"127.0.0.1:9080", "{{.Vars.upstream}}"},
		{"http://127.0.0.1:9180", "http://127.0.0.1:{{.Vars.metrics}}"},
		{"http://127.0.0.1:9181", "http://127.0.0.1:{{.Vars.ready}}"},
		{"/srv/partnergate/webwrapper", "{{.Vars.site}}"},
	} {
		if !strings.Contains(text, r.old) {
			t.Fatalf("deploy/Caddyfile has no %q: update this test with it", r.old)
		}
		text = strings.ReplaceAll(text, r.old, r.new)
	}

	up := harness.NewUpstream(t)
	keys := harness.NewJWKSServer(t, harness.NewKey(t, "ES256", "acme-1"))
	metricsPort, readyPort := strconv.Itoa(freeport.For(t)), strconv.Itoa(freeport.For(t))
	siteDir := t.TempDir()
	msi := filepath.Join(t.TempDir(), "built.msi")
	if err := os.WriteFile(msi, []byte("an installer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := site.Write(siteDir, msi, "2.1.5.9"); err != nil {
		t.Fatal(err)
	}
	c := harness.StartCaddy(t, harness.Config{
		Caddyfile: text,
		Vars:      map[string]string{"jwks": keys.JWKSURL(), "upstream": up.Addr(), "metrics": metricsPort, "ready": readyPort, "site": siteDir},
		Env:       []string{"PARTNERGATE_UPSTREAM_SECRET=deploy-test-upstream-secret-0123456789abcdef"},
	})

	req, err := http.NewRequest(http.MethodPost, c.URL+"/partner/acme/url", strings.NewReader("not.a.token"))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "localhost:" + strconv.Itoa(c.Port)
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer secret-authorization-value")
	req.Header.Set("Cookie", "session=secret-cookie-value")
	req.Header.Set("X-CSRF-Token", "secret-csrf-token-value")
	r := harness.Do(t, req)
	var answer struct {
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(r.Body, &answer); err != nil || answer.Code != "token_malformed" || answer.RequestID == "" {
		t.Fatalf("POST /partner/acme/url with a malformed token = %d %s, want token_malformed with a request id", r.StatusCode, r.Body)
	}

	metrics := "http://127.0.0.1:" + metricsPort
	body := get(t, metrics+"/metrics", http.StatusOK)
	if !regexp.MustCompile(`(?m)^partnergate_requests_total\{[^}]*outcome="token_malformed"[^}]*partner="acme"[^}]*\} 1$`).MatchString(body) {
		t.Errorf("the metrics listener's /metrics lacks the refused link in partnergate_requests_total:\n%s", grepLines(body, "partnergate_requests_total"))
	}
	if !strings.Contains(body, "caddy_http_requests_total") {
		t.Errorf("the metrics listener's /metrics lacks Caddy's HTTP metrics (the global metrics option)")
	}
	get(t, metrics+"/partner/acme/url", http.StatusNotFound)

	// The readiness listener: ready once the partner's key set has loaded (its first fetch
	// runs in the background), and /healthz then reaches the app service.
	ready := "http://127.0.0.1:" + readyPort
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(ready + "/ready")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"ready":true`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /ready on the readiness listener never answered 200 ready: %v", err)
		}
	}
	before := len(up.Requests())
	get(t, ready+"/healthz", http.StatusOK)
	if len(up.Requests()) != before+1 {
		t.Errorf("GET /healthz on the readiness listener did not reach the app service")
	}
	get(t, ready+"/partner/acme/url", http.StatusNotFound)

	// The desktop wrapper's site (issue 35), from its folder: the app service is not asked.
	before = len(up.Requests())
	siteURL := c.URL + "/webwrapper/"
	for _, f := range []struct{ path, typ, has string }{
		{"", "text/html", `href="SvcWebwrapper-2.1.5.9.msi"`},
		{"stable.json", "application/json", `"version": "2.1.5.9"`},
		{"SvcWebwrapper-2.1.5.9.msi", "application/x-msi", "an installer"},
	} {
		req, err := http.NewRequest(http.MethodGet, siteURL+f.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "localhost:" + strconv.Itoa(c.Port)
		r := harness.Do(t, req)
		if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), f.typ) || !strings.Contains(string(r.Body), f.has) {
			t.Errorf("GET /webwrapper/%s = %d %s, want %s with %q:\n%s", f.path, r.StatusCode, r.Header.Get("Content-Type"), f.typ, f.has, r.Body)
		}
	}
	if n := len(up.Requests()) - before; n != 0 {
		t.Errorf("the site's files reached the app service %d times, want never", n)
	}

	line := accessLine(t, filepath.Join(c.Dir, "access.log"), `"uri":"/partner/acme/url"`)
	if line["request_id"] != answer.RequestID || line["error_code"] != answer.Code {
		t.Errorf("access log request_id, error_code = %v, %v; want %q, %q", line["request_id"], line["error_code"], answer.RequestID, answer.Code)
	}
	headers, _ := line["request"].(map[string]any)["headers"].(map[string]any)
	for _, h := range []string{"Authorization", "Cookie"} {
		if _, ok := headers[h]; ok {
			t.Errorf("the access log line keeps the %s header: %v", h, headers[h])
		}
	}
	// Issue 25: the page's CSRF token is redacted, as the query is.
	if got := headers["X-Csrf-Token"]; got != "REDACTED" {
		t.Errorf("the access log line's X-Csrf-Token = %v, want REDACTED", got)
	}
}

// get fetches url and checks its status.
func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Errorf("GET %s = %d, want %d", url, resp.StatusCode, want)
	}
	return string(b)
}

// accessLine waits for the access log line holding want and decodes it; the deadline only
// keeps a broken test from hanging.
func accessLine(t *testing.T, file, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(file)
		for l := range strings.SplitSeq(string(data), "\n") {
			if strings.Contains(l, want) {
				if strings.Contains(l, "secret-authorization-value") || strings.Contains(l, "secret-cookie-value") || strings.Contains(l, "secret-csrf-token-value") {
					t.Errorf("the access log line carries a credential: %s", l)
				}
				var line map[string]any
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatalf("access log line %q: %v", l, err)
				}
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access log line with %s in %s after 30s:\n%s", want, file, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func grepLines(text, word string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(text, "\n") {
		if strings.Contains(l, word) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
