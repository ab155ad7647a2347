package linktoken

import (
	"context"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

func TestVerifyAccepts(t *testing.T) {
	set := standardSet(t)
	for _, alg := range []string{RS256, PS256, ES256} {
		for _, tc := range []struct {
			name   string
			claims map[string]any
			header string
			kind   linkspec.Kind
		}{
			{name: "main", claims: mainClaims(), kind: linkspec.KindMain},
			{name: "go", claims: goClaims(), kind: linkspec.KindGo},
			{name: "typ lowercase", claims: mainClaims(), kind: linkspec.KindMain,
				header: `{"alg":"` + alg + `","typ":"jwt","kid":"` + kidFor(alg) + `"}`},
			{name: "typ media type", claims: mainClaims(), kind: linkspec.KindMain,
				header: `{"alg":"` + alg + `","typ":"application/JWT","kid":"` + kidFor(alg) + `"}`},
			{name: "unknown header member", claims: mainClaims(), kind: linkspec.KindMain,
				header: `{"alg":"` + alg + `","typ":"JWT","kid":"` + kidFor(alg) + `","x-trace":1}`},
			{name: "aud escaped", kind: linkspec.KindMain, claims: withClaims(func(c map[string]any) {
				c["aud"] = json.RawMessage(`"svc\u002dlink"`)
			})},
			{name: "aud array with escapes", kind: linkspec.KindMain, claims: withClaims(func(c map[string]any) {
				c["aud"] = json.RawMessage(`["a\"b", "svc\u002dlink"]`)
			})},
			{name: "aud array and no iat", kind: linkspec.KindMain, claims: withClaims(func(c map[string]any) {
				c["aud"] = []string{"other", testAudience}
				delete(c, "iat")
			})},
			{name: "extra claims", kind: linkspec.KindGo, claims: func() map[string]any {
				c := goClaims()
				c["sub"] = 42
				c["custom"] = map[string]any{"list": []any{1, "x", nil}}
				return c
			}()},
		} {
			t.Run(alg+"/"+tc.name, func(t *testing.T) {
				header := tc.header
				if header == "" {
					header = headerJSON(alg, kidFor(alg))
				}
				claims := claimsJSON(t, tc.claims)
				token := resign(t, header, claims, alg, kidFor(alg))
				v := newTestVerifier(t, Rules{})
				got, err := v.Verify(context.Background(), []byte(token), set)
				if err != nil {
					t.Fatalf("Verify() = %v, want a token", err)
				}
				wantClaims := strings.Split(token, ".")[1]
				for _, c := range []struct{ name, got, want string }{
					{"Alg", got.Alg, alg},
					{"KeyID", got.KeyID, kidFor(alg)},
					{"Issuer", got.Issuer, testIssuer},
					{"Nonce", got.Nonce, testNonce},
					{"Kind", string(got.Kind), string(tc.kind)},
					{"Claims", got.Claims, wantClaims},
					{"Payload.OrganizationID", got.Payload.OrganizationID, signed(tc.claims, "organizationId")},
					{"Payload.Contact.Firstname", got.Payload.Contact.Firstname, signed(tc.claims, "contact", "firstname")},
				} {
					if c.got != c.want {
						t.Errorf("Verify().%s = %q, want %q", c.name, c.got, c.want)
					}
				}
				if !got.NotBefore.Equal(testNow) || !got.Expiry.Equal(testNow.Add(5*time.Minute)) {
					t.Errorf("Verify() validity = [%v, %v], want [%v, %v]", got.NotBefore, got.Expiry, testNow, testNow.Add(5*time.Minute))
				}
				if want := signed(tc.claims, "employeeFirstname"); tc.kind == linkspec.KindMain && got.Payload.EmployeeFirstname != want {
					t.Errorf("Verify().Payload.EmployeeFirstname = %q, want %q", got.Payload.EmployeeFirstname, want)
				}
			})
		}
	}
}

// signed is the string at path in a claim set, "" where there is none.
func signed(claims map[string]any, path ...string) string {
	var v any = claims
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// TestVerifyAcceptsHighS: a high-S ECDSA signature (s replaced by n - s) is valid ECDSA:
// crypto/ecdsa accepts it, and replay protection rests on the nonce, which the malleated
// token shares. The rejections are the shared table of linktokentest (reject_test.go).
func TestVerifyAcceptsHighS(t *testing.T) {
	n := elliptic.P256().Params().N
	tok := strings.Split(tokenOf(t, ES256, "ec-1", mainClaims()), ".")
	sig, err := base64.RawURLEncoding.DecodeString(tok[2])
	if err != nil {
		t.Fatal(err)
	}
	s := new(big.Int).SetBytes(sig[32:])
	s.Sub(n, s)
	high := tok[0] + "." + tok[1] + "." + b64u(append(sig[:32:32], s.FillBytes(make([]byte, 32))...))
	got, err := newTestVerifier(t, Rules{}).Verify(context.Background(), []byte(high), standardSet(t))
	if err != nil {
		t.Fatalf("Verify(high S) = %v, want the token", err)
	}
	if got.Nonce != testNonce {
		t.Errorf("Verify(high S).Nonce = %q, want %q (the replay check keys on it)", got.Nonce, testNonce)
	}
}

// TestVerifyBoundaries accepts the tokens at the inclusive edges of every time rule.
func TestVerifyBoundaries(t *testing.T) {
	set := standardSet(t)
	nbf := testNow.Unix()
	for _, tc := range []struct {
		name   string
		claims map[string]any
		rules  Rules
		now    time.Time
	}{
		{name: "lifetime exactly 300s", claims: withClaims(func(c map[string]any) { c["exp"] = nbf + 300 }), now: testNow},
		{name: "lifetime exactly the partner maximum", rules: Rules{MaxLifetime: time.Minute},
			claims: withClaims(func(c map[string]any) { c["exp"] = nbf + 60 }), now: testNow},
		{name: "lifetime one second", claims: withClaims(func(c map[string]any) { c["exp"] = nbf + 1 }), now: testNow},
		{name: "now exactly nbf minus leeway", claims: mainClaims(), now: testNow.Add(-DefaultLeeway)},
		{name: "now one second before exp plus leeway", claims: mainClaims(), now: testNow.Add(300*time.Second + DefaultLeeway - time.Second)},
		{name: "now one nanosecond before exp plus leeway", claims: mainClaims(), now: testNow.Add(300*time.Second + DefaultLeeway - 1)},
		{name: "custom leeway edge", rules: Rules{Leeway: 5 * time.Second}, claims: mainClaims(), now: testNow.Add(-5 * time.Second)},
		{name: "nonce 16 bytes", claims: withClaims(func(c map[string]any) { c["nonce"] = strings.Repeat("n", 16) }), now: testNow},
		{name: "nonce 256 bytes", claims: withClaims(func(c map[string]any) { c["nonce"] = strings.Repeat("n", 256) }), now: testNow},
		{name: "main link to a main-only partner", rules: Rules{Kinds: []linkspec.Kind{linkspec.KindMain}}, claims: mainClaims(), now: testNow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rules
			r.Issuer, r.Audience = testIssuer, testAudience
			v, err := NewVerifier(r, WithClock(fixedClock(tc.now)))
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			if _, err := v.Verify(context.Background(), []byte(tokenOf(t, PS256, "rsa-1", tc.claims)), set); err != nil {
				t.Errorf("Verify(%s) = %v, want the token", tc.name, err)
			}
		})
	}
}

func TestNewVerifier(t *testing.T) {
	base := Rules{Issuer: testIssuer, Audience: testAudience}
	with := func(f func(r *Rules)) Rules { r := base; f(&r); return r }
	for _, tc := range []struct {
		name  string
		rules Rules
	}{
		{"no issuer", with(func(r *Rules) { r.Issuer = "" })},
		{"no audience", with(func(r *Rules) { r.Audience = "" })},
		{"HS256", with(func(r *Rules) { r.Algorithms = []string{"HS256"} })},
		{"HS256 beside RS256", with(func(r *Rules) { r.Algorithms = []string{RS256, "HS256"} })},
		{"none", with(func(r *Rules) { r.Algorithms = []string{"none"} })},
		{"RS512", with(func(r *Rules) { r.Algorithms = []string{"RS512"} })},
		{"EdDSA", with(func(r *Rules) { r.Algorithms = []string{"EdDSA"} })},
		{"lowercase rs256", with(func(r *Rules) { r.Algorithms = []string{"rs256"} })},
		{"lifetime over 5m", with(func(r *Rules) { r.MaxLifetime = 6 * time.Minute })},
		{"negative lifetime", with(func(r *Rules) { r.MaxLifetime = -time.Minute })},
		{"leeway over 5m", with(func(r *Rules) { r.Leeway = time.Hour })},
		{"nonce min over max", with(func(r *Rules) { r.NonceMinLength, r.NonceMaxLength = 64, 32 })},
		{"nonce max huge", with(func(r *Rules) { r.NonceMaxLength = 1 << 20 })},
		{"unknown kind", with(func(r *Rules) { r.Kinds = []linkspec.Kind{"desktop"} })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := NewVerifier(tc.rules); err == nil {
				t.Errorf("NewVerifier(%s) = %+v, want an error", tc.name, v.Rules())
			}
		})
	}

	t.Run("defaults", func(t *testing.T) {
		v, err := NewVerifier(base)
		if err != nil {
			t.Fatalf("NewVerifier(defaults) = %v", err)
		}
		r := v.Rules()
		if got, want := strings.Join(r.Algorithms, " "), "RS256 PS256 ES256"; got != want {
			t.Errorf("Rules().Algorithms = %q, want %q", got, want)
		}
		if r.MaxLifetime != DefaultMaxLifetime || r.Leeway != DefaultLeeway ||
			r.NonceMinLength != DefaultNonceMinLength || r.NonceMaxLength != DefaultNonceMaxLength {
			t.Errorf("Rules() = %+v, want the defaults", r)
		}
	})
}

