// Package example runs the repository's Caddyfile.example, as ./run.sh does, on free ports
// with a recording upstream in the app service's place, and checks what the example
// configuration promises beyond the jwt_partner handler: no query string in any log line,
// a clear answer for a Host it does not serve, server timeouts that end a request whose
// body never comes, and no request trailer passed to the app service (probe findings 6, 10,
// 12 and 9 of issue 13), and the desktop wrapper's download and update site (issue 35).
package example

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/harness/browser"
	"github.com/partnergate/partnergate/webwrapper/site"
	"github.com/partnergate/partnergate/webwrapper/update"
)

// exampleFile, when set, is run instead of the repository's Caddyfile.example: to show
// that the tests fail on the example as it was before the probe's findings were fixed.
var exampleFile = flag.String("example", "", "a Caddyfile to run instead of Caddyfile.example")

// TestMain removes the caddy the harness builds for these tests once they have run.
func TestMain(m *testing.M) { harness.Main(m) }

// example is Caddyfile.example running against a recording upstream.
type example struct {
	*harness.Caddy
	up   *harness.Upstream
	host string // the site's Host, localhost:port
	site string // the desktop wrapper's site folder, ./data/webwrapper
}

// startExample starts Caddyfile.example with its placeholders filled with the test's
// addresses, and the demo partner's key file made by the test.
func startExample(t *testing.T) *example {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "Caddyfile.example")
	if *exampleFile != "" {
		file = *exampleFile
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	// The placeholders run.sh fills from its environment (cmd/demo), filled here with the
	// test's own servers.
	for _, r := range []struct{ old, new string }{
		{"{$PARTNERGATE_DEMO_PORT:8080}", "{{.Port}}"},
		{"127.0.0.1:{$PARTNERGATE_DEMO_APP_PORT:9080}", "{{.Vars.upstream}}"},
		{"localhost:{$PARTNERGATE_DEMO_ADMIN_PORT:2019}", "{{.Admin}}"},
		{"{$PARTNERGATE_DEMO_DATA:./data}/demo/jwks.json", "{{.Vars.jwks}}"},
		{"{$PARTNERGATE_DEMO_DATA:./data}/webwrapper", "{{.Vars.site}}"},
	} {
		if !strings.Contains(text, r.old) {
			t.Fatalf("Caddyfile.example has no %q: update this test and cmd/demo together", r.old)
		}
		text = strings.ReplaceAll(text, r.old, r.new)
	}

	up := harness.NewUpstream(t)
	jwks := harness.WriteJWKS(t, t.TempDir(), harness.NewKey(t, "ES256", "demo-1"))
	site := t.TempDir()
	c := harness.StartCaddy(t, harness.Config{
		Caddyfile: text,
		Vars:      map[string]string{"upstream": up.Addr(), "jwks": jwks, "site": site},
		Env:       []string{"PARTNERGATE_UPSTREAM_SECRET=example-test-upstream-secret-0123456789abcdef"},
	})
	return &example{Caddy: c, up: up, host: "localhost:" + strconv.Itoa(c.Port), site: site}
}

// publish makes the desktop wrapper's site of a build of version in the example's site
// folder, as scripts/build-windows.sh does; the installer is a stand-in, "an installer".
func (e *example) publish(t *testing.T, version string) update.Release {
	t.Helper()
	msi := filepath.Join(t.TempDir(), "built.msi")
	if err := os.WriteFile(msi, []byte("an installer"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := site.Write(e.site, msi, version)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// get sends GET path with the site's Host and the given extra headers.
func (e *example) get(t *testing.T, path string, header http.Header) *harness.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = e.host
	for k, vs := range header {
		req.Header[k] = vs
	}
	return harness.Do(t, req)
}

// waitForLog waits until caddy's output holds want; the deadline only keeps a broken test
// from hanging.
func (e *example) waitForLog(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		logs := e.Logs()
		if strings.Contains(logs, want) {
			return logs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in caddy's output after 30s:\n%s", want, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestExampleLogsNoQuery: probe finding 6. The app service's one-time login code, and a
// token under any query name, must not reach the access log or the error log: not from the
// request URI, not from a Referer, not from a Location the upstream answers with.
func TestExampleLogsNoQuery(t *testing.T) {
	e := startExample(t)
	e.up.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/app/form-done":
			http.Redirect(w, r, "/app/login?code=secret-location-code", http.StatusSeeOther)
		case "/app/broken":
			panic(http.ErrAbortHandler) // the connection drops: caddy logs a 502 error line
		default:
			io.WriteString(w, "ok")
		}
	})
	secrets := map[string]string{
		"/app/login?code=secret-login-code":                "secret-login-code",
		"/app/page?jwt=secret-jwt":                         "secret-jwt",
		"/app/page?access_token=secret-access-token":       "secret-access-token",
		"/app/page?token=secret-token&x=1":                 "secret-token",
		"/app/page?payload=secret-payload":                 "secret-payload",
		"/partner/demo/url?token=secret-partner-token":     "secret-partner-token",
		"/app/broken?code=secret-error-code":               "secret-error-code",
		"/app/page?a=1&code=secret-second-code#fragment-x": "secret-second-code",
	}
	for path := range secrets {
		e.get(t, path, nil)
	}
	e.get(t, "/app/page", http.Header{"Referer": {"http://partner.example/case?code=secret-referer-code"}})
	secrets["referer"] = "secret-referer-code"
	if r := e.get(t, "/app/form-done", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET /app/form-done = %d, want the upstream's 303", r.StatusCode)
	}
	secrets["location"] = "secret-location-code"
	e.get(t, "/app/last-request", nil)

	logs := e.waitForLog(t, `"uri":"/app/last-request"`)
	// The lines are there, with their queries cut: the filter ran, the lines were not lost.
	for _, want := range []string{`"uri":"/app/login?-"`, `"uri":"/app/page?-"`, `"logger":"http.log.error`} {
		if !strings.Contains(logs, want) {
			t.Errorf("caddy's output has no %s:\n%s", want, logs)
		}
	}
	for what, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("caddy's output carries %q (from %s)", s, what)
		}
	}
}

