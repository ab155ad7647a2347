// Package attack proves that the gateway cannot be fooled: the attack catalogue of issue 6
// and the key-set, slow-body and parser-differential tests, all against the real caddy
// binary. SECURITY.md says which rule each case enforces.
package attack

// The attack catalogue of issue 6: every known trick against a JWT verifier (RFC 8725, RFC
// 7515/7519, the OWASP JWT cheat sheet), sent to the real caddy binary with the jwt_partner
// module in front of a recording upstream. Each rejected case asserts the exact status and
// problem code and that the upstream received nothing; each accepted case that it received
// exactly one request. The test prints a table of cases and outcomes, and writes it to
// integration/artifacts/attack-catalogue.txt, which ./test.sh shows.

import (
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linkspec"
)

// request is one request an attack sends.
type request struct {
	method      string // default POST
	contentType string // default the endpoint's; "-" sends none
	body        string // default the token, framed for the endpoint
	token       string
	rawQuery    string
	header      http.Header
	chunked     bool // send the body with Transfer-Encoding: chunked
}

// attackCase is one row of the catalogue.
type attackCase struct {
	name     string
	path     string // default /partner/<partner>/<endpoint>
	endpoint string // "url" (default) or "payload"
	partner  string // default "acme"
	// build makes the request; it may send earlier requests (a replay needs a first use).
	build func(t *testing.T, e *env) request
	// status and code are the expected answer; code "" means accepted: the upstream must
	// receive exactly one request.
	status int
	code   string
	// bodyless marks a rejection answered without a body (HEAD): status only.
	bodyless bool
	// urlOnly keeps a token-level case that sends its own body off /payload.
	urlOnly bool
	// check runs extra assertions on the answer and the upstream's record.
	check func(t *testing.T, e *env, res *response)
}

// Codes the gateway documents (linktoken/linktoken.go, problem/problem.go).
// Spelled out here, not imported: the catalogue states the public contract a partner
// matches on, and a renamed constant must fail it.
const (
	codeTokenMalformed     = "token_malformed"
	codeHeaderInvalid      = "header_invalid"
	codeAlgNotAllowed      = "algorithm_not_allowed"
	codeKeyIDMissing       = "key_id_missing"
	codeKeyUnknown         = "key_unknown"
	codeKeysUnavailable    = "keys_unavailable"
	codeSignatureInvalid   = "signature_invalid"
	codeClaimsInvalid      = "claims_invalid"
	codeIssuerInvalid      = "issuer_invalid"
	codeAudienceInvalid    = "audience_invalid"
	codeLifetimeTooLong    = "lifetime_too_long"
	codeNotYetValid        = "token_not_yet_valid"
	codeExpired            = "token_expired"
	codeNonceMissing       = "nonce_missing"
	codeNonceInvalid       = "nonce_invalid"
	codePayloadInvalid     = "payload_invalid"
	codePartnerUnknown     = "partner_unknown"
	codeNotFound           = "not_found"
	codeMethodNotAllowed   = "method_not_allowed"
	codeUnsupportedMedia   = "unsupported_media_type"
	codeBodyTooLarge       = "body_too_large"
	codeBodyUnreadable     = "body_unreadable"
	codeTokenMissing       = "token_missing"
	codeTokenDuplicated    = "token_duplicated"
	codeTokenInQuery       = "token_in_query"
	codeTokenReplayed      = "token_replayed"
	codeOriginNotAllowed   = "origin_not_allowed"
	statusAccepted         = http.StatusOK
	maxBodySize            = 16 << 10
	defaultLeeway          = 30 * time.Second
	maxLifetimeSeconds     = 300
	markupScript           = `<script>alert(1)</script>`
	markupAttr             = `"><img src=x onerror=alert(1)>`
	cspNone                = "default-src 'none'"
	percentLiteral         = "%0d%0aX-Admin:%201%25"
	problemJSONContentType = "application/problem+json"
)

// token builds a valid token of partner p (default acme) with the claims changed by mod,
// signed with the partner key kid.
func (e *env) token(t *testing.T, kid string, mod func(c map[string]any)) string {
	t.Helper()
	k := e.key(kid)
	c := claimsFor(t, e.partners[k.partner], time.Now())
	if mod != nil {
		mod(c)
	}
	return compact(t, mustJSON(t, header(k.Alg, k.Kid)), mustJSON(t, c), k.sign)
}

// tokenRaw builds a token from raw header and claims JSON signed with the partner key kid.
func (e *env) tokenRaw(t *testing.T, kid string, hdr, claims []byte) string {
	t.Helper()
	return compact(t, hdr, claims, e.key(kid).sign)
}

// validClaims returns the JSON of valid claims of partner name.
func (e *env) validClaims(t *testing.T, name string) []byte {
	t.Helper()
	return mustJSON(t, claimsFor(t, e.partners[name], time.Now()))
}

// withToken wraps a token maker as a build function.
func withToken(f func(t *testing.T, e *env) string) func(*testing.T, *env) request {
	return func(t *testing.T, e *env) request { return request{token: f(t, e)} }
}

// reSign makes a token with header hdr (a map) over valid acme claims, signed by sign.
func reSign(hdr map[string]any, sign func(e *env) signer) func(*testing.T, *env) request {
	return withToken(func(t *testing.T, e *env) string {
		return compact(t, mustJSON(t, hdr), e.validClaims(t, "acme"), sign(e))
	})
}

// catalogue returns every attack, by category. Names are stable: the findings file refers
// to them.
func catalogue() []attackCase {
	var cs []attackCase
	for _, category := range []func() []attackCase{
		baselines,
		algNone,
		hmacConfusion,
		algConfusion,
		keysNamedByToken,
		kidValues,
		typ,
		ecdsaSignatures,
		rsaSignatureLength,
		headerMembers,
		serializations,
		jsonAmbiguity,
		claimTypes,
		registeredClaims,
		partnerIsolation,
		reflection,
		theRequest,
		loginCSRF,
	} {
		cs = append(cs, category()...)
	}
	return append(cs, onPayloadPage(cs)...)
}

// baselines are real tokens: the catalogue is only meaningful if a real token gets through.
func baselines() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	add(
		attackCase{name: "baseline/RS256 url", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: statusAccepted},
		attackCase{name: "baseline/PS256 url", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-ps", nil) }), status: statusAccepted},
		attackCase{name: "baseline/ES256 payload", endpoint: "payload", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-es", nil) }), status: statusAccepted},
		attackCase{name: "baseline/beta ES256 url", partner: "beta", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "beta-es", nil) }), status: statusAccepted},
	)
	return cs
}

// algNone is alg none, in any case, unsigned and with a signature (RFC 8725 §2.1, §3.1).
func algNone() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	for _, alg := range []string{"none", "None", "NONE", "nOnE"} {
		add(attackCase{
			// An empty signature segment is not a compact JWS at all (linktoken's
			// splitCompact): refused before the header is read.
			name:   "alg none/" + alg + " unsigned",
			build:  reSign(header(alg, "acme-rs"), func(*env) signer { return nil }),
			status: http.StatusBadRequest, code: codeTokenMalformed,
		}, attackCase{
			name: "alg none/" + alg + " with RS256 signature",
			build: reSign(header(alg, "acme-rs"), func(e *env) signer {
				return e.key("acme-rs").sign
			}),
			status: http.StatusUnauthorized, code: codeAlgNotAllowed,
		})
	}
	return cs
}

// hmacConfusion is HMAC with the partner's public key as the secret: the classic key confusion
// (RFC 8725 §2.1), in every form a verifier might feed to HMAC.
func hmacConfusion() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	for _, alg := range []string{"HS256", "HS384", "HS512"} {
		for _, form := range []string{"pkix pem", "pkcs1 pem", "der", "jwk json", "jwks json"} {
			alg, form := alg, form
			add(attackCase{
				name: "hmac confusion/" + alg + " " + form,
				build: reSign(header(alg, "acme-rs"), func(e *env) signer {
					return signHS(alg, e.publicKeyForm(form, "acme-rs"))
				}),
				status: http.StatusUnauthorized, code: codeAlgNotAllowed,
			})
		}
	}
	return cs
}

// algConfusion is algorithm confusion between RS, PS and ES.
func algConfusion() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	add(
		attackCase{
			name:   "alg confusion/RS256 header PS256 signature",
			build:  reSign(header("RS256", "acme-rs"), func(e *env) signer { return signPS256(e.key("acme-rs").rsa) }),
			status: http.StatusUnauthorized, code: codeSignatureInvalid,
		},
		attackCase{
			name:   "alg confusion/PS256 header RS256 signature on key without alg",
			build:  reSign(header("PS256", "acme-any"), func(e *env) signer { return signRS256(e.key("acme-any").rsa) }),
			status: http.StatusUnauthorized, code: codeSignatureInvalid,
		},
		attackCase{
			name:   "alg confusion/RS256 header on EC key",
			build:  reSign(header("RS256", "acme-es"), func(e *env) signer { return signES256(e.key("acme-es").ec) }),
			status: http.StatusUnauthorized, code: codeAlgNotAllowed,
		},
		attackCase{
			name:   "alg confusion/ES256 header on RSA key without alg",
			build:  reSign(header("ES256", "acme-any"), func(e *env) signer { return signRS256(e.key("acme-any").rsa) }),
			status: http.StatusUnauthorized, code: codeAlgNotAllowed,
		},
		attackCase{
			name:   "alg confusion/PS256 header on key with alg RS256",
			build:  reSign(header("PS256", "acme-rs"), func(e *env) signer { return signPS256(e.key("acme-rs").rsa) }),
			status: http.StatusUnauthorized, code: codeAlgNotAllowed,
		},
		attackCase{
			name:   "alg confusion/RS256 header on key with alg PS256",
			build:  reSign(header("RS256", "acme-ps"), func(e *env) signer { return signRS256(e.key("acme-ps").rsa) }),
			status: http.StatusUnauthorized, code: codeAlgNotAllowed,
		},
		attackCase{
			name:    "alg confusion/RS256 to partner allowing only ES256",
			partner: "beta",
			build: reSign(header("RS256", "beta-es"), func(e *env) signer {
				return signRS256(e.key("acme-rs").rsa)
			}),
			status: http.StatusUnauthorized, code: codeAlgNotAllowed,
		},
		attackCase{
			name:   "alg confusion/ES384",
			build:  reSign(header("ES384", "acme-es"), func(e *env) signer { return signES256(e.key("acme-es").ec) }),
			status: http.StatusUnauthorized, code: codeAlgNotAllowed,
		},
		attackCase{
			name:   "alg confusion/EdDSA",
			build:  reSign(header("EdDSA", "acme-es"), func(e *env) signer { return signES256(e.key("acme-es").ec) }),
			status: http.StatusUnauthorized, code: codeAlgNotAllowed,
		},
	)
	return cs
}

