package partnerkit

import (
	"context"
	"testing"

	"github.com/partnergate/partnergate/linktoken"
)

// FuzzCheck: any token text gets a report, without a panic, and the explanation never
// contradicts the verdict: an accepted token has no failed step, and the first failing step
// of a rejected one carries the verdict's code.
func FuzzCheck(f *testing.F) {
	jwks := testJWKS(f)
	for _, tt := range brokenTokens() {
		if tok := tt.make(f); tok != "" {
			f.Add(tok)
		}
	}
	f.Add("e30.e30.")
	f.Add("..")
	rules := linktoken.Rules{Issuer: testIss, Audience: testAud}
	f.Fuzz(func(t *testing.T, tok string) {
		r := Check(context.Background(), tok, jwks, rules, testNow)
		if r.Accepted {
			for _, s := range r.Steps {
				if s.Outcome == Failed {
					t.Errorf("accepted, but step %q failed", s.Rule)
				}
			}
		} else if r.Code == "" {
			t.Errorf("rejected without a code: %s", r.Detail)
		} else if first := firstFailure(r); first == nil || first.Code != r.Code {
			t.Errorf("rejected with %s, but the first failing step is %+v", r.Code, first)
		}
	})
}

// FuzzParsePayload: payload files are outside input.
func FuzzParsePayload(f *testing.F) {
	f.Add(`{"organizationName":"A","organizationId":"o","contact":{"id":"c","firstname":"F","lastname":"L","email":"a@b"}}`)
	f.Add(`{"employeeID":"x"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePayload([]byte(s))
		if err == nil {
			_, _ = p.Validate()
		}
	})
}

// FuzzParseJWKS: key sets are outside input; a set it accepts holds no private key.
func FuzzParseJWKS(f *testing.F) {
	doc, _ := MarshalJWKS(PublicKey{KeyID: "k", Algorithm: "ES256", Key: keyFor(f, "ES256").Public()})
	f.Add(string(doc))
	f.Add(`{"keys":[{"kty":"oct","k":"AAAA","kid":"s"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := ParseJWKS([]byte(s))
		if err != nil {
			return
		}
		for _, k := range keys {
			if k.KeyID == "" {
				t.Error("accepted a key without kid")
			}
		}
	})
}

func BenchmarkSign(b *testing.B) {
	for _, alg := range Algorithms {
		b.Run(alg, func(b *testing.B) {
			s := testSigner(b, alg)
			p := mainPayload()
			for b.Loop() {
				if _, err := s.Sign(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
