package kit

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCheckWithGatewayDryRun: `partnerlink check --gateway URL --partner NAME` asks the real
// gateway's dry run and prints its report as the offline check prints its own: the same
// verdict and rules, the gateway's request id, and the nonce rule left to the link
// endpoints; the token still works once at /url afterwards. A partner without dry_run is
// refused with not_found and a hint.
func TestCheckWithGatewayDryRun(t *testing.T) {
	dir := keygen(t, "ES256", "dry-1")
	jwks := filepath.Join(dir, "jwks.json")
	c, _ := startGateway(t,
		ownPartner("demo", "jwks_file "+jwks, "dry_run 20/1m"),
		ownPartner("off", "jwks_file "+jwks),
	)
	aud := audienceOf("demo")
	tok := mint(t, dir, "main", "--aud", aud)

	r := partnerlink(t, "check", tok, "--gateway", c.URL, "--partner", "demo")
	if r.code != 0 {
		t.Fatalf("check --gateway (valid) = %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"ok   header typ", "verdict: accepted (a main link)", "request id: ", " ??  the nonce has not been used before (LIM-2): not checked by a dry run"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check --gateway output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "offline") {
		t.Errorf("check --gateway output says offline:\n%s", r.stdout)
	}

	// The gateway's report is the offline check's, but for the request id and the nonce
	// rule's detail.
	type rule struct{ ID, Text, Result, Code string }
	type report struct {
		Verdict, Code, Kind, RequestID string `json:",omitempty"`
		Rules                          []rule
	}
	decode := func(out string) report {
		t.Helper()
		var r struct {
			Verdict   string `json:"verdict"`
			Code      string `json:"code"`
			Kind      string `json:"kind"`
			RequestID string `json:"request_id"`
			Rules     []rule `json:"rules"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("decoding %s: %v", out, err)
		}
		return report{r.Verdict, r.Code, r.Kind, r.RequestID, r.Rules}
	}
	for _, tt := range []struct {
		name, tok, verdict, code string
		exit                     int
	}{
		{"accepted", tok, "accepted", "", 0},
		{"wrong audience", mint(t, dir, "go", "--aud", "someone-else"), "rejected", "audience_invalid", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			remote := partnerlink(t, "check", tt.tok, "--gateway", c.URL, "--partner", "demo", "--json")
			local := partnerlink(t, "check", tt.tok, "--jwks", jwks, "--iss", issuer, "--aud", aud, "--json")
			if remote.code != tt.exit || local.code != tt.exit {
				t.Fatalf("check --json exit: gateway %d, offline %d, want %d\n%s%s", remote.code, local.code, tt.exit, remote.stdout, remote.stderr)
			}
			got, want := decode(remote.stdout), decode(local.stdout)
			if got.Verdict != tt.verdict || got.Code != tt.code || got.RequestID == "" {
				t.Errorf("gateway report: verdict %q code %q request id %q, want %q %q and an id", got.Verdict, got.Code, got.RequestID, tt.verdict, tt.code)
			}
			got.RequestID = ""
			if !reflect.DeepEqual(got, want) {
				t.Errorf("gateway report =\n%+v\nwant the offline check's\n%+v", got, want)
			}
		})
	}

	// The dry run claimed no nonce: the token works once at /url.
	if resp := c.PostURL(t, "demo", tok); resp.StatusCode != http.StatusOK {
		t.Errorf("/url after the dry runs = %d %s, want 200", resp.StatusCode, resp.Body)
	}

	r = partnerlink(t, "check", mint(t, dir, "main", "--aud", audienceOf("off")), "--gateway", c.URL, "--partner", "off")
	if r.code != 1 || !strings.Contains(r.stderr, "not_found") || !strings.Contains(r.stderr, "is dry_run on for partner off") {
		t.Errorf("check --gateway (dry run off) = %d %q, want 1, not_found and the hint", r.code, r.stderr)
	}
}
