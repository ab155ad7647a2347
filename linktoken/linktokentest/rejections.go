package linktokentest

import (
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/jwttest"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/problem"
)

// Rejection is one token that the gateway's verifier must refuse with the code Want.
type Rejection struct {
	Name string
	// Token builds the token; it signs with the keys of jwttest.StandardSetJSON.
	Token func(tb testing.TB) string
	// Rules are the partner's rules, issuer and audience included.
	Rules linktoken.Rules
	// Now is the instant the token is verified at.
	Now  time.Time
	Want problem.Code
	// Field is, for CodePayloadInvalid, the first failing payload field.
	Field string
	// Secrets are strings of the token that must not appear in the error.
	Secrets []string
}

// Rejections returns every rejection case of the gateway's verifier: framing, header,
// signature and claim rules, in the order the verifier applies them. Each call builds a
// fresh table; tokens are made only when Token is called.
func Rejections() []Rejection { return RejectionsAt(jwttest.Now) }

// RejectionsAt is Rejections with the valid token issued at another instant: a case's Now
// keeps its offset from the issue instant, so a verifier on a real clock (the running
// gateway) can be given each case at the moment it is meant for.
func RejectionsAt(at time.Time) []Rejection {
	var all []Rejection
	for _, group := range [][]Rejection{framingCases(at), headerCases(at), signatureCases(at), claimCases(at)} {
		all = append(all, group...)
	}
	for i := range all {
		c := &all[i]
		c.Rules.Issuer, c.Rules.Audience = jwttest.Issuer, jwttest.Audience
		if c.Now.IsZero() {
			c.Now = at
		}
	}
	return all
}

