package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/partnergate/partnergate/linkspec"
)

// FuzzPartnerLink feeds arbitrary claim sets and kinds through a correctly signed assertion,
// as a broken or compromised gateway could: the app service must answer 200 only for a
// payload that linkspec accepts for the kind, 400 otherwise, and never fail or panic.
func FuzzPartnerLink(f *testing.F) {
	good, _ := json.Marshal(mainPayload())
	goodGo, _ := json.Marshal(goPayload())
	f.Add(good, "main")
	f.Add(goodGo, "go")
	f.Add(goodGo, "main")
	f.Add([]byte(`{"contact":"x"}`), "go")
	f.Add([]byte(`[]`), "main")
	f.Add([]byte(`{"organizationId":"\u0000","contact":{}}`), "go")
	fx := newFixture(f, "http://localhost:8080")
	f.Fuzz(func(t *testing.T, claims []byte, kind string) {
		fw := linkspec.Forwarded{Partner: "demo", Endpoint: "url", Kind: kind, Issuer: "https://partner.example", KeyID: "k1",
			Claims: base64.RawURLEncoding.EncodeToString(claims), RequestID: "fuzz-" + strconv.FormatInt(requestSeq.Add(1), 10)}
		r := httptest.NewRequest(http.MethodPost, "/partner/demo/url", nil)
		for k, v := range map[string]string{"Name": fw.Partner, "Endpoint": fw.Endpoint, "Kind": fw.Kind, "Issuer": fw.Issuer, "Key-Id": fw.KeyID, "Request-Id": fw.RequestID} {
			r.Header.Set("X-Partner-"+k, linkspec.EncodeHeaderValue(v))
		}
		r.Header.Set("X-Partner-Claims", fw.Claims)
		r.Header.Set("X-Partner-Assertion", linkspec.SignAssertion(upstreamSecret, fx.now, fw))
		res := serve(fx.h, r)

		var p linkspec.Payload
		valid := false
		if k, ok := linkspec.ParseKind(kind); ok && json.Unmarshal(claims, &p) == nil {
			got, err := p.Validate(k)
			valid = err == nil && got == k
		}
		switch {
		case valid && res.StatusCode != http.StatusOK:
			t.Errorf("valid %s payload answered %d, want 200", kind, res.StatusCode)
		case !valid && res.StatusCode != http.StatusBadRequest:
			t.Errorf("invalid payload (kind %q) answered %d, want 400", kind, res.StatusCode)
		}
	})
}
