package linktoken

import (
	"context"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/linkspec"
)

// tokenOf signs claims with the standard key of kid under alg, with a regular header.
func tokenOf(tb testing.TB, alg, kid string, c map[string]any) string {
	tb.Helper()
	return signRaw(tb, headerJSON(alg, kid), claimsJSON(tb, c), alg, signerFor(tb, kid))
}

// withClaims returns a valid main-client claim set changed by f.
func withClaims(f func(c map[string]any)) map[string]any {
	c := mainClaims()
	f(c)
	return c
}

// rawClaims replaces one member's JSON text in the marshalled claims; it keeps everything
// else valid, to isolate the member under test.
func rawClaims(tb testing.TB, member, rawValue string) string {
	tb.Helper()
	c := mainClaims()
	delete(c, member)
	s := claimsJSON(tb, c)
	return `{"` + member + `":` + rawValue + `,` + s[1:]
}

func resign(tb testing.TB, header, claims, alg, kid string) string {
	tb.Helper()
	return signRaw(tb, header, claims, alg, signerFor(tb, kid))
}

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
					{"Payload.OrganizationID", got.Payload.OrganizationID, "org-77"},
					{"Payload.Contact.Firstname", got.Payload.Contact.Firstname, "Ola"},
				} {
					if c.got != c.want {
						t.Errorf("Verify().%s = %q, want %q", c.name, c.got, c.want)
					}
				}
				if !got.NotBefore.Equal(testNow) || !got.Expiry.Equal(testNow.Add(5*time.Minute)) {
					t.Errorf("Verify() validity = [%v, %v], want [%v, %v]", got.NotBefore, got.Expiry, testNow, testNow.Add(5*time.Minute))
				}
				if tc.kind == linkspec.KindMain && got.Payload.EmployeeFirstname != "Åse" {
					t.Errorf("Verify().Payload.EmployeeFirstname = %q, want %q", got.Payload.EmployeeFirstname, "Åse")
				}
			})
		}
	}
}

// rejectCase is one token that Verify must refuse with code.
type rejectCase struct {
	name  string
	token func(tb testing.TB) string
	rules Rules
	now   time.Time
	want  Code
	field string // for CodePayloadInvalid: the first failing field
	// secrets are strings of the token that must not appear in the error.
	secrets []string
}

func runRejects(t *testing.T, cases []rejectCase) {
	t.Helper()
	set := standardSet(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := tc.token(t)
			r := tc.rules
			r.Issuer, r.Audience = testIssuer, testAudience
			now := testNow
			if !tc.now.IsZero() {
				now = tc.now
			}
			v, err := NewVerifier(r, WithClock(fixedClock(now)))
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			got, err := v.Verify(context.Background(), []byte(token), set)
			if err == nil {
				t.Fatalf("Verify(%s) = token of kind %q, want error %q", tc.name, got.Kind, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify(%s) error %v is not an *Error", tc.name, err)
			}
			if e.Code != tc.want {
				t.Errorf("Verify(%s) = %q (%s), want %q", tc.name, e.Code, e.Detail, tc.want)
			}
			if tc.field != "" && (len(e.Fields) == 0 || e.Fields[0].Field != tc.field) {
				t.Errorf("Verify(%s).Fields = %v, want first field %q", tc.name, e.Fields, tc.field)
			}
			if e.Detail == "" {
				t.Errorf("Verify(%s).Detail is empty", tc.name)
			}
			// Details are fixed sentences: no token text, no claim value, no kid.
			for _, s := range append(tc.secrets, testNonce, "emp-1042", "Nordmann", "rsa-1", "ec-1") {
				if strings.Contains(e.Error(), s) {
					t.Errorf("Verify(%s) error %q contains %q", tc.name, e.Error(), s)
				}
			}
		})
	}
}