// TestVerifyKeySourceFailures: a source that fails without a code fails closed.
func TestVerifyKeySourceFailures(t *testing.T) {
	tok := []byte(tokenOf(t, RS256, "rsa-1", mainClaims()))
	v := newTestVerifier(t, Rules{})
	for _, tc := range []struct {
		name string
		src  KeySource
		want problem.Code
	}{
		{"nil source", nil, problem.CodeKeysUnavailable},
		{"nil set", (*KeySet)(nil), problem.CodeKeysUnavailable},
		{"plain error", keySourceFunc(func(context.Context, string) (*Key, error) { return nil, errors.New("boom") }), problem.CodeKeysUnavailable},
		{"nil key", keySourceFunc(func(context.Context, string) (*Key, error) { return nil, nil }), problem.CodeKeysUnavailable},
		{"unavailable", keySourceFunc(func(context.Context, string) (*Key, error) {
			return nil, &Error{Code: problem.CodeKeysUnavailable, Detail: "down"}
		}), problem.CodeKeysUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tok, tc.src)
			if got := CodeOf(err); got != tc.want {
				t.Errorf("Verify(%s) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

type keySourceFunc func(ctx context.Context, kid string) (*Key, error)

func (f keySourceFunc) Key(ctx context.Context, kid string) (*Key, error) { return f(ctx, kid) }

// TestVerifyNoStateBetweenTokens: the pooled decode state of one token never leaks into
// the next, sequentially or concurrently (run with -race).
func TestVerifyNoStateBetweenTokens(t *testing.T) {
	set := standardSet(t)
	v := newTestVerifier(t, Rules{})
	full := []byte(tokenOf(t, ES256, "ec-1", mainClaims()))
	sparse := []byte(tokenOf(t, ES256, "ec-1", withClaims(func(c map[string]any) {
		delete(c, "caseId")
		delete(c, "employeeUsername")
		delete(c, "iat")
		c["contact"] = map[string]any{"id": "c-2", "firstname": "Kari", "lastname": "Nordmann"}
	})))
	noAud := []byte(tokenOf(t, ES256, "ec-1", withClaims(func(c map[string]any) { delete(c, "aud") })))

	check := func(t *testing.T) {
		if _, err := v.Verify(context.Background(), full, set); err != nil {
			t.Errorf("Verify(full) = %v", err)
		}
		got, err := v.Verify(context.Background(), sparse, set)
		if err != nil {
			t.Errorf("Verify(sparse) = %v", err)
			return
		}
		if got.Payload.CaseID != "" || got.Payload.EmployeeUsername != "" || got.Payload.Contact.Birthdate != "" {
			t.Errorf("Verify(sparse).Payload = %+v, want no fields of the token before", got.Payload)
		}
		// The audience found in the previous token must not count for this one.
		if _, err := v.Verify(context.Background(), noAud, set); CodeOf(err) != problem.CodeAudienceInvalid {
			t.Errorf("Verify(no aud) after a valid token = %v, want %q", err, problem.CodeAudienceInvalid)
		}
	}
	t.Run("sequential", check)
	t.Run("concurrent", func(t *testing.T) {
		done := make(chan struct{})
		for i := 0; i < 8; i++ {
			go func() {
				defer func() { done <- struct{}{} }()
				for j := 0; j < 20; j++ {
					check(t)
				}
			}()
		}
		for i := 0; i < 8; i++ {
			<-done
		}
	})
}