// keysNamedByToken are keys named by the token (RFC 8725 §3.10): never used, never fetched.
func keysNamedByToken() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	add(
		attackCase{
			name: "embedded key/jwk header with attacker key",
			build: withToken(func(t *testing.T, e *env) string {
				h := header("RS256", "acme-rs")
				h["jwk"] = e.attackerJWK(t)
				return compact(t, mustJSON(t, h), e.validClaims(t, "acme"), signRS256(e.attacker.rsa))
			}),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
		},
		attackCase{
			name: "embedded key/jwk header with attacker key and attacker kid",
			build: withToken(func(t *testing.T, e *env) string {
				h := header("RS256", "attacker")
				h["jwk"] = e.attackerJWK(t)
				return compact(t, mustJSON(t, h), e.validClaims(t, "acme"), signRS256(e.attacker.rsa))
			}),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
		},
		attackCase{
			name: "key url/jku at a test server",
			build: withToken(func(t *testing.T, e *env) string {
				h := header("RS256", "attacker")
				h["jku"] = e.keyServer.URL + "/jwks.json"
				return compact(t, mustJSON(t, h), e.validClaims(t, "acme"), signRS256(e.attacker.rsa))
			}),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
			check: keyServerUntouched,
		},
		attackCase{
			name: "key url/jku with the partner's own kid and signature",
			build: withToken(func(t *testing.T, e *env) string {
				h := header("RS256", "acme-rs")
				h["jku"] = e.keyServer.URL + "/jwks.json"
				return compact(t, mustJSON(t, h), e.validClaims(t, "acme"), e.key("acme-rs").sign)
			}),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
			check: keyServerUntouched,
		},
		attackCase{
			name: "key url/x5u at a test server",
			build: withToken(func(t *testing.T, e *env) string {
				h := header("RS256", "attacker")
				h["x5u"] = e.keyServer.URL + "/cert.pem"
				return compact(t, mustJSON(t, h), e.validClaims(t, "acme"), signRS256(e.attacker.rsa))
			}),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
			check: keyServerUntouched,
		},
		// x5c, x5t and x5t#S256 are hints that .NET and Java libraries send: accepted and
		// ignored, so a certificate in them never supplies the key (issue 12).
		attackCase{
			name: "key url/x5c self-signed chain",
			build: withToken(func(t *testing.T, e *env) string {
				h := header("RS256", "attacker")
				h["x5c"] = []string{base64.StdEncoding.EncodeToString(e.attackerCert)}
				return compact(t, mustJSON(t, h), e.validClaims(t, "acme"), signRS256(e.attacker.rsa))
			}),
			status: http.StatusUnauthorized, code: codeKeyUnknown,
		},
		attackCase{
			name: "key url/x5c chain of two",
			build: withToken(func(t *testing.T, e *env) string {
				h := header("RS256", "acme-rs")
				cert := base64.StdEncoding.EncodeToString(e.attackerCert)
				h["x5c"] = []string{cert, cert}
				h["x5t#S256"] = b64(digest(crypto.SHA256, e.attackerCert))
				return compact(t, mustJSON(t, h), e.validClaims(t, "acme"), signRS256(e.attacker.rsa))
			}),
			status: http.StatusUnauthorized, code: codeSignatureInvalid,
		},
		attackCase{
			name: "key url/x5c of another key beside the partner's signature accepted",
			build: withToken(func(t *testing.T, e *env) string {
				h := header("RS256", "acme-rs")
				h["x5c"] = []string{base64.StdEncoding.EncodeToString(e.attackerCert)}
				return compact(t, mustJSON(t, h), e.validClaims(t, "acme"), e.key("acme-rs").sign)
			}),
			status: statusAccepted,
		},
	)
	return cs
}

// kidValues are odd kid values: keys are looked up by kid in the partner's own set and nowhere else.
func kidValues() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	for _, kc := range []struct{ name, kid string }{
		{"path traversal", "../../etc/passwd"},
		{"absolute path", "/etc/passwd"},
		{"sql", "' OR '1'='1' --"},
		{"shell", "$(touch /tmp/pwned); `id` | cat"},
		{"nul byte", "acme-rs\x00"},
		{"markup", markupAttr},
		{"huge 10 KB", strings.Repeat("k", 10<<10)},
		{"another partner's kid", "beta-es"},
		{"same kid with other case", "ACME-RS"},
	} {
		kc := kc
		add(attackCase{
			name:   "kid/" + kc.name,
			build:  reSign(header("RS256", kc.kid), func(e *env) signer { return e.key("acme-rs").sign }),
			status: http.StatusUnauthorized, code: codeKeyUnknown,
		})
	}
	add(
		attackCase{
			name: "kid/url of a test server",
			build: withToken(func(t *testing.T, e *env) string {
				return compact(t, mustJSON(t, header("RS256", e.keyServer.URL+"/jwks.json")), e.validClaims(t, "acme"), e.key("acme-rs").sign)
			}),
			status: http.StatusUnauthorized, code: codeKeyUnknown,
			check: keyServerUntouched,
		},
		attackCase{
			name:     "kid/markup on payload page",
			endpoint: "payload",
			build:    reSign(header("RS256", markupScript), func(e *env) signer { return e.key("acme-rs").sign }),
			status:   http.StatusUnauthorized, code: codeKeyUnknown,
			check: htmlInert,
		},
		attackCase{
			name: "kid/missing",
			build: reSign(map[string]any{"typ": "JWT", "alg": "RS256"}, func(e *env) signer {
				return e.key("acme-rs").sign
			}),
			status: http.StatusBadRequest, code: codeKeyIDMissing,
		},
		attackCase{
			name: "kid/not a string",
			build: reSign(map[string]any{"typ": "JWT", "alg": "RS256", "kid": 7}, func(e *env) signer {
				return e.key("acme-rs").sign
			}),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
		},
	)
	return cs
}

// typ is the header's typ (docs/interface.md A-AUTH-5, RFC 8725 §3.11).
func typ() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	for _, typ := range []any{nil, "at+jwt", "JWS", "jwt+partner", 1} {
		typ := typ
		h := header("RS256", "acme-rs")
		if typ == nil {
			delete(h, "typ")
		} else {
			h["typ"] = typ
		}
		add(attackCase{
			name:   fmt.Sprintf("typ/%v", typ),
			build:  reSign(h, func(e *env) signer { return e.key("acme-rs").sign }),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
		})
	}
	return cs
}

// ecdsaSignatures are ECDSA signature values and encodings (CVE-2022-21449 class, RFC 7518 §3.4).
func ecdsaSignatures() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	max256 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	for _, ec := range []struct {
		name  string
		shape func(r, s *big.Int) []byte
	}{
		{"r=s=0", func(r, s *big.Int) []byte { return make([]byte, 64) }},
		{"r=0", func(r, s *big.Int) []byte { return rawRS(new(big.Int), s) }},
		{"s=0", func(r, s *big.Int) []byte { return rawRS(r, new(big.Int)) }},
		{"r=n", func(r, s *big.Int) []byte { return rawRS(p256N, s) }},
		{"s=n", func(r, s *big.Int) []byte { return rawRS(r, p256N) }},
		{"r=s=n", func(r, s *big.Int) []byte { return rawRS(p256N, p256N) }},
		{"r=s=2^256-1", func(r, s *big.Int) []byte { return rawRS(max256, max256) }},
		{"63 bytes", func(r, s *big.Int) []byte { return rawRS(r, s)[1:] }},
		{"65 bytes", func(r, s *big.Int) []byte { return append([]byte{0}, rawRS(r, s)...) }},
		{"66 bytes", func(r, s *big.Int) []byte { return append([]byte{0, 0}, rawRS(r, s)...) }},
		{"128 bytes", func(r, s *big.Int) []byte {
			out := make([]byte, 128)
			r.FillBytes(out[:64])
			s.FillBytes(out[64:])
			return out
		}},
		{"DER", func(r, s *big.Int) []byte {
			der, _ := asn1.Marshal(struct{ R, S *big.Int }{r, s})
			return der
		}},
	} {
		ec := ec
		add(attackCase{
			name:   "ecdsa/" + ec.name,
			build:  reSign(header("ES256", "acme-es"), func(e *env) signer { return signESWith(e.key("acme-es").ec, ec.shape) }),
			status: http.StatusUnauthorized, code: codeSignatureInvalid,
		})
	}
	add(attackCase{
		name: "ecdsa/malleated s=n-s of a used token",
		build: func(t *testing.T, e *env) request {
			first := e.token(t, "acme-es", nil)
			e.mustAccept(t, first)
			parts := strings.Split(first, ".")
			sig, err := base64.RawURLEncoding.DecodeString(parts[2])
			if err != nil || len(sig) != 64 {
				t.Fatalf("decoding own signature: %v (%d bytes)", err, len(sig))
			}
			r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			malleated := rawRS(r, new(big.Int).Sub(p256N, s))
			return request{token: parts[0] + "." + parts[1] + "." + b64(malleated)}
		},
		status: http.StatusConflict, code: codeTokenReplayed,
	}, attackCase{
		name: "replay/same token twice",
		build: func(t *testing.T, e *env) request {
			first := e.token(t, "acme-rs", nil)
			e.mustAccept(t, first)
			return request{token: first}
		},
		status: http.StatusConflict, code: codeTokenReplayed,
	}, attackCase{
		name: "replay/same nonce new signature",
		build: func(t *testing.T, e *env) request {
			n := newNonce(t)
			e.mustAccept(t, e.token(t, "acme-rs", func(c map[string]any) { c["nonce"] = n }))
			return request{token: e.token(t, "acme-es", func(c map[string]any) { c["nonce"] = n })}
		},
		status: http.StatusConflict, code: codeTokenReplayed,
	}, attackCase{
		name: "replay/nonce not used up by a rejected token",
		build: func(t *testing.T, e *env) request {
			n := newNonce(t)
			res := e.send(t, attackCase{}, request{token: e.token(t, "acme-rs", func(c map[string]any) {
				c["nonce"] = n
				c["iss"] = "https://evil.example"
			})})
			if res.status != http.StatusUnauthorized {
				t.Fatalf("first, rejected use: status %d, want 401", res.status)
			}
			return request{token: e.token(t, "acme-rs", func(c map[string]any) { c["nonce"] = n })}
		},
		status: statusAccepted,
	}, attackCase{
		name: "replay/used on url, replayed on payload",
		build: func(t *testing.T, e *env) request {
			first := e.token(t, "acme-rs", nil)
			e.mustAccept(t, first)
			return request{token: first}
		},
		endpoint: "payload",
		status:   http.StatusConflict, code: codeTokenReplayed,
	})
	return cs
}