func TestVerifyFraming(t *testing.T) {
	valid := func(tb testing.TB) string { return tokenOf(tb, RS256, "rsa-1", mainClaims()) }
	edit := func(f func(tok string) string) func(tb testing.TB) string {
		return func(tb testing.TB) string { return f(valid(tb)) }
	}
	seg := func(tok string) []string { return strings.Split(tok, ".") }
	runRejects(t, []rejectCase{
		{name: "empty", token: edit(func(string) string { return "" }), want: CodeTokenMalformed},
		{name: "too long", token: edit(func(tok string) string {
			s := seg(tok)
			return s[0] + "." + s[1] + strings.Repeat("A", MaxTokenLength) + "." + s[2]
		}), want: CodeTokenMalformed},
		{name: "two segments", token: edit(func(tok string) string { s := seg(tok); return s[0] + "." + s[1] }), want: CodeTokenMalformed},
		{name: "extra dot at end", token: edit(func(tok string) string { return tok + "." }), want: CodeTokenMalformed},
		{name: "four segments", token: edit(func(tok string) string { return tok + ".AAAA" }), want: CodeTokenMalformed},
		{name: "empty payload", token: edit(func(tok string) string { s := seg(tok); return s[0] + ".." + s[2] }), want: CodeTokenMalformed},
		{name: "unsigned (empty signature)", token: edit(func(tok string) string { s := seg(tok); return s[0] + "." + s[1] + "." }), want: CodeTokenMalformed},
		{name: "padding", token: edit(func(tok string) string { s := seg(tok); return s[0] + "=." + s[1] + "." + s[2] }), want: CodeTokenMalformed},
		{name: "space inside", token: edit(func(tok string) string { return tok[:10] + " " + tok[10:] }), want: CodeTokenMalformed},
		{name: "newline inside", token: edit(func(tok string) string { return tok[:10] + "\n" + tok[10:] }), want: CodeTokenMalformed},
		{name: "trailing newline", token: edit(func(tok string) string { return tok + "\n" }), want: CodeTokenMalformed},
		{name: "standard base64 plus", token: edit(func(tok string) string { return tok[:10] + "+" + tok[11:] }), want: CodeTokenMalformed},
		{name: "standard base64 slash", token: edit(func(tok string) string { return tok[:10] + "/" + tok[11:] }), want: CodeTokenMalformed},
		{name: "impossible length", token: edit(func(tok string) string { s := seg(tok); return s[0] + "." + s[1] + "." + s[2] + "AAA" }), want: CodeTokenMalformed},
		{name: "non-canonical trailing bits", token: func(tb testing.TB) string {
			// {"alg":"RS256","typ":"JWT","kid":"rsa-1"} is 41 bytes: its base64url has 2 spare bits.
			tok := valid(tb)
			s := seg(tok)
			h := []byte(s[0])
			last := strings.IndexByte(base64URLAlphabet, h[len(h)-1])
			h[len(h)-1] = base64URLAlphabet[last|1]
			return string(h) + "." + s[1] + "." + s[2]
		}, want: CodeTokenMalformed},
		{name: "JWS JSON flattened", token: edit(func(tok string) string {
			s := seg(tok)
			return `{"protected":"` + s[0] + `","payload":"` + s[1] + `","signature":"` + s[2] + `"}`
		}), want: CodeTokenMalformed},
		{name: "JWS JSON general with two signatures", token: edit(func(tok string) string {
			s := seg(tok)
			return `{"payload":"` + s[1] + `","signatures":[{"protected":"` + s[0] + `","signature":"` + s[2] + `"},{"protected":"` + s[0] + `","signature":"` + s[2] + `"}]}`
		}), want: CodeTokenMalformed},
		{name: "JWE compact", token: func(tb testing.TB) string {
			h := b64u([]byte(`{"alg":"RSA-OAEP","enc":"A256GCM","typ":"JWT","kid":"rsa-1"}`))
			return h + ".AAAA.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA"
		}, want: CodeTokenMalformed},
		{name: "header not JSON", token: func(tb testing.TB) string {
			return b64u([]byte("alg RS256")) + "." + seg(valid(tb))[1] + "." + seg(valid(tb))[2]
		}, want: CodeTokenMalformed},
		{name: "header null", token: func(tb testing.TB) string {
			return resign(tb, `null`, claimsJSON(tb, mainClaims()), RS256, "rsa-1")
		}, want: CodeTokenMalformed},
		{name: "header JSON array", token: func(tb testing.TB) string {
			return resign(tb, `["RS256","JWT"]`, claimsJSON(tb, mainClaims()), RS256, "rsa-1")
		}, want: CodeTokenMalformed},
		{name: "header invalid UTF-8", token: func(tb testing.TB) string {
			return resign(tb, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"rsa-1\",\"x\":\"\xff\"}", claimsJSON(tb, mainClaims()), RS256, "rsa-1")
		}, want: CodeTokenMalformed},
	})
}

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func TestVerifyHeader(t *testing.T) {
	claims := func(tb testing.TB) string { return claimsJSON(tb, mainClaims()) }
	withHeader := func(header, alg, kid string) func(tb testing.TB) string {
		return func(tb testing.TB) string { return resign(tb, header, claims(tb), alg, kid) }
	}
	// unsigned builds header.claims.signature with a signature the key never made, for
	// headers whose alg jwx would not even sign with.
	unsigned := func(header string, sig []byte) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			return b64u([]byte(header)) + "." + b64u([]byte(claims(tb))) + "." + b64u(sig)
		}
	}
	hs256 := func(alg string, secret []byte) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			input := b64u([]byte(`{"alg":"`+alg+`","typ":"JWT","kid":"rsa-1"}`)) + "." + b64u([]byte(claims(tb)))
			m := hmac.New(sha256.New, secret)
			m.Write([]byte(input))
			return input + "." + b64u(m.Sum(nil))
		}
	}
	pubDER := func(tb testing.TB) []byte {
		der, err := x509.MarshalPKIXPublicKey(&keys(tb).rsa.PublicKey)
		if err != nil {
			tb.Fatal(err)
		}
		return der
	}
	hsWith := func(secret func(tb testing.TB) []byte) func(tb testing.TB) string {
		return func(tb testing.TB) string { return hs256("HS256", secret(tb))(tb) }
	}
	cases := []rejectCase{
		{name: "duplicate alg", token: withHeader(`{"alg":"RS256","alg":"RS256","typ":"JWT","kid":"rsa-1"}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		{name: "duplicate alg none then RS256", token: withHeader(`{"alg":"none","alg":"RS256","typ":"JWT","kid":"rsa-1"}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		{name: "duplicate kid", token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","kid":"ec-1"}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		{name: "deeply nested unknown member", token: unsigned(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","x":`+
			strings.Repeat("[", 4000)+strings.Repeat("]", 4000)+`}`, make([]byte, 256)), want: CodeSignatureInvalid},
		{name: "nesting that only fits beyond the token length limit", token: unsigned(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","x":`+
			strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`}`, make([]byte, 8)), want: CodeTokenMalformed},
		{name: "huge number as alg", token: unsigned(`{"alg":1e999999,"typ":"JWT","kid":"rsa-1"}`, []byte("sig")), want: CodeHeaderInvalid},
		{name: "typ missing", token: withHeader(`{"alg":"RS256","kid":"rsa-1"}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		{name: "typ JOSE", token: withHeader(`{"alg":"RS256","typ":"JOSE","kid":"rsa-1"}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		{name: "typ at+jwt", token: withHeader(`{"alg":"RS256","typ":"at+jwt","kid":"rsa-1"}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		{name: "typ number", token: withHeader(`{"alg":"RS256","typ":1,"kid":"rsa-1"}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		{name: "alg missing", token: unsigned(`{"typ":"JWT","kid":"rsa-1"}`, nil), want: CodeTokenMalformed},
		{name: "alg missing with signature", token: unsigned(`{"typ":"JWT","kid":"rsa-1"}`, []byte("sig")), want: CodeAlgorithmNotAllowed},
		{name: "alg number", token: unsigned(`{"alg":256,"typ":"JWT","kid":"rsa-1"}`, []byte("sig")), want: CodeHeaderInvalid},
		{name: "alg none", token: unsigned(`{"alg":"none","typ":"JWT","kid":"rsa-1"}`, []byte("x")), want: CodeAlgorithmNotAllowed},
		{name: "alg None", token: unsigned(`{"alg":"None","typ":"JWT","kid":"rsa-1"}`, []byte("x")), want: CodeAlgorithmNotAllowed},
		{name: "alg NONE", token: unsigned(`{"alg":"NONE","typ":"JWT","kid":"rsa-1"}`, []byte("x")), want: CodeAlgorithmNotAllowed},
		{name: "alg nOnE", token: unsigned(`{"alg":"nOnE","typ":"JWT","kid":"rsa-1"}`, []byte("x")), want: CodeAlgorithmNotAllowed},
		{name: "alg rs256 lowercase", token: unsigned(`{"alg":"rs256","typ":"JWT","kid":"rsa-1"}`, []byte("x")), want: CodeAlgorithmNotAllowed},
		{name: "alg RS384", token: withHeader(`{"alg":"RS384","typ":"JWT","kid":"rsa-1"}`, "RS384", "rsa-1"), want: CodeAlgorithmNotAllowed},
		{name: "alg ES384", token: unsigned(`{"alg":"ES384","typ":"JWT","kid":"ec-1"}`, make([]byte, 96)), want: CodeAlgorithmNotAllowed},
		{name: "alg EdDSA", token: unsigned(`{"alg":"EdDSA","typ":"JWT","kid":"ec-1"}`, make([]byte, 64)), want: CodeAlgorithmNotAllowed},
		{name: "HS256 with public key PEM as secret", token: hsWith(func(tb testing.TB) []byte {
			return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER(tb)})
		}), want: CodeAlgorithmNotAllowed},
		{name: "HS256 with public key DER as secret", token: hsWith(pubDER), want: CodeAlgorithmNotAllowed},
		{name: "HS256 with public JWK JSON as secret", token: hsWith(func(tb testing.TB) []byte {
			data, _ := json.Marshal(jwkJSON(tb, &keys(tb).rsa.PublicKey, "rsa-1", "", nil))
			return data
		}), want: CodeAlgorithmNotAllowed},
		{name: "HS384", token: hs256("HS384", []byte("secret")), want: CodeAlgorithmNotAllowed},
		{name: "HS512", token: hs256("HS512", []byte("secret")), want: CodeAlgorithmNotAllowed},
		{name: "alg outside the partner's set", rules: Rules{Algorithms: []string{ES256}},
			token: withHeader(headerJSON(RS256, "rsa-1"), RS256, "rsa-1"), want: CodeAlgorithmNotAllowed},
		{name: "kid missing", token: withHeader(`{"alg":"RS256","typ":"JWT"}`, RS256, "rsa-1"), want: CodeKeyIDMissing},
		{name: "kid empty", token: withHeader(`{"alg":"RS256","typ":"JWT","kid":""}`, RS256, "rsa-1"), want: CodeKeyIDMissing},
		{name: "kid number", token: withHeader(`{"alg":"RS256","typ":"JWT","kid":1}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		{name: "kid unknown", token: withHeader(headerJSON(RS256, "rsa-9"), RS256, "rsa-1"), want: CodeKeyUnknown, secrets: []string{"rsa-9"}},
		{name: "kid path traversal", token: withHeader(headerJSON(RS256, "../../../etc/passwd"), RS256, "rsa-1"),
			want: CodeKeyUnknown, secrets: []string{"passwd"}},
		{name: "kid SQL", token: withHeader(headerJSON(RS256, `x' OR '1'='1`), RS256, "rsa-1"), want: CodeKeyUnknown, secrets: []string{"OR"}},
		{name: "kid shell", token: withHeader(headerJSON(RS256, "$(reboot);`id`"), RS256, "rsa-1"), want: CodeKeyUnknown, secrets: []string{"reboot"}},
		{name: "kid huge", token: withHeader(headerJSON(RS256, strings.Repeat("k", 4000)), RS256, "rsa-1"), want: CodeKeyUnknown, secrets: []string{"kkkk"}},
		{name: "kid of another key type, RS256 on EC key", token: withHeader(headerJSON(RS256, "ec-1"), RS256, "rsa-1"), want: CodeAlgorithmNotAllowed},
		{name: "kid of another key type, ES256 on RSA key", token: withHeader(headerJSON(ES256, "rsa-1"), ES256, "ec-1"), want: CodeAlgorithmNotAllowed},
		{name: "PS256 header on a key with alg RS256", token: withHeader(headerJSON(PS256, "rsa-rs"), PS256, "rsa-rs"), want: CodeAlgorithmNotAllowed},
		{name: "RS256 header, PS256 signature", token: func(tb testing.TB) string {
			tok := resign(tb, headerJSON(RS256, "rsa-1"), claims(tb), PS256, "rsa-1")
			return tok
		}, want: CodeSignatureInvalid},
		{name: "PS256 header, RS256 signature", token: withHeader(headerJSON(PS256, "rsa-1"), RS256, "rsa-1"), want: CodeSignatureInvalid},
	}
	for _, m := range []string{"jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256", "crit", "b64", "cty", "enc", "zip"} {
		for _, val := range []string{`"x"`, `null`} {
			cases = append(cases, rejectCase{
				name:  "member " + m + " " + val,
				token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","`+m+`":`+val+`}`, RS256, "rsa-1"),
				want:  CodeHeaderInvalid,
			})
		}
	}
	cases = append(cases,
		rejectCase{name: "embedded attacker jwk", token: func(tb testing.TB) string {
			k := keys(tb)
			j, _ := json.Marshal(jwkJSON(tb, &k.rsa2.PublicKey, "rsa-1", "", nil))
			return resign(tb, `{"alg":"RS256","typ":"JWT","kid":"rsa-1","jwk":`+string(j)+`}`, claims(tb), RS256, "rsa-rs")
		}, want: CodeHeaderInvalid},
		rejectCase{name: "nested JWT cty", token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","cty":"JWT"}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
		rejectCase{name: "crit with b64 false", token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","b64":false,"crit":["b64"]}`, RS256, "rsa-1"), want: CodeHeaderInvalid},
	)
	runRejects(t, cases)
}

func TestVerifySignature(t *testing.T) {
	claims := func(tb testing.TB) string { return claimsJSON(tb, mainClaims()) }
	replaceSig := func(alg string, f func(tb testing.TB, sig []byte) []byte) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			tok := resign(tb, headerJSON(alg, kidFor(alg)), claims(tb), alg, kidFor(alg))
			s := strings.Split(tok, ".")
			sig, err := base64.RawURLEncoding.DecodeString(s[2])
			if err != nil {
				tb.Fatal(err)
			}
			return s[0] + "." + s[1] + "." + b64u(f(tb, sig))
		}
	}
	n := elliptic.P256().Params().N
	cases := []rejectCase{
		{name: "ES256 r=s=0", token: replaceSig(ES256, func(tb testing.TB, sig []byte) []byte { return make([]byte, 64) }), want: CodeSignatureInvalid},
		{name: "ES256 r=s=n", token: replaceSig(ES256, func(tb testing.TB, sig []byte) []byte {
			out := make([]byte, 64)
			n.FillBytes(out[:32])
			n.FillBytes(out[32:])
			return out
		}), want: CodeSignatureInvalid},
		{name: "ES256 s+n overflow", token: replaceSig(ES256, func(tb testing.TB, sig []byte) []byte {
			s := new(big.Int).SetBytes(sig[32:])
			s.Add(s, n)
			return append(sig[:32:32], s.Bytes()...)
		}), want: CodeSignatureInvalid},
		{name: "ES256 63 bytes", token: replaceSig(ES256, func(tb testing.TB, sig []byte) []byte { return sig[1:] }), want: CodeSignatureInvalid},
		{name: "ES256 65 bytes", token: replaceSig(ES256, func(tb testing.TB, sig []byte) []byte { return append([]byte{0}, sig...) }), want: CodeSignatureInvalid},
		{name: "ES256 DER signature", token: replaceSig(ES256, func(tb testing.TB, sig []byte) []byte {
			r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			der := derSignature(r, s)
			return der
		}), want: CodeSignatureInvalid},
		{name: "ES256 flipped bit", token: replaceSig(ES256, func(tb testing.TB, sig []byte) []byte { sig[10] ^= 1; return sig }), want: CodeSignatureInvalid},
		{name: "RS256 leading zero added", token: replaceSig(RS256, func(tb testing.TB, sig []byte) []byte { return append([]byte{0}, sig...) }), want: CodeSignatureInvalid},
		{name: "RS256 first byte dropped", token: replaceSig(RS256, func(tb testing.TB, sig []byte) []byte { return sig[1:] }), want: CodeSignatureInvalid},
		{name: "RS256 leading zero stripped", token: func(tb testing.TB) string {
			// Sign until the signature starts with a zero byte (1 in 256), then strip it: the
			// integer is the same, the encoding is not the modulus's length.
			for i := 0; i < 5000; i++ {
				c := mainClaims()
				c["nonce"] = testNonce + strings.Repeat("x", i%50) + string(rune('a'+i%26))
				c["caseId"] = "case-" + big.NewInt(int64(i)).String()
				tok := tokenOf(tb, RS256, "rsa-1", c)
				s := strings.Split(tok, ".")
				sig, _ := base64.RawURLEncoding.DecodeString(s[2])
				if sig[0] == 0 {
					return s[0] + "." + s[1] + "." + b64u(sig[1:])
				}
			}
			tb.Fatal("no signature with a leading zero in 5000 tries")
			return ""
		}, want: CodeSignatureInvalid},
		{name: "PS256 flipped bit", token: replaceSig(PS256, func(tb testing.TB, sig []byte) []byte { sig[100] ^= 0x80; return sig }), want: CodeSignatureInvalid},
		{name: "RS256 all zero", token: replaceSig(RS256, func(tb testing.TB, sig []byte) []byte { return make([]byte, len(sig)) }), want: CodeSignatureInvalid},
		{name: "claims changed after signing", token: func(tb testing.TB) string {
			tok := tokenOf(tb, ES256, "ec-1", mainClaims())
			s := strings.Split(tok, ".")
			c := mainClaims()
			c["employeeId"] = "admin"
			return s[0] + "." + b64u([]byte(claimsJSON(tb, c))) + "." + s[2]
		}, want: CodeSignatureInvalid},
		{name: "signed by another key with the same kid", token: func(tb testing.TB) string {
			return signRaw(tb, headerJSON(RS256, "rsa-1"), claims(tb), RS256, keys(tb).rsa2)
		}, want: CodeSignatureInvalid},
		{name: "ES256 signed by another EC key with the same kid", token: func(tb testing.TB) string {
			return signRaw(tb, headerJSON(ES256, "ec-1"), claims(tb), ES256, keys(tb).ec2)
		}, want: CodeSignatureInvalid},
		{name: "RS256 with a signature of other claims", token: func(tb testing.TB) string {
			a := strings.Split(tokenOf(tb, RS256, "rsa-1", mainClaims()), ".")
			b := strings.Split(tokenOf(tb, RS256, "rsa-1", goClaims()), ".")
			return a[0] + "." + a[1] + "." + b[2]
		}, want: CodeSignatureInvalid},
	}
	runRejects(t, cases)

	// A high-S ECDSA signature (s replaced by n - s) is valid ECDSA: crypto/ecdsa accepts it,
	// and replay protection rests on the nonce, which the malleated token shares.
	t.Run("ES256 high S accepted", func(t *testing.T) {
		tok := replaceSig(ES256, func(tb testing.TB, sig []byte) []byte {
			s := new(big.Int).SetBytes(sig[32:])
			s.Sub(n, s)
			out := append([]byte(nil), sig[:32]...)
			return append(out, s.FillBytes(make([]byte, 32))...)
		})(t)
		got, err := newTestVerifier(t, Rules{}).Verify(context.Background(), []byte(tok), standardSet(t))
		if err != nil {
			t.Fatalf("Verify(high S) = %v, want the token", err)
		}
		if got.Nonce != testNonce {
			t.Errorf("Verify(high S).Nonce = %q, want %q (the replay check keys on it)", got.Nonce, testNonce)
		}
	})
}