// TestExampleLogsNoCSRFToken: issue 25. The page's X-CSRF-Token header, which every
// state-changing API call carries, reaches neither the access log nor the error log: it is
// redacted as the query is, so a line still shows that one was sent.
func TestExampleLogsNoCSRFToken(t *testing.T) {
	e := startExample(t)
	e.up.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/app/broken" {
			panic(http.ErrAbortHandler) // the connection drops: caddy logs a 502 error line
		}
		io.WriteString(w, "ok")
	})
	for _, path := range []string{"/app/api/session/case", "/app/broken"} {
		req, err := http.NewRequest(http.MethodPut, e.URL+path, strings.NewReader(`{"caseId":"c-1"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = e.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-CSRF-Token", "secret-csrf-token-"+path)
		harness.Do(t, req)
	}
	e.get(t, "/app/last-request", nil)
	logs := e.waitForLog(t, `"uri":"/app/last-request"`)
	if strings.Contains(logs, "secret-csrf-token") {
		t.Errorf("caddy's output carries an X-CSRF-Token:\n%s", logs)
	}
	for _, want := range []string{`"uri":"/app/api/session/case"`, `"logger":"http.log.error`, `"X-Csrf-Token":"REDACTED"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("caddy's output has no %s:\n%s", want, logs)
		}
	}
}