// rsaSignatureLength is the RSA signature's length (RFC 8017 §8.2.2: the signature is exactly k bytes).
func rsaSignatureLength() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	add(attackCase{
		name: "rsa/leading zero stripped",
		build: withToken(func(t *testing.T, e *env) string {
			tk, sig := e.rsaTokenWithLeadingZero(t)
			return tk + "." + b64(sig[1:])
		}),
		status: http.StatusUnauthorized, code: codeSignatureInvalid,
	}, attackCase{
		name: "rsa/leading zero added",
		build: withToken(func(t *testing.T, e *env) string {
			c := e.validClaims(t, "acme")
			input := b64(mustJSON(t, header("RS256", "acme-rs"))) + "." + b64(c)
			sig := e.key("acme-rs").sign(t, []byte(input))
			return input + "." + b64(append([]byte{0}, sig...))
		}),
		status: http.StatusUnauthorized, code: codeSignatureInvalid,
	}, attackCase{
		name: "rsa/signature of another key",
		build: reSign(header("RS256", "acme-rs"), func(e *env) signer {
			return signRS256(e.attacker.rsa)
		}),
		status: http.StatusUnauthorized, code: codeSignatureInvalid,
	}, attackCase{
		name: "rsa/claims changed after signing",
		build: withToken(func(t *testing.T, e *env) string {
			good := e.token(t, "acme-rs", nil)
			parts := strings.Split(good, ".")
			c := claimsFor(t, e.partners["acme"], time.Now())
			c["employeeId"] = "emp-admin"
			return parts[0] + "." + b64(mustJSON(t, c)) + "." + parts[2]
		}),
		status: http.StatusUnauthorized, code: codeSignatureInvalid,
	})
	return cs
}

// headerMembers are header members that change what is signed or how (RFC 7515 §4.1.11, RFC 7797,
// RFC 8725 §2.7, §3.11).
func headerMembers() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	critHdr := header("RS256", "acme-rs")
	critHdr["crit"] = []string{"exp"}
	critHdr["exp"] = 1
	critUnknown := header("RS256", "acme-rs")
	critUnknown["crit"] = []string{"urn:example:ignored"}
	critUnknown["urn:example:ignored"] = true
	b64Hdr := header("RS256", "acme-rs")
	b64Hdr["b64"] = false
	b64Hdr["crit"] = []string{"b64"}
	b64Only := header("RS256", "acme-rs")
	b64Only["b64"] = false
	ctyHdr := header("RS256", "acme-rs")
	ctyHdr["cty"] = "JWT"
	add(
		attackCase{name: "header/crit exp", build: reSign(critHdr, func(e *env) signer { return e.key("acme-rs").sign }), status: http.StatusBadRequest, code: codeHeaderInvalid},
		attackCase{name: "header/crit unknown extension", build: reSign(critUnknown, func(e *env) signer { return e.key("acme-rs").sign }), status: http.StatusBadRequest, code: codeHeaderInvalid},
		attackCase{name: "header/b64 false with crit", build: reSign(b64Hdr, func(e *env) signer { return e.key("acme-rs").sign }), status: http.StatusBadRequest, code: codeHeaderInvalid},
		attackCase{name: "header/b64 false without crit", build: reSign(b64Only, func(e *env) signer { return e.key("acme-rs").sign }), status: http.StatusBadRequest, code: codeHeaderInvalid},
		attackCase{
			name: "header/b64 false with unencoded payload",
			build: withToken(func(t *testing.T, e *env) string {
				claims := e.validClaims(t, "acme")
				hdr := b64(mustJSON(t, b64Hdr))
				// RFC 7797 §3: the signing input is header "." raw payload.
				sig := e.key("acme-rs").sign(t, []byte(hdr+"."+string(claims)))
				return hdr + "." + string(claims) + "." + b64(sig)
			}),
			status: http.StatusBadRequest, code: codeTokenMalformed,
		},
		attackCase{
			name: "nested/cty JWT wrapping a partner token",
			build: withToken(func(t *testing.T, e *env) string {
				inner := e.token(t, "acme-rs", nil)
				return compact(t, mustJSON(t, ctyHdr), []byte(inner), e.key("acme-rs").sign)
			}),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
		},
		attackCase{
			name:   "nested/cty JWT over plain claims",
			build:  reSign(ctyHdr, func(e *env) signer { return e.key("acme-rs").sign }),
			status: http.StatusBadRequest, code: codeHeaderInvalid,
		},
	)
	return cs
}