// derSignature is the ASN.1 DER form of an ECDSA signature, which JWS never uses.
func derSignature(r, s *big.Int) []byte {
	enc := func(x *big.Int) []byte {
		b := x.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return append([]byte{0x02, byte(len(b))}, b...)
	}
	body := append(enc(r), enc(s)...)
	return append([]byte{0x30, byte(len(body))}, body...)
}

func TestVerifyClaims(t *testing.T) {
	header := headerJSON(ES256, "ec-1")
	raw := func(claims string) func(tb testing.TB) string {
		return func(tb testing.TB) string { return resign(tb, header, claims, ES256, "ec-1") }
	}
	member := func(name, value string) func(tb testing.TB) string {
		return func(tb testing.TB) string { return resign(tb, header, rawClaims(tb, name, value), ES256, "ec-1") }
	}
	with := func(f func(c map[string]any)) func(tb testing.TB) string {
		return func(tb testing.TB) string { return tokenOf(tb, ES256, "ec-1", withClaims(f)) }
	}
	rename := func(from, to string) func(tb testing.TB) string {
		return with(func(c map[string]any) { c[to] = c[from]; delete(c, from) })
	}
	nbf := testNow.Unix()
	leeway := DefaultLeeway
	runRejects(t, []rejectCase{
		{name: "claims not JSON", token: raw(`not json`), want: CodeClaimsInvalid},
		{name: "claims JSON array", token: raw(`[1,2]`), want: CodeClaimsInvalid},
		{name: "claims JSON string", token: raw(`"x"`), want: CodeClaimsInvalid},
		{name: "claims null", token: raw(`null`), want: CodeClaimsInvalid},
		{name: "claims empty object", token: raw(`{}`), want: CodeIssuerInvalid},
		{name: "claims trailing data", token: func(tb testing.TB) string {
			return resign(tb, header, claimsJSON(tb, mainClaims())+`{}`, ES256, "ec-1")
		}, want: CodeClaimsInvalid},
		{name: "claims invalid UTF-8", token: func(tb testing.TB) string {
			return resign(tb, header, rawClaims(tb, "note", "\"\xc3\x28\""), ES256, "ec-1")
		}, want: CodeClaimsInvalid},
		{name: "duplicate nonce", token: func(tb testing.TB) string {
			return resign(tb, header, rawClaims(tb, "nonce", `"`+testNonce+`","nonce":"`+testNonce+`2"`), ES256, "ec-1")
		}, want: CodeClaimsInvalid},
		{name: "duplicate exp", token: member("exp", `9999999999,"exp":1`), want: CodeClaimsInvalid},
		{name: "duplicate employeeId", token: member("employeeId", `"a","employeeId":"b"`), want: CodeClaimsInvalid},
		{name: "duplicate in contact", token: member("contact", `{"id":"c","firstname":"A","firstname":"B","lastname":"L"}`), want: CodeClaimsInvalid},
		{name: "duplicate unknown claim", token: member("x", `1,"x":2`), want: CodeClaimsInvalid},
		{name: "case variant duplicate employeeId", token: member("employeeId", `"emp-1","EMPLOYEEID":"emp-admin"`), want: CodeClaimsInvalid},
		{name: "case variant duplicate in contact", token: member("contact", `{"id":"c","ID":"c2","firstname":"A","lastname":"L"}`), want: CodeClaimsInvalid},
		{name: "unicode fold duplicate", token: member("employeeUsername", "\"a\",\"employeeUſername\":\"b\""), want: CodeClaimsInvalid},
		{name: "case variant alone", token: rename("employeeId", "EmployeeId"), want: CodeClaimsInvalid},
		{name: "delimiter variant alone", token: rename("employeeId", "employee_id"), want: CodeClaimsInvalid},
		{name: "unicode fold variant alone", token: rename("employeeUsername", "employeeUſername"), want: CodeClaimsInvalid},
		{name: "case variant of nonce", token: rename("nonce", "Nonce"), want: CodeClaimsInvalid},
		{name: "case variant of exp next to exp", token: member("exp", big.NewInt(nbf+300).String()+`,"EXP":1`), want: CodeClaimsInvalid},
		{name: "case variant in contact alone", token: member("contact", `{"ID":"c","firstname":"A","lastname":"L"}`), want: CodeClaimsInvalid},
		{name: "extra claim nested too deeply", token: member("x", strings.Repeat("[", 20)+strings.Repeat("]", 20)), want: CodeClaimsInvalid},
		{name: "exp as string", token: member("exp", `"`+big.NewInt(nbf+300).String()+`"`), want: CodeClaimsInvalid},
		{name: "exp null", token: member("exp", `null`), want: CodeClaimsInvalid},
		{name: "exp fractional", token: member("exp", big.NewInt(nbf+299).String()+`.5`), want: CodeClaimsInvalid},
		{name: "exp exponent", token: member("exp", `1.7e9`), want: CodeClaimsInvalid},
		{name: "exp negative", token: member("exp", `-1`), want: CodeClaimsInvalid},
		{name: "exp huge", token: member("exp", strings.Repeat("9", 400)), want: CodeClaimsInvalid},
		{name: "exp beyond year 9999", token: member("exp", `253402300800`), want: CodeClaimsInvalid},
		{name: "nbf as bool", token: member("nbf", `true`), want: CodeClaimsInvalid},
		{name: "iat as string", token: member("iat", `"now"`), want: CodeClaimsInvalid},
		{name: "aud as number", token: member("aud", `7`), want: CodeClaimsInvalid},
		{name: "aud as object", token: member("aud", `{"a":"svc-link"}`), want: CodeClaimsInvalid},
		{name: "aud array of numbers", token: member("aud", `[1]`), want: CodeClaimsInvalid},
		{name: "aud array with a number after it", token: member("aud", `["svc-link",1]`), want: CodeClaimsInvalid},
		{name: "aud array nested", token: member("aud", `[["svc-link"]]`), want: CodeClaimsInvalid},
		{name: "aud null", token: member("aud", `null`), want: CodeClaimsInvalid},
		{name: "aud prefix", token: member("aud", `"svc-link2"`), want: CodeAudienceInvalid},
		{name: "iss as array", token: member("iss", `["https://acme.example"]`), want: CodeClaimsInvalid},
		{name: "nonce as object", token: member("nonce", `{"v":"`+testNonce+`"}`), want: CodeNonceInvalid},
		{name: "nonce as number", token: member("nonce", `12345678901234567890`), want: CodeNonceInvalid},
		{name: "employeeId as number", token: member("employeeId", `1042`), want: CodePayloadInvalid, field: "employeeId"},
		{name: "contact as string", token: member("contact", `"Ola"`), want: CodePayloadInvalid, field: "contact"},
		{name: "contact firstname as number", token: member("contact", `{"id":"c","firstname":7,"lastname":"L"}`), want: CodePayloadInvalid, field: "contact.firstname"},
		{name: "iss other", token: with(func(c map[string]any) { c["iss"] = "https://evil.example" }), want: CodeIssuerInvalid, secrets: []string{"evil"}},
		{name: "iss other case", token: with(func(c map[string]any) { c["iss"] = "https://ACME.example" }), want: CodeIssuerInvalid},
		{name: "iss trailing slash", token: with(func(c map[string]any) { c["iss"] = testIssuer + "/" }), want: CodeIssuerInvalid},
		{name: "iss missing", token: with(func(c map[string]any) { delete(c, "iss") }), want: CodeIssuerInvalid},
		{name: "aud other", token: with(func(c map[string]any) { c["aud"] = "svc-other" }), want: CodeAudienceInvalid},
		{name: "aud array without it", token: with(func(c map[string]any) { c["aud"] = []string{"a", "b"} }), want: CodeAudienceInvalid},
		{name: "aud empty array", token: with(func(c map[string]any) { c["aud"] = []string{} }), want: CodeAudienceInvalid},
		{name: "aud missing", token: with(func(c map[string]any) { delete(c, "aud") }), want: CodeAudienceInvalid},
		{name: "nbf missing", token: with(func(c map[string]any) { delete(c, "nbf"); delete(c, "iat") }), want: CodeClaimsInvalid},
		{name: "exp missing", token: with(func(c map[string]any) { delete(c, "exp") }), want: CodeClaimsInvalid},
		{name: "lifetime 301s", token: with(func(c map[string]any) { c["exp"] = nbf + 301 }), want: CodeLifetimeTooLong},
		{name: "lifetime one day", token: with(func(c map[string]any) { c["exp"] = nbf + 86400 }), want: CodeLifetimeTooLong},
		// In nanoseconds these differences wrap around int64 to a negative duration.
		{name: "lifetime 1e10 s", token: with(func(c map[string]any) { c["exp"] = nbf + 1e10 }), want: CodeLifetimeTooLong},
		{name: "lifetime to year 9999", token: with(func(c map[string]any) { c["exp"] = int64(253402300799) }), want: CodeLifetimeTooLong},
		{name: "lifetime over a shorter partner maximum", rules: Rules{MaxLifetime: time.Minute},
			token: with(func(c map[string]any) { c["exp"] = nbf + 61 }), want: CodeLifetimeTooLong},
		{name: "lifetime 301s with leeway inside", now: testNow.Add(time.Second),
			token: with(func(c map[string]any) { c["exp"] = nbf + 301 }), want: CodeLifetimeTooLong},
		{name: "exp equal to nbf", token: with(func(c map[string]any) { c["exp"] = nbf }), want: CodeClaimsInvalid},
		{name: "exp before nbf", token: with(func(c map[string]any) { c["exp"] = nbf - 10 }), want: CodeClaimsInvalid},
		{name: "iat before nbf", token: with(func(c map[string]any) { c["iat"] = nbf - 1 }), want: CodeClaimsInvalid},
		{name: "iat after nbf", token: with(func(c map[string]any) { c["iat"] = nbf + 1 }), want: CodeClaimsInvalid},
		{name: "nbf beyond leeway", now: testNow.Add(-leeway - time.Second), token: with(func(c map[string]any) {}), want: CodeTokenNotYetValid},
		{name: "expired exactly at exp plus leeway", now: testNow.Add(300*time.Second + leeway), token: with(func(c map[string]any) {}), want: CodeTokenExpired},
		{name: "expired one second beyond leeway", now: testNow.Add(301*time.Second + leeway), token: with(func(c map[string]any) {}), want: CodeTokenExpired},
		{name: "expired long ago", now: testNow.Add(24 * time.Hour), token: with(func(c map[string]any) {}), want: CodeTokenExpired},
		{name: "nonce missing", token: with(func(c map[string]any) { delete(c, "nonce") }), want: CodeNonceMissing},
		{name: "nonce empty", token: with(func(c map[string]any) { c["nonce"] = "" }), want: CodeNonceMissing},
		{name: "nonce 15 bytes", token: with(func(c map[string]any) { c["nonce"] = strings.Repeat("n", 15) }), want: CodeNonceInvalid},
		{name: "nonce 257 bytes", token: with(func(c map[string]any) { c["nonce"] = strings.Repeat("n", 257) }), want: CodeNonceInvalid},
		{name: "nonce over a partner maximum", rules: Rules{NonceMaxLength: 32},
			token: with(func(c map[string]any) { c["nonce"] = strings.Repeat("n", 33) }), want: CodeNonceInvalid},
		{name: "nonce with space", token: with(func(c map[string]any) { c["nonce"] = "nonce with spaces in it" }), want: CodeNonceInvalid},
		{name: "nonce with newline", token: with(func(c map[string]any) { c["nonce"] = "0123456789abcdef\n" }), want: CodeNonceInvalid},
		{name: "nonce non-ASCII", token: with(func(c map[string]any) { c["nonce"] = "0123456789abcdefø" }), want: CodeNonceInvalid},
		{name: "main link to a go-only partner", rules: Rules{Kinds: []linkspec.Kind{linkspec.KindGo}},
			token: with(func(c map[string]any) {}), want: CodeKindNotAllowed},
		{name: "go link to a main-only partner", rules: Rules{Kinds: []linkspec.Kind{linkspec.KindMain}},
			token: func(tb testing.TB) string { return tokenOf(tb, ES256, "ec-1", goClaims()) }, want: CodeKindNotAllowed},
		{name: "organizationId missing", token: with(func(c map[string]any) { delete(c, "organizationId") }), want: CodePayloadInvalid, field: "organizationId"},
		{name: "birthdate not a date", token: with(func(c map[string]any) {
			c["contact"].(map[string]any)["birthdate"] = "1981-02-29"
		}), want: CodePayloadInvalid, field: "contact.birthdate"},
		{name: "contact missing", token: with(func(c map[string]any) { delete(c, "contact") }), want: CodePayloadInvalid, field: "contact"},
		{name: "control character in a name", token: with(func(c map[string]any) { c["employeeFirstname"] = "Åse\r\nX-Evil: 1" }), want: CodePayloadInvalid, field: "employeeFirstname"},
		{name: "go link without contact email", token: func(tb testing.TB) string {
			c := goClaims()
			delete(c["contact"].(map[string]any), "email")
			return tokenOf(tb, ES256, "ec-1", c)
		}, want: CodePayloadInvalid, field: "contact.email"},
	})
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
		{"negative leeway", with(func(r *Rules) { r.Leeway = -time.Second })},
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
		want Code
	}{
		{"nil source", nil, CodeKeysUnavailable},
		{"nil set", (*KeySet)(nil), CodeKeysUnavailable},
		{"plain error", keySourceFunc(func(context.Context, string) (*Key, error) { return nil, errors.New("boom") }), CodeKeysUnavailable},
		{"nil key", keySourceFunc(func(context.Context, string) (*Key, error) { return nil, nil }), CodeKeysUnavailable},
		{"unavailable", keySourceFunc(func(context.Context, string) (*Key, error) {
			return nil, &Error{Code: CodeKeysUnavailable, Detail: "down"}
		}), CodeKeysUnavailable},
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
		if _, err := v.Verify(context.Background(), noAud, set); CodeOf(err) != CodeAudienceInvalid {
			t.Errorf("Verify(no aud) after a valid token = %v, want %q", err, CodeAudienceInvalid)
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
