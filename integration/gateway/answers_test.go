package gateway

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
)

// TestAnswersSayHowToFix sends the mistakes partners make most to the running gateway and
// pins each answer: status, code, the whole detail, and the problem members that say what
// was expected and which link kind was read.
func TestAnswersSayHowToFix(t *testing.T) {
	key := harness.NewKey(t, "ES256", "k1")
	g := startGateway(t, fileKeys(t, key), "", "")
	now := time.Now()
	sign := func(tok harness.Token) string { return mint(t, key, tok) }
	compact := sign(harness.Token{})
	parts := strings.Split(compact, ".")
	main := []string{"employeeId", "employeeFirstname", "employeeLastname"}
	goWithout := func(field string) map[string]any {
		p := testpayload.Go()
		delete(p["contact"].(map[string]any), field)
		return p
	}
	const compactForm = "a token is the compact JWS that a JWT library's sign function returns, three base64url parts separated by dots (header.payload.signature)"
	const ms = " far in the future (above 10^11, after the year 5000): a time in milliseconds since 1970, not seconds; " +
		"NumericDate is whole seconds since 1970, in JavaScript Math.floor(Date.now() / 1000)"

	tests := []struct {
		name        string
		partner     string
		contentType string
		body        string
		status      int
		want        problemDoc // code, detail and the members
	}{
		{"exp from Date.now() + 120000", "demo", "text/plain", sign(harness.Token{Claims: map[string]any{"exp": now.Add(2 * time.Minute).UnixMilli()}}), 400,
			problemDoc{Code: "time_in_milliseconds", Detail: "the exp claim is" + ms}},
		{"nbf, iat and exp from Date.now()", "demo", "text/plain", sign(harness.Token{Claims: map[string]any{
			"nbf": now.UnixMilli(), "iat": now.UnixMilli(), "exp": now.Add(2 * time.Minute).UnixMilli()}}), 400,
			problemDoc{Code: "time_in_milliseconds", Detail: "the nbf, exp and iat claims are" + ms}},
		{"iss other", "demo", "text/plain", sign(harness.Token{Issuer: "https://other.example"}), 401,
			problemDoc{Code: "issuer_invalid", Detail: `the iss claim is not the issuer agreed for this partner: it must be exactly "` + issuer + `"`, Expected: issuer}},
		{"aud other", "demo", "text/plain", sign(harness.Token{Audience: "someone-else"}), 401,
			problemDoc{Code: "audience_invalid", Detail: `the aud claim does not contain the audience agreed for this partner: it must be "` + audience + `", or an array that contains it`, Expected: audience}},
		{"lifetime 10 minutes", "demo", "text/plain", sign(harness.Token{Lifetime: 10 * time.Minute}), 400,
			problemDoc{Code: "lifetime_too_long", Detail: "exp is more than 300 seconds after nbf: the partner's tokens live at most 300 seconds (exp - nbf <= 300)", MaxLifetime: 300}},
		{"the token wrapped in JSON, as text/plain", "demo", "text/plain", `{"payload":"` + compact + `"}`, 400,
			problemDoc{Code: "token_malformed", Detail: "the token is a JSON object that wraps a token: send the compact token itself, three base64url parts separated by dots, " +
				"as the body of /url with Content-Type text/plain, or as the form field payload of /payload with Content-Type application/x-www-form-urlencoded"}},
		{"a JWS JSON serialization", "demo", "text/plain", `{"protected":"` + parts[0] + `","payload":"` + parts[1] + `","signature":"` + parts[2] + `"}`, 400,
			problemDoc{Code: "token_malformed", Detail: "the token is a JWS in its JSON serialization: only the compact serialization is accepted; " + compactForm}},
		{"claims sent unsigned", "demo", "text/plain", mustJSON(t, harness.ClaimsOf(harness.Token{Issuer: issuer, Audience: audience})), 400,
			problemDoc{Code: "token_malformed", Detail: "the token is a JSON object, not a signed token (claims must be signed, not sent as JSON): " + compactForm}},
		{"the token wrapped in JSON, as application/json", "demo", "application/json", `{"token":"` + compact + `"}`, 415,
			problemDoc{Code: "unsupported_media_type", Detail: "the url endpoint takes Content-Type text/plain, the body being the compact token: three base64url parts separated by dots; not JSON: send the token itself, not an object holding it"}},
		{"main link without organizationId", "demo", "text/plain", sign(harness.Token{Claims: map[string]any{"organizationId": nil}}), 400,
			problemDoc{Code: "payload_invalid", Detail: "the payload does not meet the interface; read as a main link, because it carries employeeId, employeeFirstname, employeeLastname",
				Kind: "main", KindFrom: main}},
		{"Go link without contact email", "demo", "text/plain", sign(harness.Token{Payload: goWithout("email")}), 400,
			problemDoc{Code: "payload_invalid", Detail: "the payload does not meet the interface; read as a Go link, because it carries none of employeeId, employeeFirstname and employeeLastname",
				Kind: "go"}},
		{"employeeId a number", "demo", "text/plain", sign(harness.Token{Claims: map[string]any{"employeeId": 1042}}), 400,
			problemDoc{Code: "payload_invalid", Detail: "a payload field has the wrong JSON type; read as a main link, because it carries employeeId, employeeFirstname, employeeLastname",
				Kind: "main", KindFrom: main}},
		{"main link to the Go-only partner", "gonly", "text/plain", sign(harness.Token{Audience: goOnlyAudience}), 403,
			problemDoc{Code: "kind_not_allowed", Detail: "this partner may send Go links only; read as a main link, because it carries employeeId, employeeFirstname, employeeLastname",
				Kind: "main", KindFrom: main}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := g.Post(t, "/partner/"+tt.partner+"/url", tt.contentType, tt.body, nil)
			p := decodeProblem(t, resp)
			got := problemDoc{Code: p.Code, Detail: p.Detail, Expected: p.Expected, MaxLifetime: p.MaxLifetime, Kind: p.Kind, KindFrom: p.KindFrom}
			if resp.StatusCode != tt.status || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("gateway = %d %+v,\nwant %d %+v", resp.StatusCode, got, tt.status, tt.want)
			}
		})
	}

	// A body sent to the other endpoint's media type is pointed at that endpoint.
	for _, tt := range []struct{ path, contentType, body, want string }{
		{"/partner/demo/url", "application/x-www-form-urlencoded", "payload=" + compact,
			"the url endpoint takes Content-Type text/plain, the body being the compact token: three base64url parts separated by dots; a form with the field payload goes to the payload endpoint"},
		{"/partner/demo/payload", "text/plain", compact,
			"the payload endpoint takes Content-Type application/x-www-form-urlencoded, one form field payload holding the token; a body that is the token itself goes to the url endpoint"},
	} {
		t.Run(tt.contentType+" to "+tt.path, func(t *testing.T) {
			resp := g.Post(t, tt.path, tt.contentType, tt.body, nil)
			if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(resp.Body), tt.want) {
				t.Errorf("gateway = %d %s, want 415 with %q", resp.StatusCode, resp.Body, tt.want)
			}
		})
	}

	t.Run("replayed", func(t *testing.T) {
		tok := sign(harness.Token{})
		if resp := g.PostURL(t, "demo", tok); resp.StatusCode != http.StatusOK {
			t.Fatalf("first use: %d %s", resp.StatusCode, resp.Body)
		}
		resp := g.PostURL(t, "demo", tok)
		const want = "a token with this nonce was used before: sign a new token for every link, each with a new random nonce " +
			"(crypto.randomUUID() in Node.js, secrets.token_urlsafe(32) in Python); never send a token twice"
		if p := decodeProblem(t, resp); resp.StatusCode != http.StatusConflict || p.Code != "token_replayed" || p.Detail != want {
			t.Errorf("second use = %d %s %q, want 409 token_replayed %q", resp.StatusCode, p.Code, p.Detail, want)
		}
	})
}