// serializations are serializations and framing (RFC 7515 §3, §7; RFC 8725 §3.1).
func serializations() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	add(
		attackCase{
			name: "framing/JWE compact 5 segments",
			build: withToken(func(t *testing.T, e *env) string {
				h := mustJSON(t, map[string]any{"alg": "RSA-OAEP", "enc": "A256GCM", "kid": "acme-rs", "typ": "JWT"})
				return b64(h) + "." + b64(make([]byte, 256)) + "." + b64(make([]byte, 12)) + "." + b64([]byte("ciphertext")) + "." + b64(make([]byte, 16))
			}),
			status: http.StatusBadRequest, code: codeTokenMalformed,
		},
		attackCase{
			name: "framing/JWS JSON flattened",
			build: withToken(func(t *testing.T, e *env) string {
				p := strings.Split(e.token(t, "acme-rs", nil), ".")
				return string(mustJSON(t, map[string]string{"protected": p[0], "payload": p[1], "signature": p[2]}))
			}),
			status: http.StatusBadRequest, code: codeTokenMalformed,
		},
		attackCase{
			name: "framing/JWS JSON general two signatures",
			build: withToken(func(t *testing.T, e *env) string {
				good := strings.Split(e.token(t, "acme-rs", nil), ".")
				evilHdr := b64(mustJSON(t, header("HS256", "acme-rs")))
				return string(mustJSON(t, map[string]any{
					"payload": good[1],
					"signatures": []map[string]string{
						{"protected": evilHdr, "signature": b64([]byte("forged"))},
						{"protected": good[0], "signature": good[2]},
					},
				}))
			}),
			status: http.StatusBadRequest, code: codeTokenMalformed,
		},
		attackCase{name: "framing/two segments", build: withToken(func(t *testing.T, e *env) string {
			p := strings.Split(e.token(t, "acme-rs", nil), ".")
			return p[0] + "." + p[1]
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/four segments", build: withToken(func(t *testing.T, e *env) string {
			return e.token(t, "acme-rs", nil) + ".e30"
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/trailing dot", build: withToken(func(t *testing.T, e *env) string {
			return e.token(t, "acme-rs", nil) + "."
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/double dot", build: withToken(func(t *testing.T, e *env) string {
			return strings.Replace(e.token(t, "acme-rs", nil), ".", "..", 1)
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/padding on payload", build: withToken(func(t *testing.T, e *env) string {
			p := strings.Split(e.token(t, "acme-rs", nil), ".")
			return p[0] + "." + p[1] + "==" + "." + p[2]
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/padding on signature", build: withToken(func(t *testing.T, e *env) string {
			// A 256-byte RSA signature is 342 base64url characters, 344 with padding.
			return e.token(t, "acme-rs", nil) + "=="
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/inner space", build: withToken(func(t *testing.T, e *env) string {
			tk := e.token(t, "acme-rs", nil)
			return tk[:40] + " " + tk[40:]
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/inner newline", build: withToken(func(t *testing.T, e *env) string {
			tk := e.token(t, "acme-rs", nil)
			i := strings.LastIndexByte(tk, '.') + 10
			return tk[:i] + "\r\n" + tk[i:]
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/standard base64 alphabet", build: withToken(func(t *testing.T, e *env) string {
			return e.stdAlphabetToken(t)
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/header not JSON", build: withToken(func(t *testing.T, e *env) string {
			return compact(t, []byte("RS256"), e.validClaims(t, "acme"), e.key("acme-rs").sign)
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/header JSON array", build: withToken(func(t *testing.T, e *env) string {
			return compact(t, []byte(`[{"typ":"JWT","alg":"RS256","kid":"acme-rs"}]`), e.validClaims(t, "acme"), e.key("acme-rs").sign)
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "framing/surrounding whitespace tolerated", build: func(t *testing.T, e *env) request {
			return request{body: "\r\n  " + e.token(t, "acme-rs", nil) + " \n\t"}
		}, status: statusAccepted, urlOnly: true},
	)
	return cs
}

// jsonAmbiguity is JSON ambiguity (RFC 7515 §4, RFC 7519 §4, RFC 8259 §4 and §8.1).
func jsonAmbiguity() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	add(
		attackCase{name: "json/duplicate alg in header", build: withToken(func(t *testing.T, e *env) string {
			h := []byte(`{"typ":"JWT","alg":"none","kid":"acme-rs","alg":"RS256"}`)
			return e.tokenRaw(t, "acme-rs", h, e.validClaims(t, "acme"))
		}), status: http.StatusBadRequest, code: codeHeaderInvalid},
		attackCase{name: "json/duplicate kid in header", build: withToken(func(t *testing.T, e *env) string {
			h := []byte(`{"typ":"JWT","alg":"RS256","kid":"attacker","kid":"acme-rs"}`)
			return e.tokenRaw(t, "acme-rs", h, e.validClaims(t, "acme"))
		}), status: http.StatusBadRequest, code: codeHeaderInvalid},
		attackCase{name: "json/duplicate iss in claims", build: withToken(func(t *testing.T, e *env) string {
			c := e.validClaims(t, "acme")
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(c, `"iss":"https://evil.example"`))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "json/duplicate employeeId in claims", build: withToken(func(t *testing.T, e *env) string {
			c := e.validClaims(t, "acme")
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(c, `"employeeId":"emp-admin"`))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "json/duplicate contact id nested", build: withToken(func(t *testing.T, e *env) string {
			c := string(e.validClaims(t, "acme"))
			c = strings.Replace(c, `"id":"c-5001"`, `"id":"c-5001","id":"c-9999"`, 1)
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), []byte(c))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "json/duplicate nonce differing by escape", build: withToken(func(t *testing.T, e *env) string {
			c := e.validClaims(t, "acme")
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(c, `"non\u0063e":"0123456789abcdef-other"`))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		// Case variants: this gateway's decoder matches names exactly, but Go's
		// encoding/json (which the app service uses on X-Partner-Claims) matches them
		// case-insensitively and with Unicode folding, last one winning: the gateway
		// and the app would see different identities.
		attackCase{name: "json/case variant duplicate EMPLOYEEID", build: withToken(func(t *testing.T, e *env) string {
			c := e.validClaims(t, "acme")
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(c, `"EMPLOYEEID":"emp-admin"`))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "json/case variant duplicate contact ID", build: withToken(func(t *testing.T, e *env) string {
			c := string(e.validClaims(t, "acme"))
			c = strings.Replace(c, `"id":"c-5001"`, `"id":"c-5001","ID":"c-9999"`, 1)
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), []byte(c))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "json/unicode fold variant employeeUſername", build: withToken(func(t *testing.T, e *env) string {
			c := claimsFor(t, e.partners["acme"], time.Now())
			c["employeeUsername"] = "ada"
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(mustJSON(t, c), "\"employeeUſername\":\"admin\""))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		// A lone near name: the gateway would forward no employeeId header while a
		// case-insensitive parser of X-Partner-Claims reads one.
		attackCase{name: "json/case variant alone EmployeeId", build: withToken(func(t *testing.T, e *env) string {
			c := strings.Replace(string(e.validClaims(t, "acme")), `"employeeId":`, `"EmployeeId":`, 1)
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), []byte(c))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "json/delimiter variant alone employee_id", build: withToken(func(t *testing.T, e *env) string {
			c := strings.Replace(string(e.validClaims(t, "acme")), `"employeeId":`, `"employee_id":`, 1)
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), []byte(c))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "json/claims not an object", build: withToken(func(t *testing.T, e *env) string {
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), []byte(`["iss"]`))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "json/trailing data after claims", build: withToken(func(t *testing.T, e *env) string {
			c := e.validClaims(t, "acme")
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), append(c, []byte(`{"iss":"x"}`)...))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
	)
	return cs
}

// claimTypes are claims of the wrong JSON type, out of range, deep or not UTF-8 (RFC 7519 §4.1).
func claimTypes() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	typed := func(name, member, repl string, code string) attackCase {
		status := http.StatusBadRequest
		return attackCase{name: "claim type/" + name, build: withToken(func(t *testing.T, e *env) string {
			c := claimsFor(t, e.partners["acme"], time.Now())
			raw := mustJSON(t, c)
			if strings.Contains(member, ".") { // contact.x
				sub := strings.SplitN(member, ".", 2)[1]
				raw = replaceJSONMember(t, raw, sub, c["contact"].(map[string]any)[sub], repl)
			} else {
				raw = replaceJSONMember(t, raw, member, c[member], repl)
			}
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), raw)
		}), status: status, code: code}
	}
	add(
		typed("exp as string", "exp", `"9999999999"`, codeClaimsInvalid),
		typed("nbf as string", "nbf", `"1"`, codeClaimsInvalid),
		typed("exp as bool", "exp", `true`, codeClaimsInvalid),
		typed("exp null", "exp", `null`, codeClaimsInvalid),
		typed("exp 1e309", "exp", `1e309`, codeClaimsInvalid),
		typed("exp 2^64", "exp", `18446744073709551616`, codeClaimsInvalid),
		typed("exp -2^63", "exp", `-9223372036854775808`, codeClaimsInvalid),
		typed("nbf 1e309", "nbf", `1e309`, codeClaimsInvalid),
		typed("exp fractional", "exp", `9999999999.5`, codeClaimsInvalid),
		typed("exp with exponent", "exp", `1.7e9`, codeClaimsInvalid),
		typed("nbf negative", "nbf", `-1`, codeClaimsInvalid),
		typed("iss as array", "iss", `["https://acme.example"]`, codeClaimsInvalid),
		typed("aud as number", "aud", `7`, codeClaimsInvalid),
		typed("aud as object", "aud", `{"aud":"svc-link"}`, codeClaimsInvalid),
		typed("aud array with number", "aud", `["svc-link",7]`, codeClaimsInvalid),
		typed("nonce as object", "nonce", `{"n":"0123456789abcdefghij"}`, codeNonceInvalid),
		typed("nonce as number", "nonce", `12345678901234567890`, codeNonceInvalid),
		typed("contact as string", "contact", `"c-5001"`, codePayloadInvalid),
		typed("contact as array", "contact", `[{"id":"c-5001","firstname":"Grace","lastname":"Hopper"}]`, codePayloadInvalid),
		typed("employeeId as number", "employeeId", `1001`, codePayloadInvalid),
		typed("contact firstname invalid UTF-8", "contact.firstname", "\"Gr\xffce\"", codeClaimsInvalid),
		typed("employeeFirstname lone surrogate escape", "employeeFirstname", `"Ada\ud800"`, codeClaimsInvalid),
	)
	deep := func(levels int) string { return strings.Repeat("[", levels) + strings.Repeat("]", levels) }
	add(
		attackCase{name: "claim type/10k nested arrays in extra claim", build: withToken(func(t *testing.T, e *env) string {
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(e.validClaims(t, "acme"), `"x":`+deep(10000)))
		}), status: http.StatusRequestEntityTooLarge, code: codeBodyTooLarge},
		attackCase{name: "claim type/5k nested arrays in extra claim", build: withToken(func(t *testing.T, e *env) string {
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(e.validClaims(t, "acme"), `"x":`+deep(5000)))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		// linkspec.MaxClaimsDepth is 16, the claim set itself being level 1.
		attackCase{name: "claim type/depth 16 accepted", build: withToken(func(t *testing.T, e *env) string {
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(e.validClaims(t, "acme"), `"x":`+deep(15)))
		}), status: statusAccepted},
		attackCase{name: "claim type/depth 17", build: withToken(func(t *testing.T, e *env) string {
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(e.validClaims(t, "acme"), `"x":`+deep(16)))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "claim type/depth hidden after escaped backslash", build: withToken(func(t *testing.T, e *env) string {
			// A scanner that reads \" as an escaped quote thinks the string goes on
			// and does not count the brackets that follow.
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(e.validClaims(t, "acme"), `"w":"\\","x":`+deep(40)+`,"z":"\""`))
		}), status: http.StatusBadRequest, code: codeClaimsInvalid},
		attackCase{name: "claim type/brackets inside strings accepted", build: withToken(func(t *testing.T, e *env) string {
			return e.tokenRaw(t, "acme-rs", mustJSON(t, header("RS256", "acme-rs")), appendMembers(e.validClaims(t, "acme"), `"x":"`+deep(40)+`\"{{{"`))
		}), status: statusAccepted},
		attackCase{name: "claim type/invalid UTF-8 in header kid", build: withToken(func(t *testing.T, e *env) string {
			return e.tokenRaw(t, "acme-rs", []byte("{\"typ\":\"JWT\",\"alg\":\"RS256\",\"kid\":\"acme-rs\xff\"}"), e.validClaims(t, "acme"))
		}), status: http.StatusBadRequest, code: codeTokenMalformed},
	)
	return cs
}

// registeredClaims are the registered claims and the lifetime rules (docs/interface.md A-AUTH-6..10, leeway 30 s).
func registeredClaims() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	at := func(nbf, exp int64, iat any) func(c map[string]any) {
		return func(c map[string]any) {
			now := time.Now().Unix()
			c["nbf"], c["exp"] = now+nbf, now+exp
			if iat == nil {
				delete(c, "iat")
			} else {
				c["iat"] = now + iat.(int64)
			}
		}
	}
	claimCase := func(name string, mod func(c map[string]any), status int, code string) attackCase {
		return attackCase{name: name, build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", mod) }), status: status, code: code}
	}
	add(
		claimCase("lifetime/exp-nbf 300s accepted", at(-10, 290, int64(-10)), statusAccepted, ""),
		claimCase("lifetime/exp-nbf 301s", at(-10, 291, int64(-10)), http.StatusBadRequest, codeLifetimeTooLong),
		claimCase("lifetime/exp-nbf 1 day", at(-10, 86400, int64(-10)), http.StatusBadRequest, codeLifetimeTooLong),
		// 1e10 s is a negative time.Duration once multiplied into nanoseconds.
		claimCase("lifetime/exp-nbf 1e10 s (duration overflow)", at(-10, 1e10, int64(-10)), http.StatusBadRequest, codeLifetimeTooLong),
		claimCase("lifetime/exp before nbf", at(-10, -20, int64(-10)), http.StatusBadRequest, codeClaimsInvalid),
		claimCase("lifetime/no iat accepted", at(-10, 200, nil), statusAccepted, ""),
		claimCase("lifetime/iat 1s before nbf", at(-10, 200, int64(-11)), http.StatusBadRequest, codeClaimsInvalid),
		claimCase("lifetime/iat after nbf", at(-10, 200, int64(-5)), http.StatusBadRequest, codeClaimsInvalid),
		claimCase("lifetime/nbf missing", func(c map[string]any) { delete(c, "nbf"); delete(c, "iat") }, http.StatusBadRequest, codeClaimsInvalid),
		claimCase("lifetime/exp missing", func(c map[string]any) { delete(c, "exp") }, http.StatusBadRequest, codeClaimsInvalid),
		claimCase("lifetime/nbf in future within leeway accepted", at(15, 250, int64(15)), statusAccepted, ""),
		claimCase("lifetime/nbf in future beyond leeway", at(60, 300, int64(60)), http.StatusUnauthorized, codeNotYetValid),
		claimCase("lifetime/expired within leeway accepted", at(-250, -5, int64(-250)), statusAccepted, ""),
		claimCase("lifetime/expired 1s beyond leeway", at(-260, -31, int64(-260)), http.StatusUnauthorized, codeExpired),
		claimCase("claims/iss other", func(c map[string]any) { c["iss"] = "https://beta.example" }, http.StatusUnauthorized, codeIssuerInvalid),
		claimCase("claims/iss prefix", func(c map[string]any) { c["iss"] = "https://acme.example.evil" }, http.StatusUnauthorized, codeIssuerInvalid),
		claimCase("claims/iss case", func(c map[string]any) { c["iss"] = "https://ACME.example" }, http.StatusUnauthorized, codeIssuerInvalid),
		claimCase("claims/iss missing", func(c map[string]any) { delete(c, "iss") }, http.StatusUnauthorized, codeIssuerInvalid),
		claimCase("claims/iss with NUL", func(c map[string]any) { c["iss"] = "https://acme.example\x00" }, http.StatusUnauthorized, codeIssuerInvalid),
		claimCase("claims/aud empty array", func(c map[string]any) { c["aud"] = []string{} }, http.StatusUnauthorized, codeAudienceInvalid),
		claimCase("claims/aud other", func(c map[string]any) { c["aud"] = "other-service" }, http.StatusUnauthorized, codeAudienceInvalid),
		claimCase("claims/aud missing", func(c map[string]any) { delete(c, "aud") }, http.StatusUnauthorized, codeAudienceInvalid),
		claimCase("claims/aud array without ours", func(c map[string]any) { c["aud"] = []string{"a", "b"} }, http.StatusUnauthorized, codeAudienceInvalid),
		claimCase("claims/aud array with ours accepted", func(c map[string]any) { c["aud"] = []string{"other", "svc-link"} }, statusAccepted, ""),
		claimCase("claims/nonce missing", func(c map[string]any) { delete(c, "nonce") }, http.StatusBadRequest, codeNonceMissing),
		claimCase("claims/nonce too short", func(c map[string]any) { c["nonce"] = "short" }, http.StatusBadRequest, codeNonceInvalid),
		claimCase("claims/nonce too long", func(c map[string]any) { c["nonce"] = strings.Repeat("n", 257) }, http.StatusBadRequest, codeNonceInvalid),
		claimCase("claims/nonce empty", func(c map[string]any) { c["nonce"] = "" }, http.StatusBadRequest, codeNonceMissing),
		claimCase("claims/nonce with space", func(c map[string]any) { c["nonce"] = "0123456789 abcdef" }, http.StatusBadRequest, codeNonceInvalid),
		claimCase("payload/required field missing", func(c map[string]any) { delete(c, "organizationId") }, http.StatusBadRequest, codePayloadInvalid),
		claimCase("payload/CRLF header injection in name", func(c map[string]any) {
			c["employeeFirstname"] = "Ada\r\nX-Partner-Employee-Id: emp-admin"
		}, http.StatusBadRequest, codePayloadInvalid),
		claimCase("payload/name over length bound", func(c map[string]any) { c["employeeLastname"] = strings.Repeat("L", 201) }, http.StatusBadRequest, codePayloadInvalid),
	)
	return cs
}

// partnerIsolation: one partner's token is never another's.
func partnerIsolation() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	add(
		attackCase{
			name:    "partner/acme token on beta path",
			partner: "beta",
			build:   withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-es", nil) }),
			status:  http.StatusUnauthorized, code: codeKeyUnknown,
		},
		attackCase{
			name:    "partner/acme token with kid shared by beta",
			partner: "beta",
			build:   withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-shared", nil) }),
			status:  http.StatusUnauthorized, code: codeSignatureInvalid,
		},
		attackCase{
			name:    "partner/beta key with acme issuer on beta path",
			partner: "beta",
			build: withToken(func(t *testing.T, e *env) string {
				return e.token(t, "beta-es", func(c map[string]any) { c["iss"] = e.partners["acme"].issuer })
			}),
			status: http.StatusUnauthorized, code: codeIssuerInvalid,
		},
		attackCase{
			name:    "partner/same nonce for two partners accepted",
			partner: "beta",
			build: func(t *testing.T, e *env) request {
				n := newNonce(t)
				e.mustAccept(t, e.token(t, "acme-rs", func(c map[string]any) { c["nonce"] = n }))
				return request{token: e.token(t, "beta-es", func(c map[string]any) { c["nonce"] = n })}
			},
			status: statusAccepted,
		},
		attackCase{
			name:   "partner/unknown partner",
			path:   "/partner/nobody/url",
			build:  withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }),
			status: http.StatusNotFound, code: codePartnerUnknown,
		},
		attackCase{
			name:   "partner/markup partner name",
			path:   "/partner/%3Cscript%3Ealert(1)%3Cimg%20src=x%20onerror=alert(1)%3E/payload",
			build:  withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }),
			status: http.StatusNotFound, code: codePartnerUnknown,
			check: htmlInert,
		},
	)
	return cs
}

