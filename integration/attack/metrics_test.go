package attack

import (
	"bufio"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linkspec"
)

// TestMetricsLabelsBounded sends requests whose partner name, endpoint, kid and alg are the
// attacker's choice, then reads the gateway's metrics: every label value must come from the
// configuration or the fixed code list. A label taken from a request would let anyone grow
// the metrics without bound (one series per made-up name) and put their text in dashboards.
func TestMetricsLabelsBounded(t *testing.T) {
	e := newEnv(t)
	hostile := []struct {
		path string
		req  request
	}{
		{"/partner/made-up-" + newNonce(t)[:10] + "/url", request{token: "x.y.z"}},
		{"/partner/%3Cscript%3E/url", request{token: "x.y.z"}},
		{"/partner/acme/" + newNonce(t)[:10], request{token: "x.y.z"}},
		{"/partner/acme/url", request{token: e.tokenWithHeader(t, header("RS256", "kid-"+newNonce(t)))}},
		{"/partner/acme/url", request{token: e.tokenWithHeader(t, header("XS"+newNonce(t)[:6], "acme-rs"))}},
		{"/partner/acme/payload", request{method: http.MethodDelete}},
		// an accepted link whose malformed optional field is dropped and counted by its
		// path: the test makes the field label itself rather than rely on the catalogue
		// having run first on the shared gateway
		{"/partner/acme/url", request{token: e.token(t, "acme-rs", func(c map[string]any) {
			c["contact"].(map[string]any)["birthdate"] = "not a date " + newNonce(t)
		})}},
	}
	for _, h := range hostile {
		e.send(t, attackCase{path: h.path}, h.req)
	}

	req, err := http.NewRequest(http.MethodGet, "http://"+e.caddy.Admin+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	res := harness.Do(t, req)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET admin /metrics: %d", res.StatusCode)
	}
	allowed := map[string]map[string]bool{
		"partner":  set("acme", "beta", "unknown"),
		"endpoint": set("url", "payload", "unknown"),
		"outcome": set("accepted", codeTokenMalformed, codeHeaderInvalid, codeAlgNotAllowed, codeKeyIDMissing,
			codeKeyUnknown, codeKeysUnavailable, codeSignatureInvalid, codeClaimsInvalid, codeIssuerInvalid,
			codeAudienceInvalid, codeLifetimeTooLong, codeNotYetValid, codeExpired, codeNonceMissing,
			codeNonceInvalid, codePayloadInvalid, "kind_not_allowed", codePartnerUnknown, codeNotFound,
			codeMethodNotAllowed, codeUnsupportedMedia, codeBodyTooLarge, codeBodyUnreadable, codeTokenMissing,
			codeTokenDuplicated, codeTokenInQuery, codeTokenReplayed, "token_before_store_start", "nonce_store_unavailable",
			"nonce_store_full", "internal_error", codeOriginNotAllowed,
			// What the upstream made of a forwarded link (plugins/jwtpartner/upstream.go).
			"upstream_unavailable", "upstream_error", "upstream_rejected", "client_closed"),
		"result": set("ok", "error"),
		"field":  fieldPaths(),
	}
	labelRE := regexp.MustCompile(`([a-z_]+)="((?:[^"\\]|\\.)*)"`)
	series, sawUnknown := 0, false
	sc := bufio.NewScanner(strings.NewReader(string(res.Body)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "partnergate_") {
			continue
		}
		series++
		for _, m := range labelRE.FindAllStringSubmatch(line, -1) {
			name, value := m[1], m[2]
			if name == "le" {
				continue
			}
			ok, known := allowed[name]
			if !known {
				t.Errorf("metric label %s=%q: a label the test does not know", name, value)
				continue
			}
			if name == "partner" && value == "unknown" && strings.HasPrefix(line, "partnergate_requests_total") {
				sawUnknown = true
			}
			if !ok[value] {
				t.Errorf("metric label %s=%q is not from the configuration or the code list: %s", name, value, line)
			}
		}
	}
	if series == 0 {
		t.Fatalf("no partnergate_ series in the admin /metrics answer:\n%s", lastLines(string(res.Body), 10))
	}
	if !sawUnknown {
		t.Error(`no partnergate_requests_total series with partner="unknown": the requests to made-up partners were not counted`)
	}
}

// tokenWithHeader signs valid acme claims under hdr with acme-rs.
func (e *env) tokenWithHeader(t *testing.T, hdr map[string]any) string {
	t.Helper()
	return compact(t, mustJSON(t, hdr), e.validClaims(t, "acme"), e.key("acme-rs").sign)
}

// fieldPaths is the set of the payload fields' paths (linkspec.Fields), the values of the
// dropped-fields counter's field label.
func fieldPaths() map[string]bool {
	m := map[string]bool{}
	for _, f := range linkspec.Fields {
		m[f.Path] = true
	}
	return m
}

func set(vals ...string) map[string]bool {
	m := make(map[string]bool, len(vals))
	for _, v := range vals {
		m[v] = true
	}
	return m
}
