package linktoken

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

// TestAnswersSayHowToFix pins the answers that tell a partner what was expected and how to
// fix the token: the code, the whole detail, and the problem document's members.
func TestAnswersSayHowToFix(t *testing.T) {
	nbf := testNow.Unix()
	es := func(c map[string]any) string { return tokenOf(t, ES256, "ec-1", c) }
	valid := strings.Split(es(mainClaims()), ".")
	main := []string{"employeeId", "employeeFirstname", "employeeLastname"}
	const ms = " far in the future (above 10^11, after the year 5000): a time in milliseconds since 1970, not seconds; " +
		"NumericDate is whole seconds since 1970, in JavaScript Math.floor(Date.now() / 1000)"
	tests := []struct {
		name  string
		rules Rules
		token string
		want  Error
	}{
		{"exp in milliseconds", Rules{}, es(withClaims(func(c map[string]any) { c["exp"] = (nbf + 120) * 1000 })),
			Error{Code: problem.CodeTimeInMilliseconds, Detail: "the exp claim is" + ms}},
		{"nbf, iat and exp from Date.now()", Rules{}, es(withClaims(func(c map[string]any) {
			c["nbf"], c["iat"], c["exp"] = nbf*1000, nbf*1000, (nbf+120)*1000
		})), Error{Code: problem.CodeTimeInMilliseconds, Detail: "the nbf, exp and iat claims are" + ms}},
		{"exp from Date.now() / 1000, a fraction", Rules{}, resign(t, headerJSON(ES256, "ec-1"), rawClaims(t, "exp", "1795000000.123"), ES256, "ec-1"),
			Error{Code: problem.CodeClaimsInvalid, Detail: "the exp claim is not a NumericDate: a JSON integer, whole seconds since 1970 " +
				"(no fraction, no exponent, not a string, at most 18 digits); in JavaScript Math.floor(Date.now() / 1000)"}},
		{"iss other", Rules{}, es(withClaims(func(c map[string]any) { c["iss"] = "https://other.example" })),
			Error{Code: problem.CodeIssuerInvalid, Detail: `the iss claim is not the issuer agreed for this partner: it must be exactly "` + testIssuer + `"`, Hints: problem.Hints{Expected: testIssuer}}},
		{"aud other", Rules{}, es(withClaims(func(c map[string]any) { c["aud"] = []string{"a", "b"} })),
			Error{Code: problem.CodeAudienceInvalid, Detail: `the aud claim does not contain the audience agreed for this partner: it must be "` + testAudience + `", or an array that contains it`, Hints: problem.Hints{Expected: testAudience}}},
		{"lifetime 6 minutes", Rules{}, es(withClaims(func(c map[string]any) { c["exp"] = nbf + 360 })),
			Error{Code: problem.CodeLifetimeTooLong, Detail: "exp is more than 300 seconds after nbf: the partner's tokens live at most 300 seconds (exp - nbf <= 300)", Hints: problem.Hints{MaxLifetime: 300}}},
		{"lifetime over a partner's 2 minutes", Rules{MaxLifetime: 2 * time.Minute}, es(withClaims(func(c map[string]any) { c["exp"] = nbf + 121 })),
			Error{Code: problem.CodeLifetimeTooLong, Detail: "exp is more than 120 seconds after nbf: the partner's tokens live at most 120 seconds (exp - nbf <= 120)", Hints: problem.Hints{MaxLifetime: 120}}},
		{"JWS JSON serialization", Rules{}, `{"protected":"` + valid[0] + `","payload":"` + valid[1] + `","signature":"` + valid[2] + `"}`,
			Error{Code: problem.CodeTokenMalformed, Detail: "the token is a JWS in its JSON serialization: only the compact serialization is accepted; " + compactForm}},
		{"JSON body wrapping the token", Rules{}, `{"payload":"` + strings.Join(valid, ".") + `"}`,
			Error{Code: problem.CodeTokenMalformed, Detail: "the token is a JSON object that wraps a token: send the compact token itself, three base64url parts separated by dots, " +
				"as the body of /url with Content-Type text/plain, or as the form field payload of /payload with Content-Type application/x-www-form-urlencoded"}},
		{"unsigned claims as JSON", Rules{}, claimsJSON(t, mainClaims()),
			Error{Code: problem.CodeTokenMalformed, Detail: "the token is a JSON object, not a signed token (claims must be signed, not sent as JSON): " + compactForm}},
		{"two parts", Rules{}, valid[0] + "." + valid[1],
			Error{Code: problem.CodeTokenMalformed, Detail: "the token does not have three parts separated by dots: " + compactForm}},
		{"main link without organizationId", Rules{}, es(withClaims(func(c map[string]any) { delete(c, "organizationId") })),
			Error{Code: problem.CodePayloadInvalid, Detail: "the payload does not meet the interface; read as a main link, because it carries employeeId, employeeFirstname, employeeLastname",
				Fields: []linkspec.FieldError{{Field: "organizationId", Reason: "required"}}, Hints: problem.Hints{Kind: string(linkspec.KindMain), KindFrom: main}}},
		{"main link with only employeeLastname", Rules{}, es(func() map[string]any { c := goClaims(); c["employeeLastname"] = "Berg"; return c }()),
			Error{Code: problem.CodePayloadInvalid, Detail: "the payload does not meet the interface; read as a main link, because it carries employeeLastname",
				Fields: []linkspec.FieldError{{Field: "employeeId", Reason: "required"}, {Field: "employeeFirstname", Reason: "required"}},
				Hints:  problem.Hints{Kind: string(linkspec.KindMain), KindFrom: []string{"employeeLastname"}}}},
		{"go link without contact email", Rules{}, es(func() map[string]any { c := goClaims(); delete(c["contact"].(map[string]any), "email"); return c }()),
			Error{Code: problem.CodePayloadInvalid, Detail: "the payload does not meet the interface; read as a Go link, because it carries none of employeeId, employeeFirstname and employeeLastname",
				Fields: []linkspec.FieldError{{Field: "contact.email", Reason: "required"}}, Hints: problem.Hints{Kind: string(linkspec.KindGo)}}},
		{"employeeId a number", Rules{}, resign(t, headerJSON(ES256, "ec-1"), rawClaims(t, "employeeId", "1042"), ES256, "ec-1"),
			Error{Code: problem.CodePayloadInvalid, Detail: "a payload field has the wrong JSON type; read as a main link, because it carries employeeId, employeeFirstname, employeeLastname",
				Fields: []linkspec.FieldError{{Field: "employeeId", Reason: "wrong JSON type"}}, Hints: problem.Hints{Kind: string(linkspec.KindMain), KindFrom: main}}},
		{"main link to a Go-only partner", Rules{Kinds: []linkspec.Kind{linkspec.KindGo}}, es(mainClaims()),
			Error{Code: problem.CodeKindNotAllowed, Detail: "this partner may send Go links only; read as a main link, because it carries employeeId, employeeFirstname, employeeLastname",
				Hints: problem.Hints{Kind: string(linkspec.KindMain), KindFrom: main}}},
		{"Go link to a main-only partner", Rules{Kinds: []linkspec.Kind{linkspec.KindMain}}, es(goClaims()),
			Error{Code: problem.CodeKindNotAllowed, Detail: "this partner may send main links only; read as a Go link, because it carries none of employeeId, employeeFirstname and employeeLastname",
				Hints: problem.Hints{Kind: string(linkspec.KindGo)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestVerifier(t, tt.rules)
			_, err := v.Verify(context.Background(), []byte(tt.token), standardSet(t))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify(%s) = %v, want an *Error", tt.name, err)
			}
			got := *e
			got.Err = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Verify(%s) =\n%+v\nwant\n%+v", tt.name, got, tt.want)
			}
			// The trace fails the same rule with the same answer; for the time in
			// milliseconds, the rule is A-DEC-4, and the time rules after it are not reached.
			tr := v.Trace(context.Background(), []byte(tt.token), standardSet(t))
			for _, s := range tr.Steps {
				if s.Outcome != Failed {
					continue
				}
				if s.Code != tt.want.Code || !strings.HasPrefix(s.Detail, tt.want.Detail) {
					t.Errorf("Trace(%s) first failure = %s %q, want %s %q", tt.name, s.Code, s.Detail, tt.want.Code, tt.want.Detail)
				}
				if tt.want.Code == problem.CodeTimeInMilliseconds && s.RuleID != "A-DEC-4" {
					t.Errorf("Trace(%s) failing rule id = %q, want A-DEC-4", tt.name, s.RuleID)
				}
				break
			}
			if tt.want.Code == problem.CodeTimeInMilliseconds {
				for _, s := range tr.Steps {
					if s.Code == problem.CodeTokenExpired && s.Outcome != NotReached {
						t.Errorf("Trace(%s) expiry step = %+v, want it not reached", tt.name, s)
					}
				}
			}
		})
	}
}

// TestKeySetRefusalsName: a refused key set names the key by index and kid, and the
// answer to a token for that partner carries it after a fixed prefix.
func TestKeySetRefusalsName(t *testing.T) {
	k := keys(t)
	_, err := ParseKeySet(jwksJSON(t, jwkJSON(t, &k.EC.PublicKey, "good", "", nil), jwkJSON(t, k.EC, "leaked", "", nil)))
	var kerr *KeySetError
	if !errors.As(err, &kerr) || kerr.Key != 1 || kerr.KeyID != "leaked" {
		t.Fatalf("ParseKeySet(private second key) = %#v, want key 1, kid leaked", err)
	}
	_, lerr := RefusedKeySet(err).Key(context.Background(), "good")
	want := `the partner's published key set is refused: key 1 (kid "leaked"): key holds private key material (member "d"): publish only the public key, and replace this key since its private part is exposed`
	if e := (*Error)(nil); !errors.As(lerr, &e) || e.Code != problem.CodeKeysUnavailable || e.Detail != want {
		t.Errorf("RefusedKeySet lookup = %v, want keys_unavailable %q", lerr, want)
	}
}
