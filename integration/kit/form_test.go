package kit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/internal/harness/browser"
)

// TestFormPageSubmitsInABrowser: the page `partnerlink send --form` writes, served by the
// partner's web server and opened in a real browser, posts itself to /payload, and the
// browser shows what the app service answered. The gateway lists the site among the
// partner's origins, so the page must let the browser name it in Origin (issue 25: a
// referrer policy of no-referrer makes that "null").
func TestFormPageSubmitsInABrowser(t *testing.T) {
	dir := keygen(t, "ES256", "form-1")
	pages := t.TempDir()
	partnerSite := httptest.NewServer(http.FileServer(http.Dir(pages)))
	defer partnerSite.Close()
	c, up := startGateway(t, partner("acme", "jwks_file "+filepath.Join(dir, "jwks.json"), "origins "+partnerSite.URL))
	page := filepath.Join(pages, "link.html")
	mustPartnerlink(t, append([]string{"send", "--gateway", c.URL, "--partner", "acme", "--form", page,
		"--key", filepath.Join(dir, "private.pem"), "--iss", issuer, "--aud", audience}, mainFields...)...)

	bctx := browser.New(t)
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	err := chromedp.Do(ctx,
		chromedp.Navigate(partnerSite.URL+"/link.html"),
		chromedp.WaitVisible(chromedp.ID("signed-in")),
	)
	if err != nil {
		loc, _ := chromedp.Run(bctx, chromedp.Location())
		t.Fatalf("browser did not reach the app service's page: %v (at %s)", err, loc)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != c.URL+"/partner/acme/payload" {
		t.Errorf("browser is at %q (%v), want the gateway's /payload", loc, err)
	}
	got := up.Last(t)
	if got.Method != http.MethodPost || got.Header.Get("X-Partner-Endpoint") != "payload" || got.Header.Get("X-Partner-Kind") != "main" {
		t.Errorf("upstream got %s endpoint %q kind %q, want POST payload main", got.Method, got.Header.Get("X-Partner-Endpoint"), got.Header.Get("X-Partner-Kind"))
	}
	if strings.Contains(string(got.Body), "payload=") {
		t.Error("the token reached the upstream in the body")
	}
}
