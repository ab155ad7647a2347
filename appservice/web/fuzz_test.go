package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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

		valid := false
		if k, ok := linkspec.ParseKind(kind); ok {
			if p, ok := exactPayload(claims); ok {
				got, err := p.Validate(k)
				valid = err == nil && got == k
			}
		}
		switch {
		case valid && res.StatusCode != http.StatusOK:
			t.Errorf("valid %s payload answered %d, want 200", kind, res.StatusCode)
		case !valid && res.StatusCode != http.StatusBadRequest:
			t.Errorf("invalid payload (kind %q) answered %d, want 400", kind, res.StatusCode)
		}
	})
}

// exactPayload decodes claims by the gateway's rules, stated here without the linkspec
// decoder: a JSON object within MaxClaimsDepth, member names matched exactly
// (go-json-experiment's default: case-sensitive, duplicate names and invalid UTF-8
// refused, where encoding/json would take "emploYeeId" for employeeId), and no member
// named like a defined field, or at the top level like a registered claim (iss, nonce, …),
// but for case, '-' or '_'.
func exactPayload(claims []byte) (*linkspec.Payload, bool) {
	var p linkspec.Payload
	if linkspec.CheckClaimsDepth(claims) != nil || jsonv2.Unmarshal(claims, &p) != nil {
		return nil, false
	}
	var members map[string]jsontext.Value
	if jsonv2.Unmarshal(claims, &members) != nil {
		return nil, false
	}
	var defined, inContact []string
	for _, f := range linkspec.Fields {
		if name, ok := strings.CutPrefix(f.Path, "contact."); ok {
			inContact = append(inContact, name)
		} else {
			defined = append(defined, f.Path)
		}
	}
	// At the top level the registered claims count as defined names too: a token carries
	// them beside the payload, so "Nonce" or "e_x_p" would be read as one by a lenient decoder.
	top := append(append(defined, "contact"), linkspec.ReservedClaims...)
	if nearDefined(members, top) {
		return nil, false
	}
	if c, ok := members["contact"]; ok && c.Kind() == '{' {
		var contact map[string]jsontext.Value
		if jsonv2.Unmarshal(c, &contact) != nil || nearDefined(contact, inContact) {
			return nil, false
		}
	}
	return &p, true
}

func nearDefined(members map[string]jsontext.Value, defined []string) bool {
	for name := range members {
		bare := strings.NewReplacer("-", "", "_", "").Replace(name)
		for _, d := range defined {
			if name != d && strings.EqualFold(bare, d) {
				return true
			}
		}
	}
	return false
}
