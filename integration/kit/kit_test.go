// Package kit tests the partner kit against the real gateway: keys from `partnerlink
// keygen`, tokens from `partnerlink mint` and `send`, the guide's Node.js and Python
// examples end to end (keys from its OpenSSL commands), a key rotation with `partnerlink
// jwks add/remove` served from a jwks_url, and `partnerlink check` giving the gateway's
// verdict on every kind of broken token.
package kit

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
)

const (
	issuer   = "https://acme.example"
	audience = "svc-link"
	appURL   = "https://app.example/signin?code=one-time"
)

func TestMain(m *testing.M) { harness.Main(m) }

// partnerlinkBinary returns cmd/partnerlink built once per test process: the tests use the
// CLI as a partner would, as a program.
func partnerlinkBinary(t *testing.T) string {
	t.Helper()
	return harness.Binary(t, "./cmd/partnerlink")
}

type result struct {
	code           int
	stdout, stderr string
}

// partnerlink runs the CLI with args and returns its exit status and output.
func partnerlink(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(partnerlinkBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running partnerlink: %v", err)
	}
	if err := harness.RaceReported(errb.String(), code); err != nil {
		t.Errorf("partnerlink %s: %v\n%s", args[0], err, errb.String())
	}
	return result{code, out.String(), errb.String()}
}

func mustPartnerlink(t *testing.T, args ...string) string {
	t.Helper()
	r := partnerlink(t, args...)
	if r.code != 0 {
		t.Fatalf("partnerlink %s = %d:\n%s%s", args[0], r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// keygen makes a key with the CLI and returns its folder (private.pem, jwks.json).
func keygen(t *testing.T, alg, kid string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), kid)
	mustPartnerlink(t, "keygen", "--alg", alg, "--kid", kid, "--out", dir, "--bits", "2048")
	return dir
}

var goFields = []string{
	"--organization-name", "Kliniken Öst", "--organization-id", "org-42",
	"--contact-id", "c-8", "--contact-firstname", "Jürgen", "--contact-lastname", "Müller", "--contact-email", "jurgen@example.org",
}

var mainFields = append([]string{
	"--employee-id", "emp-1001", "--employee-firstname", "Åsa", "--employee-lastname", "Ångström", "--contact-ssn", "20400229-1237",
}, goFields...)

func fieldsOf(kind string) []string {
	if kind == "main" {
		return mainFields
	}
	return goFields
}

// mint mints a token with the CLI from the key in dir.
func mint(t *testing.T, dir, kind string, extra ...string) string {
	t.Helper()
	args := append([]string{"mint", "--key", filepath.Join(dir, "private.pem"), "--iss", issuer, "--aud", audience}, extra...)
	return strings.TrimSpace(mustPartnerlink(t, append(args, fieldsOf(kind)...)...))
}

// partner returns one partner block of the gateway's Caddyfile.
func partner(name, keys string, extra ...string) string {
	return harness.PartnerBlock(name, append([]string{keys, "issuer " + issuer, "audience " + audience}, extra...)...)
}

// ownPartner is a partner block with the partner's own audience, audienceOf(name), for a
// gateway with several partners: partners of one handler may not share an issuer and
// audience (probe finding 7 of issue 13).
func ownPartner(name, keys string, extra ...string) string {
	return harness.PartnerBlock(name, append([]string{keys, "issuer " + issuer, "audience " + audienceOf(name)}, extra...)...)
}

func audienceOf(name string) string { return audience + "-" + name }

// startGateway runs the real Caddy with the partners; the upstream answers /url with a URL
// as the app service does.
func startGateway(t *testing.T, partners ...string) (*harness.Caddy, *harness.Upstream) {
	t.Helper()
	up := harness.NewUpstream(t)
	up.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/url") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, appURL)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintln(w, `<p id="signed-in">signed in</p>`)
	})
	// Every field's header on: the round trip checks a name arrives percent-encoded in one.
	c := harness.StartCaddy(t, harness.Config{
		Caddyfile: harness.PartnersCaddyfile,
		Vars:      map[string]string{"partners": strings.Join(partners, "") + "\t\t\tfield_headers all\n", "upstream": up.Addr()},
	})
	return c, up
}

var codeInProblem = regexp.MustCompile(`"code":"([a-z_]+)"`)

// gatewayCode returns "" for a forwarded request, else the problem's code.
func gatewayCode(t *testing.T, r *harness.Response) string {
	t.Helper()
	if r.StatusCode == http.StatusOK {
		return ""
	}
	m := codeInProblem.FindSubmatch(r.Body)
	if m == nil {
		t.Fatalf("gateway answered %d without a problem code: %s", r.StatusCode, r.Body)
	}
	return string(m[1])
}
