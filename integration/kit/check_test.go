package kit

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
)

var (
	verdict   = regexp.MustCompile(`(?m)^verdict: (accepted.*|rejected: ([a-z_]+)(?:: (.*))?)$`)
	firstFail = regexp.MustCompile(`(?m)^FAIL .*$`)
)

// signHeaderText signs claims under the header text as it is (two members of one name,
// which no JSON encoder writes).
func signHeaderText(t *testing.T, k *harness.Key, header string, claims []byte) string {
	t.Helper()
	input := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString(claims)
	signer, err := jws.NewSigner(jwa.SignatureAlgorithm(k.Alg))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign([]byte(input), k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// checkVerdict runs `partnerlink check` and returns its exit status and code ("" for
// accepted).
func checkVerdict(t *testing.T, tok, jwks string, extra ...string) (int, string, string) {
	t.Helper()
	exit, code, _, report := checkAnswer(t, tok, jwks, extra...)
	return exit, code, report
}

// checkAnswer is checkVerdict with the verdict's detail, the gateway's detail as check
// predicts it.
func checkAnswer(t *testing.T, tok, jwks string, extra ...string) (exit int, code, detail, report string) {
	t.Helper()
	r := partnerlink(t, append([]string{"check", tok, "--jwks", jwks, "--iss", issuer, "--aud", audience}, extra...)...)
	m := verdict.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("check printed no verdict (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
	return r.code, m[2], m[3], r.stdout
}

// gatewayDetail returns the detail of a problem answer, "" for an accepted link.
func gatewayDetail(t *testing.T, r *harness.Response) string {
	t.Helper()
	if r.StatusCode == http.StatusOK {
		return ""
	}
	var p struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("decoding the problem %s: %v", r.Body, err)
	}
	return p.Detail
}

// goOnlyAudience is the audience of the Go-only partner.
const goOnlyAudience = audience + "-go"

// TestCheckAgreesWithGateway sends tokens broken in every way the gateway's verifier
// rejects to the real gateway and to `partnerlink check`, and compares verdicts, codes and
// details.
func TestCheckAgreesWithGateway(t *testing.T) {
	rsa := harness.NewKey(t, "RS256", "rsa-1")
	ps := harness.NewKey(t, "PS256", "ps-1")
	ec := harness.NewKey(t, "ES256", "ec-1")
	stranger := harness.NewKey(t, "ES256", "ec-1") // same kid, another key
	jwks := harness.WriteJWKS(t, t.TempDir(), rsa, ps, ec)
	c, _ := startGateway(t,
		partner("all", "jwks_file "+jwks),
		// Partners of one handler need an issuer and audience each (the gateway refuses a
		// shared pair, probe finding 7 of issue 13).
		harness.PartnerBlock("gonly", "jwks_file "+jwks, "issuer "+issuer, "audience "+goOnlyAudience, "kinds go"),
		harness.PartnerBlock("ecnly", "jwks_file "+jwks, "issuer "+issuer, "audience "+audience+"-ec", "algorithms ES256"),
	)
	statuses := guideStatuses(t)
	now := time.Now()
	valid := harness.Token{Issuer: issuer, Audience: audience}
	with := func(f func(*harness.Token)) harness.Token { tok := valid; f(&tok); return tok }
	payloadWithout := func(field string) map[string]any {
		p := testpayload.Main()
		delete(p, field)
		return p
	}

	tests := []struct {
		name    string
		partner string
		checkAs []string // the check flags that describe that partner
		tok     func() string
		want    string
	}{
		{"valid RS256", "all", nil, func() string { return rsa.Sign(t, valid) }, ""},
		{"valid PS256", "all", nil, func() string { return ps.Sign(t, valid) }, ""},
		{"valid ES256 Go link", "all", nil, func() string { return ec.Sign(t, with(func(k *harness.Token) { k.Payload = testpayload.Go() })) }, ""},
		{"aud array", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Audiences = []string{"x", audience} }))
		}, ""},
		{"not a JWS", "all", nil, func() string { return "not-a-token" }, "token_malformed"},
		{"four segments", "all", nil, func() string { return ec.Sign(t, valid) + ".x" }, "token_malformed"},
		{"typ JOSE", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"typ": "JOSE"} }))
		}, "header_invalid"},
		{"typ missing", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"typ": nil} }))
		}, "header_invalid"},
		{"jku in header", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"jku": "https://evil.example/jwks.json"} }))
		}, "header_invalid"},
		{"crit in header", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"crit": []string{"exp"}} }))
		}, "header_invalid"},
		{"alg HS256", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"alg": "HS256"}; k.SignAlg = "ES256" }))
		}, "algorithm_not_allowed"},
		{"alg none", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"alg": "none"}; k.SignAlg = "ES256" }))
		}, "algorithm_not_allowed"},
		{"typ at+jwt", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"typ": "at+jwt"} }))
		}, "header_invalid"},
		{"typ a number", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"typ": 1} }))
		}, "header_invalid"},
		{"kid a number", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"kid": 7} }))
		}, "header_invalid"},
		{"two alg members", "all", nil, func() string {
			claims, _ := json.Marshal(harness.ClaimsOf(valid))
			return signHeaderText(t, ec, `{"alg":"ES256","alg":"ES256","typ":"JWT","kid":"ec-1"}`, claims)
		}, "header_invalid"},
		{"alg not the partner's", "ecnly", []string{"--alg", "ES256"}, func() string { return rsa.Sign(t, valid) }, "algorithm_not_allowed"},
		{"RS256 with the PS256 key", "all", nil, func() string {
			return ps.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"alg": "RS256"}; k.SignAlg = "RS256" }))
		}, "algorithm_not_allowed"},
		{"kid missing", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"kid": nil} }))
		}, "key_id_missing"},
		{"kid unknown", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Header = map[string]any{"kid": "ec-2"} }))
		}, "key_unknown"},
		{"signed by another key", "all", nil, func() string { return stranger.Sign(t, valid) }, "signature_invalid"},
		{"signature corrupted", "all", nil, func() string { return rsa.Sign(t, with(func(k *harness.Token) { k.CorruptSignature = true })) }, "signature_invalid"},
		{"wrong iss", "all", nil, func() string { return ec.Sign(t, with(func(k *harness.Token) { k.Issuer = "https://evil.example" })) }, "issuer_invalid"},
		{"wrong aud", "all", nil, func() string { return ec.Sign(t, with(func(k *harness.Token) { k.Audience = "other" })) }, "audience_invalid"},
		{"exp missing", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"exp": nil} }))
		}, "claims_invalid"},
		{"nbf a string", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"nbf": "now"} }))
		}, "claims_invalid"},
		{"exp fractional", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"exp": float64(now.Unix()) + 60.5} }))
		}, "claims_invalid"},
		{"duplicate iss", "all", nil, func() string {
			claims, _ := json.Marshal(harness.ClaimsOf(valid))
			return ec.SignRaw(t, nil, append(claims[:len(claims)-1], `,"iss":"https://evil.example"}`...), "", false)
		}, "claims_invalid"},
		{"iat differs from nbf", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"iat": now.Unix() - 5} }))
		}, "claims_invalid"},
		{"lifetime 6 minutes", "all", nil, func() string { return ec.Sign(t, with(func(k *harness.Token) { k.Lifetime = 6 * time.Minute })) }, "lifetime_too_long"},
		{"exp in milliseconds", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"exp": now.Add(2 * time.Minute).UnixMilli()} }))
		}, "time_in_milliseconds"},
		{"nbf, iat and exp in milliseconds", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) {
				k.Claims = map[string]any{"nbf": now.UnixMilli(), "iat": now.UnixMilli(), "exp": now.Add(2 * time.Minute).UnixMilli()}
			}))
		}, "time_in_milliseconds"},
		{"exp from Date.now() / 1000, a fraction", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"exp": float64(now.UnixMilli()+120000) / 1000} }))
		}, "claims_invalid"},
		{"token wrapped in JSON", "all", nil, func() string { return `{"payload":"` + ec.Sign(t, valid) + `"}` }, "token_malformed"},
		{"expired", "all", nil, func() string { return ec.Sign(t, with(func(k *harness.Token) { k.Now = now.Add(-10 * time.Minute) })) }, "token_expired"},
		{"not yet valid", "all", nil, func() string { return ec.Sign(t, with(func(k *harness.Token) { k.Now = now.Add(10 * time.Minute) })) }, "token_not_yet_valid"},
		{"nonce missing", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"nonce": nil} }))
		}, "nonce_missing"},
		{"nonce short", "all", nil, func() string { return ec.Sign(t, with(func(k *harness.Token) { k.Nonce = "short" })) }, "nonce_invalid"},
		{"nonce with a space", "all", nil, func() string { return ec.Sign(t, with(func(k *harness.Token) { k.Nonce = "0123456789 abcdefghij" })) }, "nonce_invalid"},
		{"nonce a number", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"nonce": 1234567890123456789} }))
		}, "nonce_invalid"},
		{"payload field missing", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Payload = payloadWithout("organizationId") }))
		}, "payload_invalid"},
		{"payload field a number", "all", nil, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Claims = map[string]any{"employeeId": 1001} }))
		}, "payload_invalid"},
		{"main link to a Go-only partner", "gonly", []string{"--kind", "go", "--aud", goOnlyAudience}, func() string {
			return ec.Sign(t, with(func(k *harness.Token) { k.Audience = goOnlyAudience }))
		}, "kind_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.tok()
			exit, checkCode, checkDetail, report := checkAnswer(t, tok, jwks, tt.checkAs...)
			resp := c.PostURL(t, tt.partner, tok)
			gwCode := gatewayCode(t, resp)
			if gw := gatewayDetail(t, resp); gw != checkDetail {
				t.Errorf("check detail = %q, gateway detail = %q: they must agree", checkDetail, gw)
			}
			if gwCode != tt.want {
				t.Errorf("gateway code = %q, want %q", gwCode, tt.want)
			}
			if gwCode != "" && statuses[gwCode] != resp.StatusCode {
				t.Errorf("gateway answers %s with %d, the guide's table says %d", gwCode, resp.StatusCode, statuses[gwCode])
			}
			if checkCode != gwCode {
				t.Errorf("check code = %q, gateway code = %q: they must agree\n%s", checkCode, gwCode, report)
			}
			// The explanation points at the same rule: the first FAIL line carries the code.
			if first := firstFail.FindString(report); gwCode != "" && !strings.Contains(first, "["+gwCode+"]") {
				t.Errorf("the first FAIL line is %q, want one with [%s]:\n%s", first, gwCode, report)
			}
			if first := firstFail.FindString(report); gwCode == "time_in_milliseconds" &&
				!strings.HasPrefix(first, "FAIL nbf, exp and iat are seconds, not milliseconds: at most 10^11 (A-DEC-4) [time_in_milliseconds]: ") {
				t.Errorf("the first FAIL line is %q, want the rule A-DEC-4", first)
			}
			if wantExit := map[bool]int{true: 0, false: 1}[gwCode == ""]; exit != wantExit {
				t.Errorf("check exit status = %d, want %d", exit, wantExit)
			}
		})
	}

	// The replay check needs the gateway's nonce store: check says so and accepts, the
	// gateway refuses the second use.
	t.Run("replayed", func(t *testing.T) {
		tok := ec.Sign(t, valid)
		if resp := c.PostURL(t, "all", tok); resp.StatusCode != http.StatusOK {
			t.Fatalf("first use: %d %s", resp.StatusCode, resp.Body)
		}
		resp := c.PostURL(t, "all", tok)
		if got := gatewayCode(t, resp); got != "token_replayed" || resp.StatusCode != statuses[got] {
			t.Errorf("second use at the gateway = %d %q, want token_replayed with the guide's status %d", resp.StatusCode, got, statuses["token_replayed"])
		}
		exit, code, report := checkVerdict(t, tok, jwks)
		if exit != 0 || code != "" || !strings.Contains(report, "not checked offline") {
			t.Errorf("check on a used token = %d %q; want accepted with the offline caveat\n%s", exit, code, report)
		}
	})
}