// reflection: markup in every claim that can be reflected arrives percent-encoded and
// every page the gateway writes stays inert.
func reflection() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	xss := func(c map[string]any) {
		for _, k := range []string{"employeeId", "employeeFirstname", "employeeLastname", "employeeUsername", "organizationName", "organizationId", "caseId"} {
			c[k] = markupScript + markupAttr
		}
		ct := c["contact"].(map[string]any)
		for _, k := range []string{"id", "firstname", "lastname", "middlename", "gender", "diagnosis"} {
			ct[k] = markupAttr + markupScript
		}
		// Already percent-encoded text must come out as sent: decoded once, not twice.
		c["caseId"] = percentLiteral
	}
	add(
		attackCase{name: "xss/markup names url", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", xss) }), status: statusAccepted, check: upstreamEncoded},
		attackCase{name: "xss/markup names payload", endpoint: "payload", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-es", xss) }), status: statusAccepted, check: upstreamEncoded},
		attackCase{
			name: "xss/markup in invalid field on payload page", endpoint: "payload",
			build: withToken(func(t *testing.T, e *env) string {
				return e.token(t, "acme-rs", func(c map[string]any) {
					xss(c)
					// a required field: a malformed optional one would be dropped, not refused
					c["contact"].(map[string]any)["firstname"] = markupScript + "\a"
				})
			}),
			status: http.StatusBadRequest, code: codePayloadInvalid, check: htmlInert,
		},
		attackCase{
			name: "xss/markup in invalid field on url problem",
			build: withToken(func(t *testing.T, e *env) string {
				return e.token(t, "acme-rs", func(c map[string]any) {
					xss(c)
					// a required field: a malformed optional one would be dropped, not refused
					c["contact"].(map[string]any)["firstname"] = markupAttr + "\a"
				})
			}),
			status: http.StatusBadRequest, code: codePayloadInvalid, check: noRawMarkup,
		},
		attackCase{
			name: "xss/markup issuer on payload page", endpoint: "payload",
			build: withToken(func(t *testing.T, e *env) string {
				return e.token(t, "acme-rs", func(c map[string]any) { c["iss"] = markupScript })
			}),
			status: http.StatusUnauthorized, code: codeIssuerInvalid, check: htmlInert,
		},
		attackCase{
			name: "headers/spoofed X-Partner headers stripped",
			build: func(t *testing.T, e *env) request {
				h := http.Header{}
				h.Set("X-Partner-Contact-Ssn", "spoofed")
				h.Set("X-Partner-Name", "spoofed")
				h["X-Partner_Employee-Id"] = []string{"spoofed"}
				h.Set("x-partner-assertion", "spoofed")
				h.Set("X-Partner-Claims", "spoofed")
				h.Set("X-PARTNER-KIND", "spoofed")
				return request{token: e.token(t, "acme-rs", nil), header: h}
			},
			status: statusAccepted, check: noSpoofedHeaders,
		},
		attackCase{
			// A client that lists headers in Connection asks every proxy on the way
			// to drop them as hop-by-hop (RFC 9110 §7.6.1): reverse_proxy would then
			// delete the identity headers the gateway set, after the gateway set them.
			name: "headers/Connection names the gateway's headers",
			build: func(t *testing.T, e *env) request {
				h := http.Header{}
				h.Set("Connection", "keep-alive, X-Partner-Assertion, X-Partner-Name, X-Partner-Kind, X-Partner-Employee-Id, X-Partner-Claims, x-partner-contact-id")
				return request{token: e.token(t, "acme-rs", nil), header: h}
			},
			status: statusAccepted, check: gatewayHeadersPresent,
		},
		attackCase{
			name: "headers/Connection over several lines with odd spacing",
			build: func(t *testing.T, e *env) request {
				h := http.Header{}
				h["Connection"] = []string{"keep-alive ,  X-PARTNER-ASSERTION", "\tx-partner-name\t,X-Partner-Kind ,, X-Partner-Employee-Id", "X-Partner-Claims,X-Partner-Contact-Id,X-Partner-Endpoint,X-Partner-Issuer,X-Partner-Key-Id"}
				return request{token: e.token(t, "acme-rs", nil), header: h}
			},
			status: statusAccepted, check: gatewayHeadersPresent,
		},
	)
	return cs
}

// theRequest is the request itself: size, form, content type, method.
func theRequest() []attackCase {
	var cs []attackCase
	add := func(c ...attackCase) { cs = append(cs, c...) }
	add(
		attackCase{name: "body/16 KiB exactly with whitespace accepted", build: func(t *testing.T, e *env) request {
			tk := e.token(t, "acme-rs", nil)
			return request{body: tk + strings.Repeat(" ", maxBodySize-len(tk))}
		}, status: statusAccepted},
		attackCase{name: "body/16 KiB + 1", build: func(t *testing.T, e *env) request {
			tk := e.token(t, "acme-rs", nil)
			return request{body: tk + strings.Repeat(" ", maxBodySize+1-len(tk))}
		}, status: http.StatusRequestEntityTooLarge, code: codeBodyTooLarge},
		attackCase{name: "body/1 MiB", build: func(t *testing.T, e *env) request {
			return request{body: strings.Repeat("a", 1<<20)}
		}, status: http.StatusRequestEntityTooLarge, code: codeBodyTooLarge},
		attackCase{name: "body/chunked 16 KiB + 1", build: func(t *testing.T, e *env) request {
			tk := e.token(t, "acme-rs", nil)
			return request{body: tk + strings.Repeat(" ", maxBodySize+1-len(tk)), chunked: true}
		}, status: http.StatusRequestEntityTooLarge, code: codeBodyTooLarge},
		attackCase{name: "body/chunked accepted", build: func(t *testing.T, e *env) request {
			return request{token: e.token(t, "acme-rs", nil), chunked: true}
		}, status: statusAccepted},
		attackCase{name: "body/gzip content encoding", build: func(t *testing.T, e *env) request {
			h := http.Header{}
			h.Set("Content-Encoding", "gzip")
			return request{body: gzipString(t, e.token(t, "acme-rs", nil)), header: h}
		}, status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "body/empty", build: func(*testing.T, *env) request { return request{body: ""} }, status: http.StatusBadRequest, code: codeTokenMissing},
		attackCase{name: "body/whitespace only", build: func(*testing.T, *env) request { return request{body: " \r\n"} }, status: http.StatusBadRequest, code: codeTokenMissing},
		attackCase{name: "form/two payload fields", endpoint: "payload", build: func(t *testing.T, e *env) request {
			a, b := e.token(t, "acme-rs", nil), e.token(t, "acme-rs", func(c map[string]any) { c["employeeId"] = "emp-admin" })
			return request{body: "payload=" + url.QueryEscape(a) + "&payload=" + url.QueryEscape(b)}
		}, status: http.StatusBadRequest, code: codeTokenDuplicated},
		attackCase{name: "form/payload in query instead of body", endpoint: "payload", build: func(t *testing.T, e *env) request {
			return request{rawQuery: "payload=" + url.QueryEscape(e.token(t, "acme-rs", nil)), body: ""}
		}, status: http.StatusBadRequest, code: codeTokenInQuery},
		attackCase{name: "form/payload in query and body", endpoint: "payload", build: func(t *testing.T, e *env) request {
			return request{rawQuery: "payload=" + url.QueryEscape(e.token(t, "acme-rs", nil)), token: e.token(t, "acme-rs", nil)}
		}, status: http.StatusBadRequest, code: codeTokenInQuery},
		attackCase{
			// The token must never travel past the gateway (docs/architecture.md, step 5): a
			// copy in the URL of /url would reach the upstream and its access log.
			name: "form/payload in query on url endpoint",
			build: func(t *testing.T, e *env) request {
				tk := e.token(t, "acme-rs", nil)
				return request{rawQuery: "payload=" + url.QueryEscape(tk), token: tk}
			},
			status: http.StatusBadRequest, code: codeTokenInQuery,
		},
		attackCase{name: "form/token field in query on url endpoint", build: func(t *testing.T, e *env) request {
			tk := e.token(t, "acme-rs", nil)
			return request{rawQuery: "token=" + url.QueryEscape(tk), token: tk}
		}, status: http.StatusBadRequest, code: codeTokenInQuery},
		attackCase{
			// Go's url.ParseQuery drops every pair that holds a ';', so a check through
			// URL.Query() would not see this token; other stacks split on ';'.
			name: "form/payload after semicolon in query", endpoint: "payload",
			build: func(t *testing.T, e *env) request {
				tk := e.token(t, "acme-rs", nil)
				return request{rawQuery: "a;payload=" + url.QueryEscape(tk), token: tk}
			},
			status: http.StatusBadRequest, code: codeTokenInQuery,
		},
		attackCase{name: "form/upper-case PAYLOAD in query", endpoint: "payload", build: func(t *testing.T, e *env) request {
			tk := e.token(t, "acme-rs", nil)
			return request{rawQuery: "PAYLOAD=" + url.QueryEscape(tk), token: tk}
		}, status: http.StatusBadRequest, code: codeTokenInQuery},
		attackCase{name: "form/percent-encoded token name in query", build: func(t *testing.T, e *env) request {
			tk := e.token(t, "acme-rs", nil)
			return request{rawQuery: "utm=1&%54oken=" + url.QueryEscape(tk), token: tk}
		}, status: http.StatusBadRequest, code: codeTokenInQuery},
		attackCase{name: "form/other query not forwarded", build: func(t *testing.T, e *env) request {
			return request{rawQuery: "employeeId=emp-admin&kind=go", token: e.token(t, "acme-rs", nil)}
		}, status: statusAccepted},
		attackCase{name: "form/field name variants", endpoint: "payload", build: func(t *testing.T, e *env) request {
			q := url.QueryEscape(e.token(t, "acme-rs", nil))
			return request{body: "Payload=" + q + "&payload%5B%5D=" + q + "&payload+=" + q + "&PAYLOAD=" + q}
		}, status: http.StatusBadRequest, code: codeTokenMissing},
		attackCase{name: "form/semicolon separator", endpoint: "payload", build: func(t *testing.T, e *env) request {
			q := url.QueryEscape(e.token(t, "acme-rs", nil))
			return request{body: "payload=" + q + ";payload=" + q}
		}, status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "body/byte order mark before token", build: func(t *testing.T, e *env) request {
			return request{body: "\ufeff" + e.token(t, "acme-rs", nil)}
		}, status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "body/NUL after token", build: func(t *testing.T, e *env) request {
			return request{body: e.token(t, "acme-rs", nil) + "\x00"}
		}, status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "body/two tokens on two lines", build: func(t *testing.T, e *env) request {
			return request{body: e.token(t, "acme-rs", nil) + "\n" + e.token(t, "acme-rs", nil)}
		}, status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "form/no payload field", endpoint: "payload", build: func(*testing.T, *env) request {
			return request{body: "token=abc"}
		}, status: http.StatusBadRequest, code: codeTokenMissing},
		attackCase{name: "form/malformed encoding", endpoint: "payload", build: func(*testing.T, *env) request {
			return request{body: "payload=%zz"}
		}, status: http.StatusBadRequest, code: codeTokenMalformed},
		attackCase{name: "content type/application/json on url", build: func(t *testing.T, e *env) request {
			return request{contentType: "application/json", body: `{"token":"` + e.token(t, "acme-rs", nil) + `"}`}
		}, status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia},
		attackCase{name: "content type/none on url", build: func(t *testing.T, e *env) request {
			return request{contentType: "-", token: e.token(t, "acme-rs", nil)}
		}, status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia},
		attackCase{name: "content type/text plain with boundary", build: func(t *testing.T, e *env) request {
			return request{contentType: "text/plain; boundary=x", token: e.token(t, "acme-rs", nil)}
		}, status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia},
		attackCase{name: "content type/text plain charset accepted", build: func(t *testing.T, e *env) request {
			return request{contentType: "text/plain; charset=utf-8", token: e.token(t, "acme-rs", nil)}
		}, status: statusAccepted},
		attackCase{name: "content type/form on url", build: func(t *testing.T, e *env) request {
			return request{contentType: "application/x-www-form-urlencoded", body: "payload=" + url.QueryEscape(e.token(t, "acme-rs", nil))}
		}, status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia},
		attackCase{name: "content type/multipart on payload", endpoint: "payload", build: func(t *testing.T, e *env) request {
			body := "--xx\r\nContent-Disposition: form-data; name=\"payload\"\r\n\r\n" + e.token(t, "acme-rs", nil) + "\r\n--xx--\r\n"
			return request{contentType: "multipart/form-data; boundary=xx", body: body}
		}, status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia},
		attackCase{name: "content type/application/json on payload", endpoint: "payload", build: func(t *testing.T, e *env) request {
			return request{contentType: "application/json", body: `{"payload":"` + e.token(t, "acme-rs", nil) + `"}`}
		}, status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia},
		attackCase{name: "content type/none on payload", endpoint: "payload", build: func(t *testing.T, e *env) request {
			return request{contentType: "-", body: "payload=" + url.QueryEscape(e.token(t, "acme-rs", nil))}
		}, status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia},
		attackCase{name: "content type/text plain on payload", endpoint: "payload", build: func(t *testing.T, e *env) request {
			return request{contentType: "text/plain", token: e.token(t, "acme-rs", nil)}
		}, status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia},
	)
	add(
		attackCase{name: "path/trailing slash", path: "/partner/acme/url/", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: http.StatusNotFound, code: codeNotFound},
		attackCase{name: "path/endpoint upper case", path: "/partner/acme/URL", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: http.StatusNotFound, code: codeNotFound},
		attackCase{name: "path/partner upper case", path: "/partner/ACME/url", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: http.StatusNotFound, code: codePartnerUnknown},
		attackCase{name: "path/encoded slash into another partner", path: "/partner/beta%2F..%2Facme/url", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: http.StatusNotFound, code: codeNotFound},
		// RFC 3986 §2.2: an encoded slash is data, not a delimiter. The upstream routes on
		// the escaped path, where this is one segment, so the gateway must not read three.
		attackCase{name: "path/encoded slashes as delimiters", path: "/partner%2Facme%2Furl", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: http.StatusNotFound, code: codeNotFound},
		attackCase{name: "path/encoded unreserved letters accepted", path: "/partner/%61cme/%75rl", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: statusAccepted},
		attackCase{name: "path/dot segments", path: "/partner/acme/./url", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: http.StatusNotFound, code: codeNotFound},
		attackCase{name: "path/upper-case prefix", path: "/PARTNER/acme/url", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: http.StatusNotFound, code: codeNotFound},
		attackCase{name: "path/other endpoint", path: "/partner/acme/admin", build: withToken(func(t *testing.T, e *env) string { return e.token(t, "acme-rs", nil) }), status: http.StatusNotFound, code: codeNotFound},
	)
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodOptions, http.MethodDelete, http.MethodPatch} {
		for _, ep := range []string{"url", "payload"} {
			m := m
			code := codeMethodNotAllowed
			if m == http.MethodHead {
				code = "" // an answer to HEAD has no body to carry the code
			}
			add(attackCase{
				name: "method/" + m + " " + ep, endpoint: ep,
				build: func(t *testing.T, e *env) request {
					return request{method: m, token: e.token(t, "acme-rs", nil)}
				},
				status: http.StatusMethodNotAllowed, code: code, bodyless: m == http.MethodHead,
				check: func(t *testing.T, _ *env, res *response) {
					if got := res.header.Get("Allow"); got != http.MethodPost {
						t.Errorf("Allow = %q, want %q", got, http.MethodPost)
					}
				},
			})
		}
	}
	return cs
}

