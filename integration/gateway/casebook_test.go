package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/integration/harness"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
)

// casebookPartner is the Caddyfile block of a partner with rules r and the cases' key set.
func casebookPartner(name, jwks string, r linktoken.Rules) string {
	lines := []string{"jwks_file " + jwks, "issuer " + r.Issuer, "audience " + r.Audience}
	if len(r.Algorithms) > 0 {
		lines = append(lines, "algorithms "+strings.Join(r.Algorithms, " "))
	}
	if len(r.Kinds) > 0 {
		kinds := make([]string, len(r.Kinds))
		for i, k := range r.Kinds {
			kinds[i] = string(k)
		}
		lines = append(lines, "kinds "+strings.Join(kinds, " "))
	}
	if r.MaxLifetime > 0 {
		lines = append(lines, "max_lifetime "+r.MaxLifetime.String())
	}
	if r.Leeway > 0 {
		lines = append(lines, "leeway "+r.Leeway.String())
	}
	if r.NonceMinLength > 0 {
		lines = append(lines, fmt.Sprintf("nonce_min_length %d", r.NonceMinLength))
	}
	if r.NonceMaxLength > 0 {
		lines = append(lines, fmt.Sprintf("nonce_max_length %d", r.NonceMaxLength))
	}
	return harness.PartnerBlock(name, lines...)
}

// TestEveryVerifierRejectionThroughTheGateway posts every rejection case of the verifier's
// table (linktokentest, which linktoken's and the partner kit's tests run too) to the
// running gateway, each to a partner configured with the case's rules. The gateway must
// answer what the verifier answers for the same body at the gateway's own clock, and
// forward none.
//
// The gateway runs on the real clock and the cases are made at a fixed instant in the
// past, so a case whose token passes every rule before the time window is answered
// token_expired there; every other case must get its own code. The body limits come first:
// a body over max_body_size is body_too_large and an empty one token_missing, before the
// verifier sees it.
func TestEveryVerifierRejectionThroughTheGateway(t *testing.T) {
	cases := linktokentest.Rejections()
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, linktokentest.KeySetJSON(t), 0o644); err != nil {
		t.Fatal(err)
	}
	// One handler per rule set: the rule sets share the cases' issuer and audience, which
	// partners of one handler may not (probe finding 7 of issue 13).
	up := harness.NewUpstream(t)
	partnerOf := map[string]string{}
	var routes strings.Builder
	for _, c := range cases {
		key := fmt.Sprintf("%+v", c.Rules)
		if _, ok := partnerOf[key]; !ok {
			name := fmt.Sprintf("rules%d", len(partnerOf))
			partnerOf[key] = name
			fmt.Fprintf(&routes, "\troute /partner/%s/* {\n\t\tjwt_partner {\n%s\t\t}\n\t\treverse_proxy %s\n\t}\n",
				name, casebookPartner(name, jwks, c.Rules), up.Addr())
		}
	}
	g := harness.StartCaddy(t, harness.Config{
		Caddyfile: "{\n\tadmin {{.Admin}}\n}\n\nhttp://127.0.0.1:{{.Port}} {\n{{.Vars.routes}}}\n",
		Vars:      map[string]string{"routes": routes.String()},
	})
	set := linktokentest.KeySet(t)

	answered := map[string]int{} // how the cases' codes came out: own, expired, body
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			tok := c.Token(t)
			body := strings.TrimSpace(tok) // the endpoint trims the body, as partners' tools add newlines
			var want linktoken.Code
			switch {
			case len(tok) > linktoken.MaxTokenLength: // the default max_body_size
				want, answered["body"] = "body_too_large", answered["body"]+1
			case body == "":
				want, answered["body"] = "token_missing", answered["body"]+1
			default:
				v, err := linktoken.NewVerifier(c.Rules)
				if err != nil {
					t.Fatalf("NewVerifier(%+v) = %v", c.Rules, err)
				}
				_, err = v.Verify(context.Background(), []byte(body), set)
				if err == nil {
					t.Fatalf("the verifier accepts case %s at the real clock", c.Name)
				}
				want = linktoken.CodeOf(err)
				switch want {
				case c.Want:
					answered["own"]++
				case linktoken.CodeTokenExpired:
					answered["expired"]++
				default:
					t.Errorf("case %s: the verifier at the real clock answers %s, the case wants %s; only token_expired may differ", c.Name, want, c.Want)
				}
			}

			resp := g.PostURL(t, partnerOf[fmt.Sprintf("%+v", c.Rules)], tok)
			p := decodeProblem(t, resp)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 || p.Code != string(want) {
				t.Errorf("case %s: gateway answered %d %q (%s), want a 4xx with %s", c.Name, resp.StatusCode, p.Code, p.Detail, want)
			}
			for _, s := range c.Secrets {
				if s != "" && strings.Contains(string(resp.Body), s) {
					t.Errorf("case %s: the answer carries %q from the token", c.Name, s)
				}
			}
		})
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("%d of %d rejected tokens reached the upstream", n, len(cases))
	}
	t.Logf("of %d cases, %d answered with their own code, %d token_expired at the real clock, %d by the body limits",
		len(cases), answered["own"], answered["expired"], answered["body"])
	if answered["own"] < len(cases)*3/4 {
		t.Errorf("only %d of %d cases kept their own code: the table's fixed instant no longer exercises the gateway", answered["own"], len(cases))
	}
}