// TestExampleUnknownHost: probe finding 10. A partner configured with the gateway's
// address under another name (here 127.0.0.1:port) gets a 421 that names the right host,
// not an empty 200 it would read as success.
func TestExampleUnknownHost(t *testing.T) {
	e := startExample(t)
	req, err := http.NewRequest(http.MethodPost, e.URL+"/partner/demo/url", strings.NewReader("a.b.c"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	r := harness.Do(t, req) // Host: 127.0.0.1:port
	if r.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(r.Body), "http://"+e.host) {
		t.Errorf("POST to Host 127.0.0.1 = %d %q, want 421 naming http://%s", r.StatusCode, r.Body, e.host)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Errorf("the upstream received %d requests for an unknown host, want 0", n)
	}
	// The right host still works.
	if r := e.get(t, "/app/page", nil); r.StatusCode != http.StatusOK {
		t.Errorf("GET /app/page on %s = %d, want 200", e.host, r.StatusCode)
	}
}

// TestExampleBodyNeverSent: probe finding 12. A POST to an app route that announces a
// body and never sends it is ended by the server's timeouts (read_body 10s in the example):
// the client gets an error status or a closed connection. Without them Caddy waits at
// least a minute; the test allows 45s.
func TestExampleBodyNeverSent(t *testing.T) {
	e := startExample(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /app/signin HTTP/1.1\r\nHost: "+e.host+
		"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nusername=a"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := conn.SetReadDeadline(start.Add(45 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	switch {
	case err == nil:
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("POST whose body never came = %d, want an error status or a closed connection", resp.StatusCode)
		}
		t.Logf("answered %d after %v", resp.StatusCode, time.Since(start).Round(time.Second))
	case isTimeout(err):
		t.Fatalf("POST whose body never came: connection still open after %v", time.Since(start).Round(time.Second))
	default:
		t.Logf("connection closed after %v: %v", time.Since(start).Round(time.Second), err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestExampleTrailers: probe finding 9. Caddy 2.11's reverse_proxy forwards a chunked
// request's trailers, and net/http drops the Trailer header before any matcher could see
// it, so neither header_up nor a matcher can strip them: the example's drop_trailers does.
// An X-Partner-* trailer sent to an app route must reach the upstream neither as a header
// nor as a trailer.
func TestExampleTrailers(t *testing.T) {
	e := startExample(t)
	trailers := make(chan http.Header, 1)
	e.up.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trailers <- r.Trailer.Clone() // the harness read the body, so the trailers are in
		io.WriteString(w, "ok")
	})
	req, err := http.NewRequest(http.MethodPost, e.URL+"/app/signin", io.NopCloser(strings.NewReader("username=a")))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = e.host
	req.ContentLength = -1 // chunked
	req.Trailer = http.Header{"X-Partner-Id": {"forged"}}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if r := harness.Do(t, req); r.StatusCode != http.StatusOK {
		t.Fatalf("chunked POST with a trailer = %d, want 200", r.StatusCode)
	}
	got := e.up.Last(t)
	for k := range got.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-partner") {
			t.Errorf("the upstream saw request header %s from a trailer", k)
		}
	}
	select {
	case tr := <-trailers:
		if len(tr) != 0 {
			t.Errorf("the upstream's trailers = %v, want none: drop_trailers must remove them (finding 9)", tr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream handler did not run")
	}
}

// TestExampleAccessLogRefusal: issue 18. The access log line of a refused link carries the
// request id the partner was given and the rejection's code, so that one line answers
// "why was this link refused".
func TestExampleAccessLogRefusal(t *testing.T) {
	e := startExample(t)
	req, err := http.NewRequest(http.MethodPost, e.URL+"/partner/demo/url", strings.NewReader("not.a.token"))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = e.host
	req.Header.Set("Content-Type", "text/plain")
	r := harness.Do(t, req)
	var answer struct {
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(r.Body, &answer); err != nil || r.StatusCode < 400 || answer.Code == "" || answer.RequestID == "" {
		t.Fatalf("POST /partner/demo/url with a malformed token = %d %s, want a problem with a code and a request id (%v)", r.StatusCode, r.Body, err)
	}

	e.waitForLog(t, `"uri":"/partner/demo/url"`)
	var line map[string]any
	for l := range strings.SplitSeq(e.Logs(), "\n") {
		if strings.Contains(l, `"logger":"http.log.access`) && strings.Contains(l, `"uri":"/partner/demo/url"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("access log line %q: %v", l, err)
			}
		}
	}
	if line == nil {
		t.Fatalf("no access log line for /partner/demo/url:\n%s", e.Logs())
	}
	if got := line["request_id"]; got != answer.RequestID {
		t.Errorf("access log request_id = %v, want the answer's %q", got, answer.RequestID)
	}
	if got := line["error_code"]; got != answer.Code {
		t.Errorf("access log error_code = %v, want the answer's %q", got, answer.Code)
	}
}

// TestExampleHealthz: the example's /healthz is the load balancer's one check, the gateway's
// readiness and then the app service's. With the demo partner's key file loaded and the
// memory store the gateway is ready, so it reaches the app service's /healthz and answers
// what that answers; the app's 503 (its database down) comes back as it is. The gateway's
// own 503 (Redis down, keys not loaded) is integration/redisstore's TestReadyFollowsRedisAndKeys.
func TestExampleHealthz(t *testing.T) {
	e := startExample(t)
	appStatus := http.StatusOK
	e.up.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			t.Errorf("the app service got %s, want only /healthz", r.URL.Path)
		}
		w.WriteHeader(appStatus)
		io.WriteString(w, "app health")
	})
	if r := e.get(t, "/healthz", nil); r.StatusCode != http.StatusOK || string(r.Body) != "app health" {
		t.Errorf("GET /healthz = %d %q, want the app service's 200 answer", r.StatusCode, r.Body)
	}
	appStatus = http.StatusServiceUnavailable
	if r := e.get(t, "/healthz", nil); r.StatusCode != http.StatusServiceUnavailable || string(r.Body) != "app health" {
		t.Errorf("GET /healthz with the app's database down = %d %q, want the app service's 503", r.StatusCode, r.Body)
	}
	if n := len(e.up.Requests()); n != 2 {
		t.Errorf("the app service was asked %d times, want 2", n)
	}
}

// TestExampleWebwrapperSite: issue 35. The desktop wrapper's download and update site
// ({webwrapper_site}) as the build makes it (webwrapper/site), served by the example's
// own route from ./data/webwrapper: the page, the feed the wrapper reads, the installer
// with its type; /webwrapper leads to the page; no folder listing, no dot file (one being
// copied in), and a missing file is the gateway's 404, never the app service's.
func TestExampleWebwrapperSite(t *testing.T) {
	e := startExample(t)
	r := e.publish(t, "2.1.5.9")
	if err := os.WriteFile(filepath.Join(e.site, ".stable.json.new"), []byte(`{"version":"9.9.9.9"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.site, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.site, "old", "SvcWebwrapper-2.1.5.8.msi"), []byte("older"), 0o644); err != nil {
		t.Fatal(err)
	}

	if got := e.get(t, "/webwrapper", nil); got.StatusCode != http.StatusPermanentRedirect || got.Header.Get("Location") != "/webwrapper/" {
		t.Errorf("GET /webwrapper = %d Location %q, want 308 to /webwrapper/", got.StatusCode, got.Header.Get("Location"))
	}
	page := e.get(t, "/webwrapper/", nil)
	if page.StatusCode != http.StatusOK || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page.Body), `href="SvcWebwrapper-2.1.5.9.msi"`) || !strings.Contains(string(page.Body), r.SHA256) {
		t.Errorf("GET /webwrapper/ = %d %s, want the download page of 2.1.5.9 with its SHA-256:\n%s", page.StatusCode, page.Header.Get("Content-Type"), page.Body)
	}
	if got := page.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("the page's Cache-Control = %q, want no-cache", got)
	}
	feed := e.get(t, "/webwrapper/stable.json", nil)
	var rel struct{ Version, SHA256 string }
	if feed.StatusCode != http.StatusOK || json.Unmarshal(feed.Body, &rel) != nil || rel.Version != "2.1.5.9" || rel.SHA256 != r.SHA256 {
		t.Errorf("GET /webwrapper/stable.json = %d %s, want the feed of 2.1.5.9", feed.StatusCode, feed.Body)
	}
	inst := e.get(t, "/webwrapper/SvcWebwrapper-2.1.5.9.msi", nil)
	if inst.StatusCode != http.StatusOK || string(inst.Body) != "an installer" || inst.Header.Get("Content-Type") != "application/x-msi" {
		t.Errorf("GET the installer = %d %s %q, want it as application/x-msi", inst.StatusCode, inst.Header.Get("Content-Type"), inst.Body)
	}
	for _, path := range []string{"/webwrapper/.stable.json.new", "/webwrapper/old/", "/webwrapper/SvcWebwrapper-2.1.6.0.msi"} {
		if got := e.get(t, path, nil); got.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d %q, want 404", path, got.StatusCode, got.Body)
		}
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Errorf("the app service was asked %d times, want never", n)
	}
}

// TestExampleWebwrapperPageLanguage: the download page opens in the first of the
// browser's languages that it has (Swedish, German behind French), else in English; its
// language menu switches.
func TestExampleWebwrapperPageLanguage(t *testing.T) {
	e := startExample(t)
	e.publish(t, "2.1.5.9")
	// The browser asks for the site's own name, which the example serves.
	page := "http://" + e.host + "/webwrapper/"
	shown := `[...document.querySelectorAll("section")].filter(s => s.offsetParent !== null).map(s => s.lang).join(",")`
	for _, tt := range []struct{ languages, want string }{
		{"sv-SE,sv", "sv"},
		{"fr-FR,fr,de", "de"},
		{"nn-NO", "nb"},
		{"fr-FR", "en"},
	} {
		ctx := browser.New(t, chromedp.Flag("lang", tt.languages), chromedp.Flag("accept-lang", tt.languages))
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(c, chromedp.Navigate(page)); err != nil {
			t.Fatalf("opening %s in a browser set to %s: %v", page, tt.languages, err)
		}
		if got := visible(t, c, shown); got != tt.want {
			t.Errorf("a browser set to %s shows the sections %q, want %q", tt.languages, got, tt.want)
		}
		if tt.want == "en" {
			if err := chromedp.Do(c, chromedp.Click(chromedp.CSS(`nav a[hreflang="da"]`))); err != nil {
				t.Fatal(err)
			}
			if got := visible(t, c, shown); got != "da" {
				t.Errorf("after choosing Dansk the page shows %q, want da", got)
			}
		}
	}
}

// visible evaluates expr, the sections shown, once the page shows one; the page picks its
// language as it loads, and a navigation to its anchor may replace the context an
// evaluation ran in, so a failed evaluation is tried again until ctx ends.
func visible(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err == nil && got != "" {
			return got
		}
		if ctx.Err() != nil {
			t.Fatalf("the page shows no section: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