// loginCSRF is issue 25's login CSRF through /payload: someone lifts their own unspent
// token from the partner's form and makes a victim's browser post it from another page,
// which signs the victim in as them. acme lists its pages (origins); a form from any other
// origin, as a browser names it in Origin, is refused before the token is read, and the
// token stays unspent; a form without Origin is no browser's and is refused too (issue
// 34). beta lists none, and /url is not a form: both are as before.
func loginCSRF() []attackCase {
	from := func(origins ...string) func(*testing.T, *env) request {
		return func(t *testing.T, e *env) request {
			return request{token: e.token(t, "acme-es", nil), header: http.Header{"Origin": origins}}
		}
	}
	refused := func(name string, origins ...string) attackCase {
		return attackCase{name: "login csrf/" + name, endpoint: "payload", build: from(origins...),
			status: http.StatusForbidden, code: codeOriginNotAllowed, check: htmlFramedBy(acmeFormOrigin + " http://localhost:8081")}
	}
	return []attackCase{
		refused("form from another site", "http://evil.example"),
		refused("form from a page without origin (null)", "null"),
		refused("listed host, http instead of https", "http://ehr.acme.example"),
		refused("listed host, another port", "https://ehr.acme.example:8443"),
		refused("listed host, a subdomain", "https://evil.ehr.acme.example"),
		refused("listed origin not as browsers write it", "HTTPS://EHR.ACME.EXAMPLE"),
		refused("a listed and a foreign Origin", acmeFormOrigin, "http://evil.example"),
		{name: "login csrf/form from the partner's page", endpoint: "payload", build: from(acmeFormOrigin), status: statusAccepted},
		refused("no Origin (no browser's form: a server turning a lifted token into a login page)"),
		{
			name: "login csrf/refused token still works from the partner's page", endpoint: "payload",
			build: func(t *testing.T, e *env) request {
				tok := e.token(t, "acme-es", nil)
				res := e.send(t, attackCase{endpoint: "payload"}, request{token: tok, header: http.Header{"Origin": {"http://evil.example"}}})
				if res.status != http.StatusForbidden {
					t.Fatalf("the form from another site: status %d, want 403", res.status)
				}
				return request{token: tok, header: http.Header{"Origin": {acmeFormOrigin}}}
			},
			status: statusAccepted,
		},
		{name: "login csrf/url is no form", build: from("http://evil.example"), status: statusAccepted},
		{
			name: "login csrf/partner without origins", partner: "beta", endpoint: "payload",
			build: func(t *testing.T, e *env) request {
				return request{token: e.token(t, "beta-es", nil), header: http.Header{"Origin": {"http://evil.example"}}}
			},
			status: statusAccepted,
		},
	}
}

