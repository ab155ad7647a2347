package partnerkit

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
	"github.com/partnergate/partnergate/problem"
)

// brokenToken is one way to get a token wrong, with the code the gateway answers.
type brokenToken struct {
	name string
	code problem.Code
	make func(t testing.TB) string
}

// brokenTokens builds tokens signed with keyFor(alg) under kid "k-"+alg, each broken in one
// way; the empty code is a valid token.
func brokenTokens() []brokenToken {
	hdr := func(alg string) map[string]any { return map[string]any{"typ": "JWT", "kid": "k-" + alg} }
	with := func(alg string, mutate func(h, c map[string]any)) func(t testing.TB) string {
		return func(t testing.TB) string {
			h, c := hdr(alg), validClaims(mainPayload())
			mutate(h, c)
			return signWith(t, keyFor(t, alg), alg, h, c)
		}
	}
	none := func(h, c map[string]any) {}
	return []brokenToken{
		{"valid RS256", "", with("RS256", none)},
		{"valid PS256", "", with("PS256", none)},
		{"valid ES256", "", with("ES256", none)},
		{"not a JWS", problem.CodeTokenMalformed, func(t testing.TB) string { return "not.a-token" }},
		{"typ JOSE", problem.CodeHeaderInvalid, with("ES256", func(h, c map[string]any) { h["typ"] = "JOSE" })},
		{"typ jwt lower case", "", with("ES256", func(h, c map[string]any) { h["typ"] = "jwt" })},
		{"typ missing", problem.CodeHeaderInvalid, with("ES256", func(h, c map[string]any) { delete(h, "typ") })},
		{"kid missing", problem.CodeKeyIDMissing, with("ES256", func(h, c map[string]any) { delete(h, "kid") })},
		{"kid unknown", problem.CodeKeyUnknown, with("ES256", func(h, c map[string]any) { h["kid"] = "k-other" })},
		{"jku present", problem.CodeHeaderInvalid, with("ES256", func(h, c map[string]any) { h["jku"] = "https://evil.example/jwks.json" })},
		{"RSA key under the EC kid", problem.CodeAlgorithmNotAllowed, func(t testing.TB) string {
			return signWith(t, keyFor(t, "RS256"), "RS256", hdr("ES256"), validClaims(mainPayload()))
		}},
		{"signed by another key", problem.CodeSignatureInvalid, func(t testing.TB) string {
			other, _ := GenerateKey("ES256", 0)
			return signWith(t, other, "ES256", hdr("ES256"), validClaims(mainPayload()))
		}},
		{"PS256 key signing RS256", problem.CodeAlgorithmNotAllowed, func(t testing.TB) string {
			return signWith(t, keyFor(t, "PS256"), "RS256", hdr("PS256"), validClaims(mainPayload()))
		}},
		{"wrong iss", problem.CodeIssuerInvalid, with("ES256", func(h, c map[string]any) { c["iss"] = "https://other.example" })},
		{"wrong aud", problem.CodeAudienceInvalid, with("ES256", func(h, c map[string]any) { c["aud"] = []string{"a", "b"} })},
		{"aud array with ours", "", with("ES256", func(h, c map[string]any) { c["aud"] = []string{"x", testAud} })},
		{"exp missing", problem.CodeClaimsInvalid, with("ES256", func(h, c map[string]any) { delete(c, "exp") })},
		{"nbf a string", problem.CodeClaimsInvalid, with("ES256", func(h, c map[string]any) { c["nbf"] = "now" })},
		{"lifetime 6 minutes", problem.CodeLifetimeTooLong, with("ES256", func(h, c map[string]any) { c["exp"] = testNow.Unix() + 360 })},
		{"iat differs from nbf", problem.CodeClaimsInvalid, with("ES256", func(h, c map[string]any) { c["iat"] = testNow.Unix() - 10 })},
		{"expired", problem.CodeTokenExpired, with("ES256", func(h, c map[string]any) {
			c["nbf"], c["iat"], c["exp"] = testNow.Unix()-400, testNow.Unix()-400, testNow.Unix()-280
		})},
		{"not yet valid", problem.CodeTokenNotYetValid, with("ES256", func(h, c map[string]any) {
			c["nbf"], c["iat"], c["exp"] = testNow.Unix()+100, testNow.Unix()+100, testNow.Unix()+200
		})},
		{"nonce missing", problem.CodeNonceMissing, with("ES256", func(h, c map[string]any) { delete(c, "nonce") })},
		{"nonce short", problem.CodeNonceInvalid, with("ES256", func(h, c map[string]any) { c["nonce"] = "abc" })},
		{"nonce a number", problem.CodeNonceInvalid, with("ES256", func(h, c map[string]any) { c["nonce"] = 12345678901234567 })},
		{"duplicate claim", problem.CodeClaimsInvalid, func(t testing.TB) string {
			c := validClaims(mainPayload())
			body, _ := json.Marshal(c)
			body = append(body[:len(body)-1], []byte(`,"iss":"https://evil.example"}`)...)
			s := testSigner(t, "ES256")
			tok, err := s.signRaw(body)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		{"payload field a number", problem.CodePayloadInvalid, with("ES256", func(h, c map[string]any) { c["employeeId"] = 7 })},
		{"payload invalid", problem.CodePayloadInvalid, with("ES256", func(h, c map[string]any) { delete(c, "employeeFirstname") })},
		{"birthdate not a date (optional: dropped)", "", with("ES256", func(h, c map[string]any) {
			c["contact"].(map[string]any)["birthdate"] = "1981-02-29"
		})},
		{"main link without employeeId", problem.CodePayloadInvalid, with("ES256", func(h, c map[string]any) { delete(c, "employeeId") })},
		{"x5t hint", "", with("RS256", func(h, c map[string]any) { h["x5t"] = "bm90LWEtdGh1bWJwcmludA" })},
	}
}

// TestCheckOnGatewayAcceptances runs the verifier's accepted cases (linktokentest) through
// Check: accepted as the gateway accepts them, no step failed, the kind and the dropped
// fields reported, and the explanation names what was dropped and why the kind is what
// it is.
func TestCheckOnGatewayAcceptances(t *testing.T) {
	jwks := jwttest.StandardSetJSON(t)
	for _, tc := range linktokentest.Acceptances() {
		t.Run(tc.Name, func(t *testing.T) {
			r := Check(context.Background(), tc.Token(t), jwks, tc.Rules, tc.Now)
			if !r.Accepted || r.Kind != string(tc.Kind) {
				t.Fatalf("Check(%s) = accepted %v kind %q (%s %s), want accepted %q", tc.Name, r.Accepted, r.Kind, r.Code, r.Detail, tc.Kind)
			}
			if f := firstFailure(r); f != nil {
				t.Errorf("Check(%s) accepted, but step %q failed: %s", tc.Name, f.Rule, f.Detail)
			}
			var dropped, explained []string
			for _, f := range r.Dropped {
				dropped = append(dropped, f.Field)
			}
			for _, s := range r.Steps {
				if strings.HasPrefix(s.Rule, "optional fields") {
					for _, f := range s.Fields {
						explained = append(explained, f.Field)
					}
				}
				if strings.HasPrefix(s.Rule, "the link kind") && !strings.HasPrefix(s.Detail, "a "+string(tc.Kind)+" link: ") {
					t.Errorf("Check(%s) kind step detail = %q, want it to say why it is a %s link", tc.Name, s.Detail, tc.Kind)
				}
			}
			if !reflect.DeepEqual(dropped, tc.Dropped) || !reflect.DeepEqual(explained, tc.Dropped) {
				t.Errorf("Check(%s) Dropped = %q, explained %q, want %q", tc.Name, dropped, explained, tc.Dropped)
			}
		})
	}
}

func testJWKS(t testing.TB) []byte {
	var keys []PublicKey
	for _, alg := range Algorithms {
		keys = append(keys, PublicKey{KeyID: "k-" + alg, Algorithm: alg, Key: keyFor(t, alg).Public()})
	}
	doc, err := MarshalJWKS(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestCheckExplainsTheVerdict: the verdict is linktoken's, and the first failing step of
// the explanation names the same code, so the explanation points at the real reason.
func TestCheckExplainsTheVerdict(t *testing.T) {
	jwks := testJWKS(t)
	rules := linktoken.Rules{Issuer: testIss, Audience: testAud}
	for _, tt := range brokenTokens() {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(context.Background(), tt.make(t), jwks, rules, testNow.Add(30*time.Second))
			if r.Code != tt.code || r.Accepted != (tt.code == "") {
				t.Fatalf("Check verdict = %q (accepted %v, %s), want %q", r.Code, r.Accepted, r.Detail, tt.code)
			}
			var first *Step
			for i := range r.Steps {
				if r.Steps[i].Outcome == Failed {
					first = &r.Steps[i]
					break
				}
			}
			switch {
			case tt.code == "" && first != nil:
				t.Errorf("accepted token, but step %q failed: %s", first.Rule, first.Detail)
			case tt.code != "" && first == nil:
				t.Errorf("rejected with %s, but every step passed", tt.code)
			case tt.code != "" && first.Code != tt.code:
				t.Errorf("first failing step %q has code %s, want %s (%s)", first.Rule, first.Code, tt.code, first.Detail)
			}
			last := r.Steps[len(r.Steps)-1]
			if last.Outcome != Unchecked || last.Code != "token_replayed" {
				t.Errorf("last step = %+v, want the offline replay check", last)
			}
		})
	}
}

// firstFailure returns the first step of r that failed, or nil.
func firstFailure(r *Report) *Step {
	for i := range r.Steps {
		if r.Steps[i].Outcome == Failed {
			return &r.Steps[i]
		}
	}
	return nil
}

// TestCheckOnGatewayRejections runs every rejection case of the gateway's verifier tests
// (linktokentest, the table linktoken's own tests run) through Check: the verdict is the
// gateway's code, and the first failing step of the explanation carries that code.
func TestCheckOnGatewayRejections(t *testing.T) {
	jwks := jwttest.StandardSetJSON(t)
	set := linktokentest.KeySet(t)
	for _, tc := range linktokentest.Rejections() {
		t.Run(tc.Name, func(t *testing.T) {
			tok := tc.Token(t)
			if trimmed := strings.TrimSpace(tok); trimmed != tok {
				// The gateway's endpoints trim surrounding white space before verifying, and
				// so does Check: the gateway's verdict is the verifier's on the trimmed token.
				v, err := linktoken.NewVerifier(tc.Rules, linktoken.WithClock(func() time.Time { return tc.Now }))
				if err != nil {
					t.Fatal(err)
				}
				_, err = v.Verify(context.Background(), []byte(trimmed), set)
				if r := Check(context.Background(), tok, jwks, tc.Rules, tc.Now); r.Code != linktoken.CodeOf(err) || r.Accepted != (err == nil) {
					t.Errorf("Check(%s) = %q (accepted %v), the gateway on the trimmed token: %v", tc.Name, r.Code, r.Accepted, err)
				}
				return
			}
			r := Check(context.Background(), tok, jwks, tc.Rules, tc.Now)
			if r.Accepted || r.Code != tc.Want {
				t.Fatalf("Check(%s) verdict = %q (accepted %v, %s), want %q", tc.Name, r.Code, r.Accepted, r.Detail, tc.Want)
			}
			first := firstFailure(r)
			if first == nil {
				t.Fatalf("Check(%s) rejected with %s, but every step passed", tc.Name, tc.Want)
			}
			if first.Code != tc.Want {
				t.Errorf("Check(%s) first failing step %q has code %s (%s), want %s", tc.Name, first.Rule, first.Code, first.Detail, tc.Want)
			}
		})
	}
}

func TestCheckKindsAndKeySet(t *testing.T) {
	jwks := testJWKS(t)
	tok, err := testSigner(t, "ES256").Sign(mainPayload())
	if err != nil {
		t.Fatal(err)
	}
	r := Check(context.Background(), tok, jwks, linktoken.Rules{Issuer: testIss, Audience: testAud, Kinds: []linkspec.Kind{linkspec.KindGo}}, testNow)
	if r.Accepted || r.Code != problem.CodeKindNotAllowed {
		t.Errorf("Check(main link, Go-only partner) = %q, want kind_not_allowed", r.Code)
	}
	r = Check(context.Background(), tok, jwks, linktoken.Rules{Issuer: testIss, Audience: testAud}, testNow)
	if !r.Accepted || r.Kind != string(linkspec.KindMain) {
		t.Errorf("Check(main link) = %q %s, want accepted main", r.Code, r.Detail)
	}
	private := []byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k-ES256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}]}`)
	r = Check(context.Background(), tok, private, linktoken.Rules{Issuer: testIss, Audience: testAud}, testNow)
	if r.Accepted || r.KeySetError == "" || r.Code != CodeKeySetRefused {
		t.Errorf("Check(private key set) = %q, key set error %q; want keys_unavailable with the reason", r.Code, r.KeySetError)
	}
	if first := firstFailure(r); first == nil || first.Code != CodeKeySetRefused {
		t.Errorf("Check(private key set) first failing step = %+v, want the key lookup with keys_unavailable", first)
	}
	// As at a gateway whose key set could not be loaded, the token's own framing and header
	// are judged first.
	r = Check(context.Background(), "not.a-token", private, linktoken.Rules{Issuer: testIss, Audience: testAud}, testNow)
	if r.Code != problem.CodeTokenMalformed || r.KeySetError == "" {
		t.Errorf("Check(malformed token, private key set) = %q, key set error %q; want token_malformed and the key set error", r.Code, r.KeySetError)
	}
}
