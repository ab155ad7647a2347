package gateway

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
	"github.com/partnergate/partnergate/partnerkit"
)

// casebookGateway runs one handler per route name, each with its partner of the same name
// configured with the rules given, all in front of one recording upstream. One handler per
// partner: the casebook's rule sets share an issuer and audience, which partners of one
// handler may not (probe finding 7 of issue 13).
func casebookGateway(t *testing.T, jwks string, partners map[string]linktoken.Rules) (*harness.Caddy, *harness.Upstream) {
	up := harness.NewUpstream(t)
	var routes strings.Builder
	for name, r := range partners {
		fmt.Fprintf(&routes, "\troute /partner/%s/* {\n\t\tjwt_partner {\n%s\t\t}\n\t\treverse_proxy %s\n\t}\n",
			name, harness.PartnerBlock(name, linktokentest.CaddyfileLines(jwks, r)...), up.Addr())
	}
	g := harness.StartCaddy(t, harness.Config{
		Caddyfile: "{\n\tadmin {{.Admin}}\n}\n\nhttp://127.0.0.1:{{.Port}} {\n{{.Vars.routes}}}\n",
		Vars:      map[string]string{"routes": routes.String()},
	})
	return g, up
}

// casebookJWKS writes the cases' key set and returns its path.
func casebookJWKS(t *testing.T) ([]byte, string) {
	data := jwttest.StandardSetJSON(t)
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data, path
}

// answerOf is the verifier's answer as a problem document carries it: what the gateway
// answers and partnerkit.Check reports.
func answerOf(r *partnerkit.Report) problemDoc {
	p := problemDoc{Code: string(r.Code), Detail: r.Detail, Expected: r.Expected, MaxLifetime: r.MaxLifetime, KindFrom: r.KindFrom}
	if !r.Accepted {
		p.Kind = string(r.Kind)
	}
	for _, f := range r.Fields {
		p.Fields = append(p.Fields, struct {
			Field  string `json:"field"`
			Reason string `json:"reason"`
		}{f.Field, f.Reason})
	}
	return p
}

// TestEveryVerifierRejectionThroughTheGateway posts every rejection case of the verifier's
// table (linktokentest, which linktoken's and the partner kit's tests run too) to the
// running gateway, each to a partner configured with the case's rules, and wants the
// case's own code from the gateway, with nothing forwarded; and wants the gateway's answer
// to be partnerkit.Check's (what `partnerlink check` prints) for the same token, rules and
// key set: code, detail and the problem document's members, word for word.
//
// The gateway reads tokens at the real clock, so each case's token is issued just before
// it is posted, at the instant that puts the moment the case is meant to be read at (its
// Now) at the real now: an expiry case is minted long enough ago, a not-yet-valid one in
// the future. Check reads the same token at the real clock before and after the post; when
// the two differ a time boundary was crossed during the post (a stalled machine), and the
// case is minted again. Only the body limits come before the verifier: a body over
// max_body_size is body_too_large and an empty one token_missing; and the endpoint trims
// the body, as Check does, so a valid token with a newline after it is accepted.
func TestEveryVerifierRejectionThroughTheGateway(t *testing.T) {
	base := time.Now()
	cases := linktokentest.RejectionsAt(base)
	jwksJSON, jwks := casebookJWKS(t)
	partnerOf := map[string]string{}
	partners := map[string]linktoken.Rules{}
	for _, c := range cases {
		key := fmt.Sprintf("%+v", c.Rules)
		if _, ok := partnerOf[key]; !ok {
			name := fmt.Sprintf("rules%d", len(partnerOf))
			partnerOf[key] = name
			partners[name] = c.Rules
		}
	}
	g, up := casebookGateway(t, jwks, partners)

	byBody, trimmed := 0, 0
	for i, c := range cases {
		offset := c.Now.Sub(base) // where the case reads its token, from the issue instant
		t.Run(c.Name, func(t *testing.T) {
			check := func(tok string) *partnerkit.Report {
				return partnerkit.Check(context.Background(), tok, jwksJSON, c.Rules, time.Now())
			}
			for attempt := 1; ; attempt++ {
				tok := linktokentest.RejectionsAt(time.Now().Add(-offset))[i].Token(t)
				want := c.Want
				var before *partnerkit.Report
				switch {
				case len(tok) > linktoken.MaxTokenLength: // the default max_body_size
					want = "body_too_large"
				case strings.TrimSpace(tok) == "":
					want = "token_missing"
				default:
					before = check(tok)
					if strings.TrimSpace(tok) != tok && before.Accepted {
						// A newline after a valid token: the verifier refuses it, but the
						// endpoint trims the body first, as Check does.
						want = ""
					} else if before.Code != c.Want {
						t.Fatalf("case %s: Check at the real clock answers %q, the case wants %s", c.Name, before.Code, c.Want)
					}
				}
				resp := g.PostURL(t, partnerOf[fmt.Sprintf("%+v", c.Rules)], tok)
				if want == c.Want {
					if after := check(tok); after.Code != before.Code || after.Detail != before.Detail {
						if attempt < 3 {
							t.Logf("case %s: Check answered %s before the post and %s after it; minting again", c.Name, before.Code, after.Code)
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
				if before != nil {
					got := problemDoc{Code: p.Code, Detail: p.Detail, Expected: p.Expected, MaxLifetime: p.MaxLifetime, Kind: p.Kind, KindFrom: p.KindFrom, Fields: p.Fields}
					if w := answerOf(before); !reflect.DeepEqual(got, w) {
						t.Errorf("case %s: gateway answered\n%+v\nCheck reports\n%+v", c.Name, got, w)
					}
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

// TestEveryVerifierAcceptanceThroughTheGateway posts every accepted case of the verifier's
// table (linktokentest.Acceptances) to the running gateway, each to a partner of its own
// (the cases share a nonce), and wants it forwarded as the kind partnerkit.Check reports
// for the same token.
func TestEveryVerifierAcceptanceThroughTheGateway(t *testing.T) {
	cases := linktokentest.AcceptancesAt(time.Now())
	jwksJSON, jwks := casebookJWKS(t)
	partners := map[string]linktoken.Rules{}
	for i, c := range cases {
		partners[fmt.Sprintf("acc%d", i)] = c.Rules
	}
	g, up := casebookGateway(t, jwks, partners)
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			tok := linktokentest.AcceptancesAt(time.Now())[i].Token(t)
			r := partnerkit.Check(context.Background(), tok, jwksJSON, c.Rules, time.Now())
			if !r.Accepted || r.Kind != string(c.Kind) {
				t.Fatalf("Check = accepted %v, kind %q (%s %s), want accepted %q", r.Accepted, r.Kind, r.Code, r.Detail, c.Kind)
			}
			up.Reset()
			resp := g.PostURL(t, fmt.Sprintf("acc%d", i), tok)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("gateway = %d %s, want 200 as Check accepts it", resp.StatusCode, resp.Body)
			}
			reqs := up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream received %d requests, want 1", len(reqs))
			}
			if got := header(t, reqs[0].Header, "X-Partner-Kind"); got != string(r.Kind) {
				t.Errorf("forwarded kind = %q, Check reports %q", got, r.Kind)
			}
		})
	}
}