// htmlFramedBy asserts an inert refusal page that only the pages of sources may frame.
func htmlFramedBy(sources string) func(*testing.T, *env, *response) {
	return func(t *testing.T, e *env, res *response) {
		t.Helper()
		htmlInert(t, e, res)
		if csp := res.header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "; frame-ancestors "+sources) {
			t.Errorf("Content-Security-Policy = %q, want frame-ancestors %s", csp, sources)
		}
	}
}

// payloadCategories are the catalogue's token-level categories: the same attacks sent to
// /payload must get the same status and code, on an HTML page that stays inert.
var payloadCategories = []string{
	"alg none/", "hmac confusion/", "alg confusion/", "embedded key/", "key url/", "kid/",
	"typ/", "ecdsa/", "rsa/", "header/", "nested/", "framing/", "json/", "claim type/",
	"lifetime/", "claims/", "payload/", "xss/",
}

// onPayloadPage repeats every token-level case of cs that posts a token to /url on /payload,
// as "payload page/<name>". Cases that send their own body, path or content type, or that
// use a token before the measured request (replays), stay on /url only.
func onPayloadPage(cs []attackCase) []attackCase {
	var out []attackCase
	for _, c := range cs {
		if c.endpoint != "" || c.path != "" || c.urlOnly || !hasAnyPrefix(c.name, payloadCategories) {
			continue
		}
		c := c
		build := c.build
		c.name = "payload page/" + c.name
		c.endpoint = "payload"
		c.build = func(t *testing.T, e *env) request {
			req := build(t, e)
			if req.token == "" || req.body != "" || req.contentType != "" || req.rawQuery != "" {
				t.Fatalf("case %q does not send a plain token: it cannot run on /payload", c.name)
			}
			return req
		}
		check := c.check
		c.check = func(t *testing.T, e *env, res *response) {
			t.Helper()
			if c.code != "" {
				htmlInert(t, e, res)
			}
			if check != nil {
				check(t, e, res)
			}
		}
		out = append(out, c)
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// response is what the gateway answered.
type response struct {
	status int
	header http.Header
	body   string
}

var htmlCodeRE = regexp.MustCompile(`Error code <code id="code">([a-z_]+)</code>`)

// problemCode extracts the code of a rejection: the code member of a problem+json body, or
// the code an HTML problem page names.
func problemCode(t *testing.T, res *response) string {
	t.Helper()
	ct := res.header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, problemJSONContentType):
		var p struct {
			Code   string `json:"code"`
			Status int    `json:"status"`
		}
		if err := json.Unmarshal([]byte(res.body), &p); err != nil {
			t.Errorf("problem body %q: %v", res.body, err)
			return ""
		}
		if p.Status != res.status {
			t.Errorf("problem status member = %d, want the HTTP status %d", p.Status, res.status)
		}
		return p.Code
	case strings.HasPrefix(ct, "text/html"):
		if m := htmlCodeRE.FindStringSubmatch(res.body); m != nil {
			return m[1]
		}
	}
	return ""
}

// keyServerUntouched asserts that no request reached the server a jku or x5u named.
func keyServerUntouched(t *testing.T, e *env, _ *response) {
	t.Helper()
	if n := e.keyServerHits.Load(); n != 0 {
		t.Errorf("the jku/x5u server received %d requests, want 0", n)
	}
}

// htmlInert asserts that an HTML problem page carries no markup from the input and a CSP
// that allows no script.
func htmlInert(t *testing.T, e *env, res *response) {
	t.Helper()
	if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type = %q, want text/html", ct)
	}
	if csp := res.header.Get("Content-Security-Policy"); !strings.Contains(csp, cspNone) || strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy = %q, want %q and no script-src", csp, cspNone)
	}
	if got := res.header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
	}
	noRawMarkup(t, e, res)
}

// noRawMarkup asserts that no markup from the input appears unescaped in the answer.
func noRawMarkup(t *testing.T, _ *env, res *response) {
	t.Helper()
	for _, bad := range []string{"<script", "<img", "onerror=", "</script"} {
		if strings.Contains(strings.ToLower(res.body), bad) {
			t.Errorf("answer body contains %q unescaped:\n%s", bad, res.body)
		}
	}
}

