package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
)

// TestRefusalPageInBrowsersLanguage: through the running gateway, a person whose browser
// asks for Norwegian sees the /payload refusal page in Norwegian, with the stable code,
// status and request id; the upstream never sees the refused link.
func TestRefusalPageInBrowsersLanguage(t *testing.T) {
	key := harness.NewKey(t, "ES256", "k1")
	g := startGateway(t, fileKeys(t, key), "", "")
	expired := mint(t, key, harness.Token{Now: time.Now().Add(-10 * time.Minute)})
	resp := g.Post(t, "/partner/demo/payload", "application/x-www-form-urlencoded", "payload="+url.QueryEscape(expired),
		http.Header{"Accept-Language": {"nb-NO,nb;q=0.9,en;q=0.8"}})
	body := string(resp.Body)
	for _, want := range []string{`<html lang="nb">`, "<h1>Lenken er utløpt</h1>", "Lenken kunne ikke åpnes.", `<code id="code">token_expired</code>`, "Feilkode", "(HTTP 401)"} {
		if !strings.Contains(body, want) {
			t.Errorf("Norwegian refusal page lacks %s:\n%s", want, body)
		}
	}
	if resp.StatusCode != 401 || resp.Header.Get("Content-Language") != "nb" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("Norwegian refusal page: status %d, Content-Language %q, CSP %q", resp.StatusCode, resp.Header.Get("Content-Language"), resp.Header.Get("Content-Security-Policy"))
	}
	if n := len(g.up.Requests()); n != 0 {
		t.Errorf("the upstream saw %d requests, want none", n)
	}
}