// TestCheckPredictsKeySetRefusal: a key set the gateway refuses, given to `partnerlink
// check` as a file and to the running gateway at a jwks_url, gets the same code and the
// same detail from both, naming the refused key and why.
func TestCheckPredictsKeySetRefusal(t *testing.T) {
	key := harness.NewKey(t, "ES256", "acme-2026-03")
	for _, tt := range []struct {
		name   string
		body   []byte
		reason string
	}{
		{"private key (exportJWK(privateKey))", []byte(`{"keys":[` + mustJSON(t, key.PrivateJWK(t)) + `]}`),
			`key 0 (kid "acme-2026-03"): key holds private key material (member "d"): publish only the public key`},
		{"a single key, not a set", []byte(mustJSON(t, key.PublicJWK(t))), `key set has no "keys" member`},
		{"use enc", []byte(strings.Replace(string(harness.JWKS(t, key)), `"sig"`, `"enc"`, 1)), `key 0 (kid "acme-2026-03"): key has use "enc"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := harness.NewJWKSServer(t, key)
			srv.SetBody(tt.body)
			c, _ := startGateway(t, partner("acme", "jwks_url "+srv.JWKSURL()))
			file := filepath.Join(t.TempDir(), "jwks.json")
			if err := os.WriteFile(file, tt.body, 0o644); err != nil {
				t.Fatal(err)
			}
			tok := key.Sign(t, harness.Token{Issuer: issuer, Audience: audience})
			exit, code, detail, report := checkAnswer(t, tok, file)
			want := "the partner's published key set is refused: "
			if exit != 1 || code != "keys_unavailable" || !strings.HasPrefix(detail, want) || !strings.Contains(detail, tt.reason) {
				t.Errorf("check = %d %s %q, want keys_unavailable %q…%q\n%s", exit, code, detail, want, tt.reason, report)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				resp := c.PostURL(t, "acme", key.Sign(t, harness.Token{Issuer: issuer, Audience: audience}))
				gw := gatewayDetail(t, resp)
				if gw == "the partner's key set is not available" && time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond) // the first fetch has not ended yet
					continue
				}
				if got := gatewayCode(t, resp); got != code || gw != detail {
					t.Errorf("gateway = %s %q, check = %s %q: they must agree", got, gw, code, detail)
				}
				break
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