// upstreamEncoded asserts that every reflected field reached the upstream percent-encoded
// (no '<', '>' or '"' in any X-Partner header) and decodes to the original text.
func upstreamEncoded(t *testing.T, e *env, _ *response) {
	t.Helper()
	got := e.lastUpstreamHeader()
	if got == nil {
		t.Fatal("upstream received nothing")
	}
	for name, vals := range got {
		if !strings.HasPrefix(strings.ToLower(name), "x-partner-") {
			continue
		}
		for _, v := range vals {
			if strings.ContainsAny(v, "<>\"' ") {
				t.Errorf("upstream header %s = %q: not percent-encoded", name, v)
			}
		}
	}
	for _, f := range []struct{ header, want string }{
		{"X-Partner-Employee-Firstname", markupScript + markupAttr},
		{"X-Partner-Organization-Name", markupScript + markupAttr},
		{"X-Partner-Contact-Firstname", markupAttr + markupScript},
		{"X-Partner-Contact-Diagnosis", markupAttr + markupScript},
		{"X-Partner-Case-Id", percentLiteral},
	} {
		raw := got.Get(f.header)
		dec, err := linkspec.DecodeHeaderValue(raw)
		if err != nil || dec != f.want {
			t.Errorf("DecodeHeaderValue(%s: %q) = %q, %v; want %q", f.header, raw, dec, err, f.want)
		}
	}
}

// noSpoofedHeaders asserts that no client-supplied X-Partner header reached the upstream.
func noSpoofedHeaders(t *testing.T, e *env, _ *response) {
	t.Helper()
	got := e.lastUpstreamHeader()
	if got == nil {
		t.Fatal("upstream received nothing")
	}
	for name, vals := range got {
		n := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		if !strings.HasPrefix(n, "x-partner-") {
			continue
		}
		for _, v := range vals {
			if v == "spoofed" {
				t.Errorf("upstream received spoofed header %s: %q", name, v)
			}
		}
	}
	if got.Get("X-Partner-Contact-Ssn") != "" {
		t.Errorf("upstream received X-Partner-Contact-Ssn = %q for a token without ssn", got.Get("X-Partner-Contact-Ssn"))
	}
	if got.Get("X-Partner-Name") != "acme" {
		t.Errorf("upstream X-Partner-Name = %q, want %q", got.Get("X-Partner-Name"), "acme")
	}
}

// publicKeyForm returns the RSA public key of kid in the given form, the secrets an HMAC
// confusion attack tries.
func (e *env) publicKeyForm(form, kid string) []byte {
	k := e.keys[kid]
	pub := &k.rsa.PublicKey
	switch form {
	case "pkix pem":
		der, _ := x509.MarshalPKIXPublicKey(pub)
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	case "pkcs1 pem":
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(pub)})
	case "der":
		der, _ := x509.MarshalPKIXPublicKey(pub)
		return der
	case "jwk json":
		return k.jwkJSON
	case "jwks json":
		return e.jwksFiles[k.partner]
	}
	panic("unknown public key form " + form)
}

// rsaTokenWithLeadingZero returns the signing input of an acme-rs token whose RS256
// signature starts with a zero byte, and that signature; one in 256 signatures does.
func (e *env) rsaTokenWithLeadingZero(t *testing.T) (string, []byte) {
	t.Helper()
	hdr := b64(mustJSON(t, header("RS256", "acme-rs")))
	for i := 0; i < 5000; i++ {
		input := hdr + "." + b64(e.validClaims(t, "acme"))
		sig := e.key("acme-rs").sign(t, []byte(input))
		if sig[0] == 0 {
			return input, sig
		}
	}
	t.Fatal("no RS256 signature with a leading zero byte in 5000 tries")
	return "", nil
}

// stdAlphabetToken returns a valid acme-rs token written with the standard base64 alphabet
// ('+' and '/'): the same bytes, so a lenient decoder would accept it.
func (e *env) stdAlphabetToken(t *testing.T) string {
	t.Helper()
	for i := 0; i < 100; i++ {
		tk := e.token(t, "acme-rs", nil)
		if !strings.ContainsAny(tk, "-_") {
			continue
		}
		return strings.NewReplacer("-", "+", "_", "/").Replace(tk)
	}
	t.Fatal("no token with '-' or '_' in 100 tries")
	return ""
}

// TestCatalogue runs every attack against the real gateway.
func TestCatalogue(t *testing.T) {
	e := newEnv(t)
	var sum summary
	for _, c := range catalogue() {
		t.Run(c.name, func(t *testing.T) {
			req := c.build(t, e)
			before := len(e.upstream.Requests())
			res := e.send(t, c, req)
			delta := len(e.upstream.Requests()) - before

			rejected := c.code != "" || c.bodyless
			want := outcome(c.status, c.code)
			code := ""
			switch {
			case c.bodyless:
				want = outcome(c.status, "(no body)")
				if res.body == "" {
					code = "(no body)"
				}
			case rejected || res.status != http.StatusOK:
				code = problemCode(t, res)
			}
			got := outcome(res.status, code)
			untouched := "yes"
			if delta != 0 {
				untouched = fmt.Sprintf("no (%d)", delta)
			}
			defer func() { sum.add(row{name: c.name, want: want, got: got, untouched: untouched, failed: t.Failed()}) }()

			if got != want {
				t.Errorf("answer = %s, want %s; body:\n%s", got, want, clipBody(res.body))
			}
			switch {
			case rejected && delta != 0:
				t.Errorf("the upstream received %d requests for a rejected attack, want 0", delta)
			case !rejected && delta != 1:
				t.Errorf("the upstream received %d requests for an accepted token, want 1", delta)
			}
			if !rejected && delta == 1 {
				forwardedIntact(t, e, req)
			}
			if c.check != nil {
				c.check(t, e, res)
			}
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "attack catalogue: %d cases\n", len(sum.rows))
	sum.write(&b)
	t.Log(b.String())
	// go test shows t.Log only with -v or on failure: ./test.sh prints this file after the
	// tests, so the table is in its output either way.
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "integration", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "attack-catalogue.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// outcome renders a status and code for the table: "401 signature_invalid", "200 accepted".
func outcome(status int, code string) string {
	if code == "" && status == http.StatusOK {
		return "200 accepted"
	}
	if code == "" {
		code = "(no code)"
	}
	return fmt.Sprintf("%d %s", status, code)
}

func clipBody(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// forwardedIntact asserts what the app service relies on for every forwarded request: the
// token is gone (empty body, nowhere in the headers or query) and the assertion verifies
// over the forwarded values.
func forwardedIntact(t *testing.T, e *env, req request) {
	t.Helper()
	reqs := e.upstream.Requests()
	got := reqs[len(reqs)-1]
	if len(got.Body) != 0 {
		t.Errorf("the upstream received a body of %d bytes, want none (the token is not forwarded)", len(got.Body))
	}
	if got.RawQuery != "" {
		t.Errorf("the upstream received the query %q, want none", got.RawQuery)
	}
	tok := req.token
	if tok == "" {
		tok = strings.TrimSpace(req.body)
	}
	if parts := strings.Split(tok, "."); len(parts) == 3 {
		if got, want := got.Header.Get("X-Partner-"+linkspec.HeaderClaims), parts[1]; got != want {
			t.Errorf("X-Partner-Claims = %.40q…, want the token's payload segment exactly %.40q…", got, want)
		}
	}
	if i := strings.LastIndexByte(tok, '.'); i >= 0 && len(tok)-i > 20 {
		sig := tok[i+1:]
		if strings.Contains(got.RawQuery, sig) {
			t.Error("the token's signature reached the upstream in the query")
		}
		for name, vals := range got.Header {
			for _, v := range vals {
				if strings.Contains(v, sig) {
					t.Errorf("the token's signature reached the upstream in header %s", name)
				}
			}
		}
	}
	h := got.Header
	dec := func(name string) string {
		v, err := linkspec.DecodeHeaderValue(h.Get("X-Partner-" + name))
		if err != nil {
			t.Errorf("DecodeHeaderValue(X-Partner-%s: %q) = %v", name, h.Get("X-Partner-"+name), err)
		}
		return v
	}
	f := linkspec.Forwarded{
		Partner: dec(linkspec.HeaderName), Endpoint: dec(linkspec.HeaderEndpoint), Kind: dec(linkspec.HeaderKind),
		Issuer: dec(linkspec.HeaderIssuer), KeyID: dec(linkspec.HeaderKeyID), Claims: h.Get("X-Partner-" + linkspec.HeaderClaims),
		RequestID: dec(linkspec.HeaderRequestID),
	}
	if err := linkspec.VerifyAssertion([]byte(upstreamSecret), h.Get("X-Partner-"+linkspec.HeaderAssertion), time.Now(), f); err != nil {
		t.Errorf("VerifyAssertion(X-Partner-Assertion) = %v, want nil", err)
	}
}

// gatewayHeadersPresent asserts that the identity headers the gateway sets reached the
// upstream although the client named them in Connection.
func gatewayHeadersPresent(t *testing.T, e *env, _ *response) {
	t.Helper()
	got := e.lastUpstreamHeader()
	if got == nil {
		t.Fatal("upstream received nothing")
	}
	for _, name := range []string{"Assertion", "Name", "Kind", "Employee-Id", "Claims", "Contact-Id", "Endpoint", "Issuer", "Key-Id"} {
		if got.Get("X-Partner-"+name) == "" {
			t.Errorf("upstream lacks X-Partner-%s: a client's Connection header removed a header the gateway set", name)
		}
	}
}

// gzipString returns s gzip-compressed.
func gzipString(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
