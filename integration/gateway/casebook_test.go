package gateway

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
	"github.com/partnergate/partnergate/problem"
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
// running gateway, each to a partner configured with the case's rules, and wants the
// case's own code from the gateway, with nothing forwarded.
//
// The gateway reads tokens at the real clock, so each case's token is issued just before
// it is posted, at the instant that puts the moment the case is meant to be read at (its
// Now) at the real now: an expiry case is minted long enough ago, a not-yet-valid one in
// the future. The verifier reads the same token at the real clock before and after the
// post; when the two differ a time boundary was crossed during the post (a stalled
// machine), and the case is minted again. Only the body limits come before the verifier:
// a body over max_body_size is body_too_large and an empty one token_missing; and the
// endpoint trims the body, so a valid token with a newline after it is accepted.
func TestEveryVerifierRejectionThroughTheGateway(t *testing.T) {
	base := time.Now()
	cases := linktokentest.RejectionsAt(base)
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

	byBody, trimmed := 0, 0
	for i, c := range cases {
		offset := c.Now.Sub(base) // where the case reads its token, from the issue instant
		t.Run(c.Name, func(t *testing.T) {
			v, err := linktoken.NewVerifier(c.Rules)
			if err != nil {
				t.Fatalf("NewVerifier(%+v) = %v", c.Rules, err)
			}
			verdict := func(body string) problem.Code {
				_, err := v.Verify(context.Background(), []byte(body), set)
				if err == nil {
					return ""
				}
				return linktoken.CodeOf(err)
			}
			for attempt := 1; ; attempt++ {
				tok := linktokentest.RejectionsAt(time.Now().Add(-offset))[i].Token(t)
				body := strings.TrimSpace(tok) // the endpoint trims the body, as partners' tools add newlines
				want, before := c.Want, problem.Code("")
				switch {
				case len(tok) > linktoken.MaxTokenLength: // the default max_body_size
					want = "body_too_large"
				case body == "":
					want = "token_missing"
				case body != tok && verdict(body) == "":
					// The case is a newline after a valid token: the verifier refuses it, but
					// the endpoint trims the body first, so the gateway accepts it.
					want = ""
				default:
					if before = verdict(body); before != c.Want {
						t.Fatalf("case %s: the verifier at the real clock answers %q, the case wants %s", c.Name, before, c.Want)
					}
				}
				resp := g.PostURL(t, partnerOf[fmt.Sprintf("%+v", c.Rules)], tok)
				if want == c.Want {
					if after := verdict(body); after != before {
						if attempt < 3 {
							t.Logf("case %s: the verifier answered %s before the post and %s after it; minting again", c.Name, before, after)
							continue
						}
						t.Fatalf("case %s: a time boundary was crossed during each of %d posts", c.Name, attempt)
					}
				} else {
					byBody++
				}
				if want == "" {
					trimmed++
					if resp.StatusCode != http.StatusOK {
						t.Errorf("case %s: gateway answered %d to the trimmed token, want 200", c.Name, resp.StatusCode)
					}
					return
				}
				p := decodeProblem(t, resp)
				if resp.StatusCode < 400 || resp.StatusCode >= 500 || p.Code != string(want) {
					t.Errorf("case %s: gateway answered %d %q (%s), want a 4xx with %s", c.Name, resp.StatusCode, p.Code, p.Detail, want)
				}
				for _, s := range c.Secrets {
					if s != "" && strings.Contains(string(resp.Body), s) {
						t.Errorf("case %s: the answer carries %q from the token", c.Name, s)
					}
				}
				return
			}
		})
	}
	if n := len(up.Requests()); n != trimmed {
		t.Errorf("%d tokens reached the upstream, want only the %d that the endpoint's trim makes valid", n, trimmed)
	}
	t.Logf("of %d cases, %d answered with their own code, %d by the body limits, %d accepted after the endpoint's trim",
		len(cases), len(cases)-byBody, byBody-trimmed, trimmed)
}
