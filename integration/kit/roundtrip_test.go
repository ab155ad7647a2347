package kit

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var algs = []string{"RS256", "PS256", "ES256"}

// TestKitTokensAcceptedByGateway: keys from keygen, tokens from mint, send and send --form,
// for every algorithm and both kinds, through the real gateway.
func TestKitTokensAcceptedByGateway(t *testing.T) {
	dirs := map[string]string{}
	var partners []string
	for _, alg := range algs {
		dirs[alg] = keygen(t, alg, "k-"+strings.ToLower(alg))
		partners = append(partners, ownPartner(strings.ToLower(alg), "jwks_file "+filepath.Join(dirs[alg], "jwks.json"), "algorithms "+alg))
	}
	c, up := startGateway(t, partners...)

	for _, alg := range algs {
		name := strings.ToLower(alg)
		for _, kind := range []string{"main", "go"} {
			t.Run(alg+"/"+kind+"/mint", func(t *testing.T) {
				resp := c.PostURL(t, name, mint(t, dirs[alg], kind, "--aud", audienceOf(name)))
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("gateway answered %d %s, want 200", resp.StatusCode, resp.Body)
				}
				got := up.Last(t)
				if k := got.Header.Get("X-Partner-Kind"); k != kind {
					t.Errorf("upstream X-Partner-Kind = %q, want %q", k, kind)
				}
				if kid := got.Header.Get("X-Partner-Key-Id"); kid != "k-"+name {
					t.Errorf("upstream X-Partner-Key-Id = %q, want k-%s", kid, name)
				}
				if fn := got.Header.Get("X-Partner-Contact-Firstname"); fn != "J%C3%BCrgen" {
					t.Errorf("upstream X-Partner-Contact-Firstname = %q, want J%%C3%%BCrgen", fn)
				}
			})
			t.Run(alg+"/"+kind+"/send", func(t *testing.T) {
				args := []string{"send", "--gateway", c.URL, "--partner", name, "--key", filepath.Join(dirs[alg], "private.pem"), "--iss", issuer, "--aud", audienceOf(name)}
				r := partnerlink(t, append(args, fieldsOf(kind)...)...)
				if r.code != 0 || strings.TrimSpace(r.stdout) != appURL {
					t.Errorf("send = %d, stdout %q, stderr %q; want 0 and %s", r.code, r.stdout, r.stderr, appURL)
				}
			})
			t.Run(alg+"/"+kind+"/form", func(t *testing.T) {
				page := filepath.Join(t.TempDir(), "link.html")
				args := []string{"send", "--gateway", c.URL, "--partner", name, "--form", page, "--key", filepath.Join(dirs[alg], "private.pem"), "--iss", issuer, "--aud", audienceOf(name)}
				mustPartnerlink(t, append(args, fieldsOf(kind)...)...)
				html, err := os.ReadFile(page)
				if err != nil {
					t.Fatal(err)
				}
				action, token := formOf(t, string(html))
				if action != c.URL+"/partner/"+name+"/payload" {
					t.Errorf("form action = %q, want the gateway's /payload", action)
				}
				resp := c.PostPayload(t, name, token)
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(resp.Body), "signed in") {
					t.Errorf("posting the form's token: %d %s, want the upstream's page", resp.StatusCode, resp.Body)
				}
			})
		}
	}

	t.Run("send rejected", func(t *testing.T) {
		args := []string{"send", "--gateway", c.URL, "--partner", "es256", "--key", filepath.Join(dirs["ES256"], "private.pem"), "--iss", issuer, "--aud", "another"}
		r := partnerlink(t, append(args, goFields...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "rejected (401): audience_invalid") || !strings.Contains(r.stderr, "request id") {
			t.Errorf("send (wrong aud) = %d, stderr %q; want 1, 401 audience_invalid and the request id", r.code, r.stderr)
		}
		args = []string{"send", "--gateway", c.URL, "--partner", "nobody", "--key", filepath.Join(dirs["ES256"], "private.pem"), "--iss", issuer, "--aud", audience}
		r = partnerlink(t, append(args, goFields...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "partner_unknown") {
			t.Errorf("send (unknown partner) = %d, stderr %q; want 1 and partner_unknown", r.code, r.stderr)
		}
	})
}

var (
	formAction = regexp.MustCompile(`<form id="link" method="post" action="([^"]+)">`)
	formToken  = regexp.MustCompile(`<input type="hidden" name="payload" value="([^"]+)">`)
)

func formOf(t *testing.T, html string) (action, token string) {
	t.Helper()
	a, tok := formAction.FindStringSubmatch(html), formToken.FindStringSubmatch(html)
	if a == nil || tok == nil {
		t.Fatalf("page has no form with a payload field:\n%s", html)
	}
	return a[1], tok[1]
}
