package linktoken_test

import (
	"context"
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/linktoken/linktokentest"
)

// TestVerifyAcceptsHintsDropsAndGoExtras runs the table of tokens an earlier gateway
// refused and this one accepts: certificate hints in the header (ignored), malformed
// optional values (dropped from the payload and the forwarded claims), extra user data in
// a Go link. The table lives in linktokentest so that the partner kit's check runs it too.
func TestVerifyAcceptsHintsDropsAndGoExtras(t *testing.T) {
	set := linktokentest.KeySet(t)
	for _, tc := range linktokentest.Acceptances() {
		t.Run(tc.Name, func(t *testing.T) {
			v, err := linktoken.NewVerifier(tc.Rules, linktoken.WithClock(func() time.Time { return tc.Now }))
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			tok, err := v.Verify(context.Background(), []byte(tc.Token(t)), set)
			if err != nil {
				t.Fatalf("Verify(%s) = %v, want accepted", tc.Name, err)
			}
			if tok.Kind != tc.Kind {
				t.Errorf("Verify(%s).Kind = %q, want %q", tc.Name, tok.Kind, tc.Kind)
			}
			var dropped []string
			for _, f := range tok.Dropped {
				dropped = append(dropped, f.Field)
				if f.Reason == "" {
					t.Errorf("Verify(%s): dropped %s without a reason", tc.Name, f.Field)
				}
			}
			if !reflect.DeepEqual(dropped, tc.Dropped) {
				t.Errorf("Verify(%s).Dropped = %q, want %q", tc.Name, dropped, tc.Dropped)
			}
			claims, err := base64.RawURLEncoding.DecodeString(tok.Claims)
			if err != nil {
				t.Fatalf("Verify(%s).Claims is not base64url: %v", tc.Name, err)
			}
			// The forwarded claims decode by the app service's rules to the verified payload.
			p, err := linkspec.DecodePayload(claims)
			if err != nil {
				t.Fatalf("DecodePayload(Verify(%s).Claims) = %v", tc.Name, err)
			}
			if !reflect.DeepEqual(*p, tok.Payload) {
				t.Errorf("Verify(%s): the claims' payload %+v differs from the verified payload %+v", tc.Name, *p, tok.Payload)
			}
			vals := tok.Payload.Values()
			values := strings.Join(vals[:], "\n")
			for _, gone := range tc.Gone {
				if strings.Contains(values, gone) || strings.Contains(string(claims), gone) {
					t.Errorf("Verify(%s): the dropped value %q is still in the payload or the claims", tc.Name, gone)
				}
			}
			if len(tc.Dropped) == 0 && !strings.Contains(string(claims), tok.Nonce) {
				t.Errorf("Verify(%s).Claims lost the nonce", tc.Name)
			}
		})
	}
}

// TestVerifyDroppedClaimsKeepEverythingElse: the claims forwarded after a drop are the
// signed claim set less the dropped members, extra claims and registered claims included.
func TestVerifyDroppedClaimsKeepEverythingElse(t *testing.T) {
	c := jwttest.MainClaims()
	c["contact"].(map[string]any)["email"] = "no address"
	c["contact"].(map[string]any)["x-extra"] = "kept"
	c["partnerRef"] = map[string]any{"a": []any{1, "b"}}
	tokStr := jwttest.Token(t, linktoken.RS256, "rsa-1", c)
	v, err := linktoken.NewVerifier(linktoken.Rules{Issuer: jwttest.Issuer, Audience: jwttest.Audience},
		linktoken.WithClock(func() time.Time { return jwttest.Now }))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := v.Verify(context.Background(), []byte(tokStr), linktokentest.KeySet(t))
	if err != nil {
		t.Fatalf("Verify = %v, want accepted", err)
	}
	claims, _ := base64.RawURLEncoding.DecodeString(tok.Claims)
	want := `{"aud":"` + jwttest.Audience + `","caseId":"case-9","contact":{"birthdate":"1980-02-29","firstname":"Zoë","id":"c-7","lastname":"Þórsdóttir","ssn":"20400229-1237","x-extra":"kept"},`
	if !strings.HasPrefix(string(claims), want) {
		t.Errorf("forwarded claims = %s, want them to start %s", claims, want)
	}
	for _, s := range []string{`"partnerRef":{"a":[1,"b"]}`, `"nonce":"` + jwttest.Nonce + `"`, `"iss":"` + jwttest.Issuer + `"`} {
		if !strings.Contains(string(claims), s) {
			t.Errorf("forwarded claims = %s, want them to keep %s", claims, s)
		}
	}
}