func framingCases(at time.Time) []Rejection {
	valid := func(tb testing.TB) string {
		return jwttest.Token(tb, linktoken.RS256, "rsa-1", jwttest.MainClaimsAt(at))
	}
	edit := func(f func(tok string) string) func(tb testing.TB) string {
		return func(tb testing.TB) string { return f(valid(tb)) }
	}
	seg := func(tok string) []string { return strings.Split(tok, ".") }
	return []Rejection{
		{Name: "empty", Token: edit(func(string) string { return "" }), Want: problem.CodeTokenMalformed},
		{Name: "too long", Token: edit(func(tok string) string {
			s := seg(tok)
			return s[0] + "." + s[1] + strings.Repeat("A", linktoken.MaxTokenLength) + "." + s[2]
		}), Want: problem.CodeTokenMalformed},
		{Name: "two segments", Token: edit(func(tok string) string { s := seg(tok); return s[0] + "." + s[1] }), Want: problem.CodeTokenMalformed},
		{Name: "extra dot at end", Token: edit(func(tok string) string { return tok + "." }), Want: problem.CodeTokenMalformed},
		{Name: "four segments", Token: edit(func(tok string) string { return tok + ".AAAA" }), Want: problem.CodeTokenMalformed},
		{Name: "empty payload", Token: edit(func(tok string) string { s := seg(tok); return s[0] + ".." + s[2] }), Want: problem.CodeTokenMalformed},
		{Name: "unsigned (empty signature)", Token: edit(func(tok string) string { s := seg(tok); return s[0] + "." + s[1] + "." }), Want: problem.CodeTokenMalformed},
		{Name: "padding", Token: edit(func(tok string) string { s := seg(tok); return s[0] + "=." + s[1] + "." + s[2] }), Want: problem.CodeTokenMalformed},
		{Name: "space inside", Token: edit(func(tok string) string { return tok[:10] + " " + tok[10:] }), Want: problem.CodeTokenMalformed},
		{Name: "newline inside", Token: edit(func(tok string) string { return tok[:10] + "\n" + tok[10:] }), Want: problem.CodeTokenMalformed},
		{Name: "trailing newline", Token: edit(func(tok string) string { return tok + "\n" }), Want: problem.CodeTokenMalformed},
		{Name: "standard base64 plus", Token: edit(func(tok string) string { return tok[:10] + "+" + tok[11:] }), Want: problem.CodeTokenMalformed},
		{Name: "standard base64 slash", Token: edit(func(tok string) string { return tok[:10] + "/" + tok[11:] }), Want: problem.CodeTokenMalformed},
		{Name: "impossible length", Token: edit(func(tok string) string { s := seg(tok); return s[0] + "." + s[1] + "." + s[2] + "AAA" }), Want: problem.CodeTokenMalformed},
		{Name: "non-canonical trailing bits", Token: func(tb testing.TB) string {
			// {"alg":"RS256","typ":"JWT","kid":"rsa-1"} is 41 bytes: its base64url has 2 spare bits.
			tok := valid(tb)
			s := seg(tok)
			h := []byte(s[0])
			last := strings.IndexByte(base64URLAlphabet, h[len(h)-1])
			h[len(h)-1] = base64URLAlphabet[last|1]
			return string(h) + "." + s[1] + "." + s[2]
		}, Want: problem.CodeTokenMalformed},
		{Name: "JWS JSON flattened", Token: edit(func(tok string) string {
			s := seg(tok)
			return `{"protected":"` + s[0] + `","payload":"` + s[1] + `","signature":"` + s[2] + `"}`
		}), Want: problem.CodeTokenMalformed},
		{Name: "JWS JSON general with two signatures", Token: edit(func(tok string) string {
			s := seg(tok)
			return `{"payload":"` + s[1] + `","signatures":[{"protected":"` + s[0] + `","signature":"` + s[2] + `"},{"protected":"` + s[0] + `","signature":"` + s[2] + `"}]}`
		}), Want: problem.CodeTokenMalformed},
		{Name: "JWE compact", Token: func(tb testing.TB) string {
			h := jwttest.B64u([]byte(`{"alg":"RSA-OAEP","enc":"A256GCM","typ":"JWT","kid":"rsa-1"}`))
			return h + ".AAAA.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA"
		}, Want: problem.CodeTokenMalformed},
		{Name: "header not JSON", Token: func(tb testing.TB) string {
			return jwttest.B64u([]byte("alg RS256")) + "." + seg(valid(tb))[1] + "." + seg(valid(tb))[2]
		}, Want: problem.CodeTokenMalformed},
		{Name: "header null", Token: func(tb testing.TB) string {
			return jwttest.Resign(tb, `null`, jwttest.ClaimsJSON(tb, jwttest.MainClaimsAt(at)), linktoken.RS256, "rsa-1")
		}, Want: problem.CodeTokenMalformed},
		{Name: "header JSON array", Token: func(tb testing.TB) string {
			return jwttest.Resign(tb, `["RS256","JWT"]`, jwttest.ClaimsJSON(tb, jwttest.MainClaimsAt(at)), linktoken.RS256, "rsa-1")
		}, Want: problem.CodeTokenMalformed},
		{Name: "header invalid UTF-8", Token: func(tb testing.TB) string {
			return jwttest.Resign(tb, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"rsa-1\",\"x\":\"\xff\"}", jwttest.ClaimsJSON(tb, jwttest.MainClaimsAt(at)), linktoken.RS256, "rsa-1")
		}, Want: problem.CodeTokenMalformed},
	}
}

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func headerCases(at time.Time) []Rejection {
	claims := func(tb testing.TB) string { return jwttest.ClaimsJSON(tb, jwttest.MainClaimsAt(at)) }
	withHeader := func(header, alg, kid string) func(tb testing.TB) string {
		return func(tb testing.TB) string { return jwttest.Resign(tb, header, claims(tb), alg, kid) }
	}
	// unsigned builds header.claims.signature with a signature the key never made, for
	// headers whose alg jwx would not even sign with.
	unsigned := func(header string, sig []byte) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			return jwttest.B64u([]byte(header)) + "." + jwttest.B64u([]byte(claims(tb))) + "." + jwttest.B64u(sig)
		}
	}
	hs256 := func(alg string, secret []byte) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			input := jwttest.B64u([]byte(`{"alg":"`+alg+`","typ":"JWT","kid":"rsa-1"}`)) + "." + jwttest.B64u([]byte(claims(tb)))
			m := hmac.New(sha256.New, secret)
			m.Write([]byte(input))
			return input + "." + jwttest.B64u(m.Sum(nil))
		}
	}
	pubDER := func(tb testing.TB) []byte {
		der, err := x509.MarshalPKIXPublicKey(&jwttest.Keys(tb).RSA.PublicKey)
		if err != nil {
			tb.Fatal(err)
		}
		return der
	}
	hsWith := func(secret func(tb testing.TB) []byte) func(tb testing.TB) string {
		return func(tb testing.TB) string { return hs256("HS256", secret(tb))(tb) }
	}
	cases := []Rejection{
		{Name: "duplicate alg", Token: withHeader(`{"alg":"RS256","alg":"RS256","typ":"JWT","kid":"rsa-1"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		{Name: "duplicate alg none then RS256", Token: withHeader(`{"alg":"none","alg":"RS256","typ":"JWT","kid":"rsa-1"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		{Name: "duplicate kid", Token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","kid":"ec-1"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		{Name: "deeply nested unknown member", Token: unsigned(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","x":`+
			strings.Repeat("[", 4000)+strings.Repeat("]", 4000)+`}`, make([]byte, 256)), Want: problem.CodeSignatureInvalid},
		{Name: "nesting that only fits beyond the token length limit", Token: unsigned(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","x":`+
			strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`}`, make([]byte, 8)), Want: problem.CodeTokenMalformed},
		{Name: "huge number as alg", Token: unsigned(`{"alg":1e999999,"typ":"JWT","kid":"rsa-1"}`, []byte("sig")), Want: problem.CodeHeaderInvalid},
		{Name: "typ missing", Token: withHeader(`{"alg":"RS256","kid":"rsa-1"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		{Name: "typ JOSE", Token: withHeader(`{"alg":"RS256","typ":"JOSE","kid":"rsa-1"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		{Name: "typ at+jwt", Token: withHeader(`{"alg":"RS256","typ":"at+jwt","kid":"rsa-1"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		{Name: "typ number", Token: withHeader(`{"alg":"RS256","typ":1,"kid":"rsa-1"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		{Name: "alg missing", Token: unsigned(`{"typ":"JWT","kid":"rsa-1"}`, nil), Want: problem.CodeTokenMalformed},
		{Name: "alg missing with signature", Token: unsigned(`{"typ":"JWT","kid":"rsa-1"}`, []byte("sig")), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg number", Token: unsigned(`{"alg":256,"typ":"JWT","kid":"rsa-1"}`, []byte("sig")), Want: problem.CodeHeaderInvalid},
		{Name: "alg none", Token: unsigned(`{"alg":"none","typ":"JWT","kid":"rsa-1"}`, []byte("x")), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg None", Token: unsigned(`{"alg":"None","typ":"JWT","kid":"rsa-1"}`, []byte("x")), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg NONE", Token: unsigned(`{"alg":"NONE","typ":"JWT","kid":"rsa-1"}`, []byte("x")), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg nOnE", Token: unsigned(`{"alg":"nOnE","typ":"JWT","kid":"rsa-1"}`, []byte("x")), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg rs256 lowercase", Token: unsigned(`{"alg":"rs256","typ":"JWT","kid":"rsa-1"}`, []byte("x")), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg RS384", Token: withHeader(`{"alg":"RS384","typ":"JWT","kid":"rsa-1"}`, "RS384", "rsa-1"), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg ES384", Token: unsigned(`{"alg":"ES384","typ":"JWT","kid":"ec-1"}`, make([]byte, 96)), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg EdDSA", Token: unsigned(`{"alg":"EdDSA","typ":"JWT","kid":"ec-1"}`, make([]byte, 64)), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "HS256 with public key PEM as secret", Token: hsWith(func(tb testing.TB) []byte {
			return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER(tb)})
		}), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "HS256 with public key DER as secret", Token: hsWith(pubDER), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "HS256 with public JWK JSON as secret", Token: hsWith(func(tb testing.TB) []byte {
			data, _ := json.Marshal(jwttest.JWK(tb, &jwttest.Keys(tb).RSA.PublicKey, "rsa-1", "", nil))
			return data
		}), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "HS384", Token: hs256("HS384", []byte("secret")), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "HS512", Token: hs256("HS512", []byte("secret")), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "alg outside the partner's set", Rules: linktoken.Rules{Algorithms: []string{linktoken.ES256}},
			Token: withHeader(jwttest.HeaderJSON(linktoken.RS256, "rsa-1"), linktoken.RS256, "rsa-1"), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "kid missing", Token: withHeader(`{"alg":"RS256","typ":"JWT"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeKeyIDMissing},
		{Name: "kid empty", Token: withHeader(`{"alg":"RS256","typ":"JWT","kid":""}`, linktoken.RS256, "rsa-1"), Want: problem.CodeKeyIDMissing},
		{Name: "kid number", Token: withHeader(`{"alg":"RS256","typ":"JWT","kid":1}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		{Name: "kid unknown", Token: withHeader(jwttest.HeaderJSON(linktoken.RS256, "rsa-9"), linktoken.RS256, "rsa-1"), Want: problem.CodeKeyUnknown, Secrets: []string{"rsa-9"}},
		{Name: "kid path traversal", Token: withHeader(jwttest.HeaderJSON(linktoken.RS256, "../../../etc/passwd"), linktoken.RS256, "rsa-1"),
			Want: problem.CodeKeyUnknown, Secrets: []string{"passwd"}},
		{Name: "kid SQL", Token: withHeader(jwttest.HeaderJSON(linktoken.RS256, `x' OR '1'='1`), linktoken.RS256, "rsa-1"), Want: problem.CodeKeyUnknown, Secrets: []string{"OR"}},
		{Name: "kid shell", Token: withHeader(jwttest.HeaderJSON(linktoken.RS256, "$(reboot);`id`"), linktoken.RS256, "rsa-1"), Want: problem.CodeKeyUnknown, Secrets: []string{"reboot"}},
		{Name: "kid huge", Token: withHeader(jwttest.HeaderJSON(linktoken.RS256, strings.Repeat("k", 4000)), linktoken.RS256, "rsa-1"), Want: problem.CodeKeyUnknown, Secrets: []string{"kkkk"}},
		{Name: "kid of another key type, RS256 on EC key", Token: withHeader(jwttest.HeaderJSON(linktoken.RS256, "ec-1"), linktoken.RS256, "rsa-1"), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "kid of another key type, ES256 on RSA key", Token: withHeader(jwttest.HeaderJSON(linktoken.ES256, "rsa-1"), linktoken.ES256, "ec-1"), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "PS256 header on a key with alg RS256", Token: withHeader(jwttest.HeaderJSON(linktoken.PS256, "rsa-rs"), linktoken.PS256, "rsa-rs"), Want: problem.CodeAlgorithmNotAllowed},
		{Name: "RS256 header, PS256 signature", Token: func(tb testing.TB) string {
			tok := jwttest.Resign(tb, jwttest.HeaderJSON(linktoken.RS256, "rsa-1"), claims(tb), linktoken.PS256, "rsa-1")
			return tok
		}, Want: problem.CodeSignatureInvalid},
		{Name: "PS256 header, RS256 signature", Token: withHeader(jwttest.HeaderJSON(linktoken.PS256, "rsa-1"), linktoken.RS256, "rsa-1"), Want: problem.CodeSignatureInvalid},
	}
	// Members that change how the token is processed or where its key comes from: refused
	// whatever their value. (x5c, x5t and x5t#S256 are accepted hints, see Acceptances;
	// only their malformed values are below.)
	for _, m := range []string{"jku", "jwk", "x5u", "crit", "b64", "cty", "enc", "zip"} {
		for _, val := range []string{`"x"`, `null`} {
			cases = append(cases, Rejection{
				Name:  "member " + m + " " + val,
				Token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","`+m+`":`+val+`}`, linktoken.RS256, "rsa-1"),
				Want:  problem.CodeHeaderInvalid,
			})
		}
	}
	// Malformed certificate hints (RFC 7515 §4.1.6 to §4.1.8): a broken header.
	for _, hint := range []struct{ member, val string }{
		{"x5t", `null`}, {"x5t", `1`}, {"x5t", `["x"]`},
		{"x5t#S256", `null`}, {"x5t#S256", `{}`},
		{"x5c", `null`}, {"x5c", `"MIIB"`}, {"x5c", `[]`}, {"x5c", `[1]`}, {"x5c", `["MIIB",null]`},
	} {
		cases = append(cases, Rejection{
			Name:  "malformed hint " + hint.member + " " + hint.val,
			Token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","`+hint.member+`":`+hint.val+`}`, linktoken.RS256, "rsa-1"),
			Want:  problem.CodeHeaderInvalid,
		})
	}
	cases = append(cases,
		Rejection{Name: "embedded attacker jwk", Token: func(tb testing.TB) string {
			k := jwttest.Keys(tb)
			j, _ := json.Marshal(jwttest.JWK(tb, &k.RSA2.PublicKey, "rsa-1", "", nil))
			return jwttest.Resign(tb, `{"alg":"RS256","typ":"JWT","kid":"rsa-1","jwk":`+string(j)+`}`, claims(tb), linktoken.RS256, "rsa-rs")
		}, Want: problem.CodeHeaderInvalid},
		Rejection{Name: "nested JWT cty", Token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","cty":"JWT"}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
		Rejection{Name: "jku beside accepted hints", Token: func(tb testing.TB) string {
			return jwttest.Resign(tb, `{"alg":"RS256","typ":"JWT","kid":"rsa-1","x5t":"`+CertHints(tb, jwttest.Keys(tb).RSA).X5t+`","jku":"https://evil.example/jwks.json"}`, claims(tb), linktoken.RS256, "rsa-1")
		}, Want: problem.CodeHeaderInvalid, Secrets: []string{"evil"}},
		// The hints never choose the key: a token that carries the certificate of another
		// key (and its thumbprints) and is signed by that key is verified with the
		// partner's key of its kid, and fails.
		Rejection{Name: "x5c of another key, signed by it", Token: func(tb testing.TB) string {
			other := AttackerKey(tb)
			hints := CertHints(tb, other)
			h := `{"alg":"RS256","typ":"JWT","kid":"rsa-1","x5c":["` + hints.X5c + `"],"x5t":"` + hints.X5t + `","x5t#S256":"` + hints.X5tS256 + `"}`
			return jwttest.SignRaw(tb, h, claims(tb), linktoken.RS256, other)
		}, Want: problem.CodeSignatureInvalid},
		Rejection{Name: "x5c of another key, signed by it, kid unknown", Token: func(tb testing.TB) string {
			other := AttackerKey(tb)
			h := `{"alg":"RS256","typ":"JWT","kid":"attacker","x5c":["` + CertHints(tb, other).X5c + `"]}`
			return jwttest.SignRaw(tb, h, claims(tb), linktoken.RS256, other)
		}, Want: problem.CodeKeyUnknown},
		Rejection{Name: "crit with b64 false", Token: withHeader(`{"alg":"RS256","typ":"JWT","kid":"rsa-1","b64":false,"crit":["b64"]}`, linktoken.RS256, "rsa-1"), Want: problem.CodeHeaderInvalid},
	)
	return cases
}

func signatureCases(at time.Time) []Rejection {
	claims := func(tb testing.TB) string { return jwttest.ClaimsJSON(tb, jwttest.MainClaimsAt(at)) }
	replaceSig := func(alg string, f func(tb testing.TB, sig []byte) []byte) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			tok := jwttest.Resign(tb, jwttest.HeaderJSON(alg, jwttest.KidFor(alg)), claims(tb), alg, jwttest.KidFor(alg))
			s := strings.Split(tok, ".")
			sig, err := base64.RawURLEncoding.DecodeString(s[2])
			if err != nil {
				tb.Fatal(err)
			}
			return s[0] + "." + s[1] + "." + jwttest.B64u(f(tb, sig))
		}
	}
	n := elliptic.P256().Params().N
	cases := []Rejection{
		{Name: "ES256 r=s=0", Token: replaceSig(linktoken.ES256, func(tb testing.TB, sig []byte) []byte { return make([]byte, 64) }), Want: problem.CodeSignatureInvalid},
		{Name: "ES256 r=s=n", Token: replaceSig(linktoken.ES256, func(tb testing.TB, sig []byte) []byte {
			out := make([]byte, 64)
			n.FillBytes(out[:32])
			n.FillBytes(out[32:])
			return out
		}), Want: problem.CodeSignatureInvalid},
		{Name: "ES256 s+n overflow", Token: replaceSig(linktoken.ES256, func(tb testing.TB, sig []byte) []byte {
			s := new(big.Int).SetBytes(sig[32:])
			s.Add(s, n)
			return append(sig[:32:32], s.Bytes()...)
		}), Want: problem.CodeSignatureInvalid},
		{Name: "ES256 63 bytes", Token: replaceSig(linktoken.ES256, func(tb testing.TB, sig []byte) []byte { return sig[1:] }), Want: problem.CodeSignatureInvalid},
		{Name: "ES256 65 bytes", Token: replaceSig(linktoken.ES256, func(tb testing.TB, sig []byte) []byte { return append([]byte{0}, sig...) }), Want: problem.CodeSignatureInvalid},
		{Name: "ES256 DER signature", Token: replaceSig(linktoken.ES256, func(tb testing.TB, sig []byte) []byte {
			r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			der := derSignature(r, s)
			return der
		}), Want: problem.CodeSignatureInvalid},
		{Name: "ES256 flipped bit", Token: replaceSig(linktoken.ES256, func(tb testing.TB, sig []byte) []byte { sig[10] ^= 1; return sig }), Want: problem.CodeSignatureInvalid},
		{Name: "RS256 leading zero added", Token: replaceSig(linktoken.RS256, func(tb testing.TB, sig []byte) []byte { return append([]byte{0}, sig...) }), Want: problem.CodeSignatureInvalid},
		{Name: "RS256 first byte dropped", Token: replaceSig(linktoken.RS256, func(tb testing.TB, sig []byte) []byte { return sig[1:] }), Want: problem.CodeSignatureInvalid},
		{Name: "RS256 leading zero stripped", Token: func(tb testing.TB) string {
			// Sign until the signature starts with a zero byte (1 in 256), then strip it: the
			// integer is the same, the encoding is not the modulus's length.
			for i := 0; i < 5000; i++ {
				c := jwttest.MainClaimsAt(at)
				c["nonce"] = jwttest.Nonce + strings.Repeat("x", i%50) + string(rune('a'+i%26))
				c["caseId"] = "case-" + big.NewInt(int64(i)).String()
				tok := jwttest.Token(tb, linktoken.RS256, "rsa-1", c)
				s := strings.Split(tok, ".")
				sig, _ := base64.RawURLEncoding.DecodeString(s[2])
				if sig[0] == 0 {
					return s[0] + "." + s[1] + "." + jwttest.B64u(sig[1:])
				}
			}
			tb.Fatal("no signature with a leading zero in 5000 tries")
			return ""
		}, Want: problem.CodeSignatureInvalid},
		{Name: "PS256 flipped bit", Token: replaceSig(linktoken.PS256, func(tb testing.TB, sig []byte) []byte { sig[100] ^= 0x80; return sig }), Want: problem.CodeSignatureInvalid},
		{Name: "RS256 all zero", Token: replaceSig(linktoken.RS256, func(tb testing.TB, sig []byte) []byte { return make([]byte, len(sig)) }), Want: problem.CodeSignatureInvalid},
		{Name: "claims changed after signing", Token: func(tb testing.TB) string {
			tok := jwttest.Token(tb, linktoken.ES256, "ec-1", jwttest.MainClaimsAt(at))
			s := strings.Split(tok, ".")
			c := jwttest.MainClaimsAt(at)
			c["employeeId"] = "admin"
			return s[0] + "." + jwttest.B64u([]byte(jwttest.ClaimsJSON(tb, c))) + "." + s[2]
		}, Want: problem.CodeSignatureInvalid},
		{Name: "signed by another key with the same kid", Token: func(tb testing.TB) string {
			return jwttest.SignRaw(tb, jwttest.HeaderJSON(linktoken.RS256, "rsa-1"), claims(tb), linktoken.RS256, jwttest.Keys(tb).RSA2)
		}, Want: problem.CodeSignatureInvalid},
		{Name: "ES256 signed by another EC key with the same kid", Token: func(tb testing.TB) string {
			return jwttest.SignRaw(tb, jwttest.HeaderJSON(linktoken.ES256, "ec-1"), claims(tb), linktoken.ES256, jwttest.Keys(tb).EC2)
		}, Want: problem.CodeSignatureInvalid},
		{Name: "RS256 with a signature of other claims", Token: func(tb testing.TB) string {
			a := strings.Split(jwttest.Token(tb, linktoken.RS256, "rsa-1", jwttest.MainClaimsAt(at)), ".")
			b := strings.Split(jwttest.Token(tb, linktoken.RS256, "rsa-1", jwttest.GoClaimsAt(at)), ".")
			return a[0] + "." + a[1] + "." + b[2]
		}, Want: problem.CodeSignatureInvalid},
	}
	return cases

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

func claimCases(at time.Time) []Rejection {
	header := jwttest.HeaderJSON(linktoken.ES256, "ec-1")
	raw := func(claims string) func(tb testing.TB) string {
		return func(tb testing.TB) string { return jwttest.Resign(tb, header, claims, linktoken.ES256, "ec-1") }
	}
	member := func(name, value string) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			return jwttest.Resign(tb, header, jwttest.RawClaimsAt(tb, at, name, value), linktoken.ES256, "ec-1")
		}
	}
	with := func(f func(c map[string]any)) func(tb testing.TB) string {
		return func(tb testing.TB) string {
			return jwttest.Token(tb, linktoken.ES256, "ec-1", jwttest.WithClaimsAt(at, f))
		}
	}
	rename := func(from, to string) func(tb testing.TB) string {
		return with(func(c map[string]any) { c[to] = c[from]; delete(c, from) })
	}
	nbf := at.Unix()
	leeway := linktoken.DefaultLeeway
	return []Rejection{
		{Name: "claims not JSON", Token: raw(`not json`), Want: problem.CodeClaimsInvalid},
		{Name: "claims JSON array", Token: raw(`[1,2]`), Want: problem.CodeClaimsInvalid},
		{Name: "claims JSON string", Token: raw(`"x"`), Want: problem.CodeClaimsInvalid},
		{Name: "claims null", Token: raw(`null`), Want: problem.CodeClaimsInvalid},
		{Name: "claims empty object", Token: raw(`{}`), Want: problem.CodeIssuerInvalid},
		{Name: "claims trailing data", Token: func(tb testing.TB) string {
			return jwttest.Resign(tb, header, jwttest.ClaimsJSON(tb, jwttest.MainClaimsAt(at))+`{}`, linktoken.ES256, "ec-1")
		}, Want: problem.CodeClaimsInvalid},
		{Name: "claims invalid UTF-8", Token: func(tb testing.TB) string {
			return jwttest.Resign(tb, header, jwttest.RawClaimsAt(tb, at, "note", "\"\xc3\x28\""), linktoken.ES256, "ec-1")
		}, Want: problem.CodeClaimsInvalid},
		{Name: "duplicate nonce", Token: func(tb testing.TB) string {
			return jwttest.Resign(tb, header, jwttest.RawClaimsAt(tb, at, "nonce", `"`+jwttest.Nonce+`","nonce":"`+jwttest.Nonce+`2"`), linktoken.ES256, "ec-1")
		}, Want: problem.CodeClaimsInvalid},
		{Name: "duplicate exp", Token: member("exp", `9999999999,"exp":1`), Want: problem.CodeClaimsInvalid},
		{Name: "duplicate employeeId", Token: member("employeeId", `"a","employeeId":"b"`), Want: problem.CodeClaimsInvalid},
		{Name: "duplicate in contact", Token: member("contact", `{"id":"c","firstname":"A","firstname":"B","lastname":"L"}`), Want: problem.CodeClaimsInvalid},
		{Name: "duplicate unknown claim", Token: member("x", `1,"x":2`), Want: problem.CodeClaimsInvalid},
		{Name: "case variant duplicate employeeId", Token: member("employeeId", `"emp-1","EMPLOYEEID":"emp-admin"`), Want: problem.CodeClaimsInvalid},
		{Name: "case variant duplicate in contact", Token: member("contact", `{"id":"c","ID":"c2","firstname":"A","lastname":"L"}`), Want: problem.CodeClaimsInvalid},
		{Name: "unicode fold duplicate", Token: member("employeeUsername", "\"a\",\"employeeUſername\":\"b\""), Want: problem.CodeClaimsInvalid},
		{Name: "case variant alone", Token: rename("employeeId", "EmployeeId"), Want: problem.CodeClaimsInvalid},
		{Name: "delimiter variant alone", Token: rename("employeeId", "employee_id"), Want: problem.CodeClaimsInvalid},
		{Name: "unicode fold variant alone", Token: rename("employeeUsername", "employeeUſername"), Want: problem.CodeClaimsInvalid},
		{Name: "case variant of nonce", Token: rename("nonce", "Nonce"), Want: problem.CodeClaimsInvalid},
		{Name: "case variant of exp next to exp", Token: member("exp", big.NewInt(nbf+300).String()+`,"EXP":1`), Want: problem.CodeClaimsInvalid},
		{Name: "case variant in contact alone", Token: member("contact", `{"ID":"c","firstname":"A","lastname":"L"}`), Want: problem.CodeClaimsInvalid},
		{Name: "extra claim nested too deeply", Token: member("x", strings.Repeat("[", 20)+strings.Repeat("]", 20)), Want: problem.CodeClaimsInvalid},
		{Name: "exp as string", Token: member("exp", `"`+big.NewInt(nbf+300).String()+`"`), Want: problem.CodeClaimsInvalid},
		{Name: "exp null", Token: member("exp", `null`), Want: problem.CodeClaimsInvalid},
		{Name: "exp fractional", Token: member("exp", big.NewInt(nbf+299).String()+`.5`), Want: problem.CodeClaimsInvalid},
		{Name: "exp exponent", Token: member("exp", `1.7e9`), Want: problem.CodeClaimsInvalid},
		{Name: "exp negative", Token: member("exp", `-1`), Want: problem.CodeClaimsInvalid},
		{Name: "exp huge", Token: member("exp", strings.Repeat("9", 400)), Want: problem.CodeClaimsInvalid},
		{Name: "exp of 19 digits", Token: member("exp", `1795000000000000000`), Want: problem.CodeClaimsInvalid},
		// A time in milliseconds (Date.now()) has its own answer, naming the claims.
		{Name: "exp in milliseconds", Token: with(func(c map[string]any) { c["exp"] = (nbf + 120) * 1000 }), Want: problem.CodeTimeInMilliseconds},
		{Name: "nbf, iat and exp in milliseconds", Token: with(func(c map[string]any) {
			c["nbf"], c["iat"], c["exp"] = nbf*1000, nbf*1000, (nbf+120)*1000
		}), Want: problem.CodeTimeInMilliseconds},
		{Name: "iat in milliseconds", Token: with(func(c map[string]any) { c["iat"] = nbf * 1000 }), Want: problem.CodeTimeInMilliseconds},
		{Name: "exp in microseconds", Token: with(func(c map[string]any) { c["exp"] = (nbf + 120) * 1000000 }), Want: problem.CodeTimeInMilliseconds},
		{Name: "exp one above the seconds bound", Token: with(func(c map[string]any) { c["exp"] = int64(linktoken.MaxSecondsDate + 1) }), Want: problem.CodeTimeInMilliseconds},
		{Name: "exp beyond year 9999", Token: member("exp", `253402300800`), Want: problem.CodeTimeInMilliseconds},
		{Name: "nbf as bool", Token: member("nbf", `true`), Want: problem.CodeClaimsInvalid},
		{Name: "iat as string", Token: member("iat", `"now"`), Want: problem.CodeClaimsInvalid},
		{Name: "aud as number", Token: member("aud", `7`), Want: problem.CodeClaimsInvalid},
		{Name: "aud as object", Token: member("aud", `{"a":"svc-link"}`), Want: problem.CodeClaimsInvalid},
		{Name: "aud array of numbers", Token: member("aud", `[1]`), Want: problem.CodeClaimsInvalid},
		{Name: "aud array with a number after it", Token: member("aud", `["svc-link",1]`), Want: problem.CodeClaimsInvalid},
		{Name: "aud array nested", Token: member("aud", `[["svc-link"]]`), Want: problem.CodeClaimsInvalid},
		{Name: "aud null", Token: member("aud", `null`), Want: problem.CodeClaimsInvalid},
		{Name: "aud prefix", Token: member("aud", `"svc-link2"`), Want: problem.CodeAudienceInvalid},
		{Name: "iss as array", Token: member("iss", `["https://acme.example"]`), Want: problem.CodeClaimsInvalid},
		{Name: "nonce as object", Token: member("nonce", `{"v":"`+jwttest.Nonce+`"}`), Want: problem.CodeNonceInvalid},
		{Name: "nonce as number", Token: member("nonce", `12345678901234567890`), Want: problem.CodeNonceInvalid},
		{Name: "employeeId as number", Token: member("employeeId", `1042`), Want: problem.CodePayloadInvalid, Field: "employeeId"},
		{Name: "contact as string", Token: member("contact", `"Ola"`), Want: problem.CodePayloadInvalid, Field: "contact"},
		{Name: "contact firstname as number", Token: member("contact", `{"id":"c","firstname":7,"lastname":"L"}`), Want: problem.CodePayloadInvalid, Field: "contact.firstname"},
		{Name: "iss other", Token: with(func(c map[string]any) { c["iss"] = "https://evil.example" }), Want: problem.CodeIssuerInvalid, Secrets: []string{"evil"}},
		{Name: "iss other case", Token: with(func(c map[string]any) { c["iss"] = "https://ACME.example" }), Want: problem.CodeIssuerInvalid},
		{Name: "iss trailing slash", Token: with(func(c map[string]any) { c["iss"] = jwttest.Issuer + "/" }), Want: problem.CodeIssuerInvalid},
		{Name: "iss missing", Token: with(func(c map[string]any) { delete(c, "iss") }), Want: problem.CodeIssuerInvalid},
		{Name: "aud other", Token: with(func(c map[string]any) { c["aud"] = "svc-other" }), Want: problem.CodeAudienceInvalid},
		{Name: "aud array without it", Token: with(func(c map[string]any) { c["aud"] = []string{"a", "b"} }), Want: problem.CodeAudienceInvalid},
		{Name: "aud empty array", Token: with(func(c map[string]any) { c["aud"] = []string{} }), Want: problem.CodeAudienceInvalid},
		{Name: "aud missing", Token: with(func(c map[string]any) { delete(c, "aud") }), Want: problem.CodeAudienceInvalid},
		{Name: "nbf missing", Token: with(func(c map[string]any) { delete(c, "nbf"); delete(c, "iat") }), Want: problem.CodeClaimsInvalid},
		{Name: "exp missing", Token: with(func(c map[string]any) { delete(c, "exp") }), Want: problem.CodeClaimsInvalid},
		{Name: "lifetime 301s", Token: with(func(c map[string]any) { c["exp"] = nbf + 301 }), Want: problem.CodeLifetimeTooLong},
		{Name: "lifetime one day", Token: with(func(c map[string]any) { c["exp"] = nbf + 86400 }), Want: problem.CodeLifetimeTooLong},
		// In nanoseconds these differences wrap around int64 to a negative duration.
		{Name: "lifetime 1e10 s", Token: with(func(c map[string]any) { c["exp"] = nbf + 1e10 }), Want: problem.CodeLifetimeTooLong},
		{Name: "lifetime to the seconds bound", Token: with(func(c map[string]any) { c["exp"] = int64(linktoken.MaxSecondsDate) }), Want: problem.CodeLifetimeTooLong},
		{Name: "lifetime over a shorter partner maximum", Rules: linktoken.Rules{MaxLifetime: time.Minute},
			Token: with(func(c map[string]any) { c["exp"] = nbf + 61 }), Want: problem.CodeLifetimeTooLong},
		{Name: "lifetime 301s with leeway inside", Now: at.Add(time.Second),
			Token: with(func(c map[string]any) { c["exp"] = nbf + 301 }), Want: problem.CodeLifetimeTooLong},
		{Name: "exp equal to nbf", Token: with(func(c map[string]any) { c["exp"] = nbf }), Want: problem.CodeClaimsInvalid},
		{Name: "exp before nbf", Token: with(func(c map[string]any) { c["exp"] = nbf - 10 }), Want: problem.CodeClaimsInvalid},
		{Name: "iat before nbf", Token: with(func(c map[string]any) { c["iat"] = nbf - 1 }), Want: problem.CodeClaimsInvalid},
		{Name: "iat after nbf", Token: with(func(c map[string]any) { c["iat"] = nbf + 1 }), Want: problem.CodeClaimsInvalid},
		{Name: "nbf beyond leeway", Now: at.Add(-leeway - time.Second), Token: with(func(c map[string]any) {}), Want: problem.CodeTokenNotYetValid},
		{Name: "expired exactly at exp plus leeway", Now: at.Add(300*time.Second + leeway), Token: with(func(c map[string]any) {}), Want: problem.CodeTokenExpired},
		{Name: "expired one second beyond leeway", Now: at.Add(301*time.Second + leeway), Token: with(func(c map[string]any) {}), Want: problem.CodeTokenExpired},
		{Name: "expired long ago", Now: at.Add(24 * time.Hour), Token: with(func(c map[string]any) {}), Want: problem.CodeTokenExpired},
		{Name: "nonce missing", Token: with(func(c map[string]any) { delete(c, "nonce") }), Want: problem.CodeNonceMissing},
		{Name: "nonce empty", Token: with(func(c map[string]any) { c["nonce"] = "" }), Want: problem.CodeNonceMissing},
		{Name: "nonce 15 bytes", Token: with(func(c map[string]any) { c["nonce"] = strings.Repeat("n", 15) }), Want: problem.CodeNonceInvalid},
		{Name: "nonce 257 bytes", Token: with(func(c map[string]any) { c["nonce"] = strings.Repeat("n", 257) }), Want: problem.CodeNonceInvalid},
		{Name: "nonce over a partner maximum", Rules: linktoken.Rules{NonceMaxLength: 32},
			Token: with(func(c map[string]any) { c["nonce"] = strings.Repeat("n", 33) }), Want: problem.CodeNonceInvalid},
		{Name: "nonce with space", Token: with(func(c map[string]any) { c["nonce"] = "nonce with spaces in it" }), Want: problem.CodeNonceInvalid},
		{Name: "nonce with newline", Token: with(func(c map[string]any) { c["nonce"] = "0123456789abcdef\n" }), Want: problem.CodeNonceInvalid},
		{Name: "nonce non-ASCII", Token: with(func(c map[string]any) { c["nonce"] = "0123456789abcdefø" }), Want: problem.CodeNonceInvalid},
		{Name: "main link to a go-only partner", Rules: linktoken.Rules{Kinds: []linkspec.Kind{linkspec.KindGo}},
			Token: with(func(c map[string]any) {}), Want: problem.CodeKindNotAllowed},
		{Name: "go link to a main-only partner", Rules: linktoken.Rules{Kinds: []linkspec.Kind{linkspec.KindMain}},
			Token: func(tb testing.TB) string { return jwttest.Token(tb, linktoken.ES256, "ec-1", jwttest.GoClaimsAt(at)) }, Want: problem.CodeKindNotAllowed},
		{Name: "organizationId missing", Token: with(func(c map[string]any) { delete(c, "organizationId") }), Want: problem.CodePayloadInvalid, Field: "organizationId"},
		// A malformed optional value (birthdate "1981-02-29" among them) is dropped, not
		// refused: see Acceptances. Required fields stay strict.
		{Name: "required contact.firstname blank", Token: with(func(c map[string]any) {
			c["contact"].(map[string]any)["firstname"] = "   "
		}), Want: problem.CodePayloadInvalid, Field: "contact.firstname"},
		{Name: "go link with a malformed contact email (required there)", Token: func(tb testing.TB) string {
			c := jwttest.GoClaimsAt(at)
			c["contact"].(map[string]any)["email"] = "ola at example.org"
			return jwttest.Token(tb, linktoken.ES256, "ec-1", c)
		}, Want: problem.CodePayloadInvalid, Field: "contact.email"},
		// A main-client link that lost employeeId is a broken main link, not a Go link.
		{Name: "main link without employeeId", Token: with(func(c map[string]any) { delete(c, "employeeId") }),
			Want: problem.CodePayloadInvalid, Field: "employeeId"},
		{Name: "main link with only employeeLastname", Token: func(tb testing.TB) string {
			c := jwttest.GoClaimsAt(at)
			c["employeeLastname"] = "Ødegård"
			return jwttest.Token(tb, linktoken.ES256, "ec-1", c)
		}, Want: problem.CodePayloadInvalid, Field: "employeeId"},
		{Name: "main link with a blank employeeId", Token: with(func(c map[string]any) { c["employeeId"] = " " }),
			Want: problem.CodePayloadInvalid, Field: "employeeId"},
		{Name: "main link without employeeId to a go-only partner", Rules: linktoken.Rules{Kinds: []linkspec.Kind{linkspec.KindGo}},
			Token: with(func(c map[string]any) { delete(c, "employeeId") }), Want: problem.CodeKindNotAllowed},
		{Name: "contact missing", Token: with(func(c map[string]any) { delete(c, "contact") }), Want: problem.CodePayloadInvalid, Field: "contact"},
		{Name: "control character in a name", Token: with(func(c map[string]any) { c["employeeFirstname"] = "Åse\r\nX-Evil: 1" }), Want: problem.CodePayloadInvalid, Field: "employeeFirstname"},
		{Name: "go link without contact email", Token: func(tb testing.TB) string {
			c := jwttest.GoClaimsAt(at)
			delete(c["contact"].(map[string]any), "email")
			return jwttest.Token(tb, linktoken.ES256, "ec-1", c)
		}, Want: problem.CodePayloadInvalid, Field: "contact.email"},
	}
}
