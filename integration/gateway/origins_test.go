package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
)

// TestPayloadOriginsThroughTheGateway: a partner with origins takes /payload forms only from
// its listed pages. A form with another Origin, and one with none (issue 34: no browser's
// form, but a server that turns a lifted token into a login page to send on), is refused
// 403 origin_not_allowed before its token is read: nothing reaches the app service and
// the token stays unspent for the partner's own page. /url needs no Origin.
func TestPayloadOriginsThroughTheGateway(t *testing.T) {
	key := harness.NewKey(t, "ES256", "es")
	const page = "https://ehr.partner.example"
	g := startGateway(t, fileKeys(t, key), "origins "+page, "")
	form := func(tok string, origin ...string) *harness.Response {
		h := http.Header{}
		for _, o := range origin {
			h.Add("Origin", o)
		}
		return g.Post(t, "/partner/demo/payload", "application/x-www-form-urlencoded", "payload="+tok, h)
	}

	tok := mint(t, key, harness.Token{})
	for _, tt := range []struct {
		name   string
		origin []string
	}{
		{"no Origin", nil},
		{"another site's page", []string{"https://evil.example"}},
		{"a page without origin", []string{"null"}},
	} {
		res := form(tok, tt.origin...)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(res.Body), `<code id="code">origin_not_allowed</code>`) {
			t.Errorf("%s: /payload = %d %s, want 403 origin_not_allowed", tt.name, res.StatusCode, res.Body)
		}
	}
	if n := len(g.up.Requests()); n != 0 {
		t.Fatalf("the app service received %d refused forms, want none", n)
	}
	if res := form(tok, page); res.StatusCode != http.StatusOK {
		t.Errorf("the same token from the partner's page = %d %s, want 200 (its nonce unspent)", res.StatusCode, res.Body)
	}
	if res := g.PostURL(t, "demo", mint(t, key, harness.Token{})); res.StatusCode != http.StatusOK {
		t.Errorf("/url without Origin = %d %s, want 200", res.StatusCode, res.Body)
	}
	if n := len(g.up.Requests()); n != 2 {
		t.Errorf("the app service received %d requests, want the partner page's form and the /url link", n)
	}
}
