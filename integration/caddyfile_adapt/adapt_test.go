// Package caddyfileadapt holds the golden adapt tests of the jwt_partner directive: each
// *.caddyfiletest file is a Caddyfile, a line of ten dashes, and the JSON `caddy adapt`
// must produce, or "error: " and a substring of the adapt error (file and line included).
// Run `go test ./integration/caddyfile_adapt -update` to rewrite the JSON halves after a
// deliberate change, then review the diff.
package caddyfileadapt

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/partnergate/partnergate/caddymodule"
)

var update = flag.Bool("update", false, "rewrite the expected JSON of the golden files")

const separator = "\n----------\n"

func TestAdapt(t *testing.T) {
	files, err := filepath.Glob("*.caddyfiletest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(file, ".caddyfiletest"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			input, want, ok := strings.Cut(string(data), separator)
			if !ok {
				t.Fatalf("%s: no %q separator line", file, strings.TrimSpace(separator))
			}
			got, err := adapt(file, input+"\n")
			if wantErr, isErr := strings.CutPrefix(strings.TrimSpace(want), "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), wantErr) {
					t.Errorf("adapt(%s) error = %v, want one containing %q", file, err, wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("adapt(%s): %v", file, err)
			}
			if *update {
				if err := os.WriteFile(file, []byte(input+separator+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if strings.TrimSpace(got) != strings.TrimSpace(want) {
				t.Errorf("adapt(%s) =\n%s\nwant\n%s", file, got, want)
			}
		})
	}
}

func adapt(file, input string) (string, error) {
	out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), map[string]any{"filename": file})
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, out, "", "\t"); err != nil {
		return "", err
	}
	for _, w := range warnings {
		b.WriteString("\nwarning: " + w.String())
	}
	return b.String() + "\n", nil
}

// TestCaddyfileExampleAdapts keeps Caddyfile.example in step with the directive. Adapting
// only records its jwks_file (./run.sh makes the demo keys where caddy runs, and
// provisioning reads them), so no key file is needed here.
func TestCaddyfileExampleAdapts(t *testing.T) {
	data, err := os.ReadFile("../../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	got, err := adapt("Caddyfile.example", string(data))
	if err != nil {
		t.Fatalf("adapting Caddyfile.example: %v", err)
	}
	for _, want := range []string{`"handler": "jwt_partner"`, `"issuer": "https://partner.example"`, `"audience": "partnergate-demo"`, `"jwks_file": "./data/demo/jwks.json"`, `"upstream_secret": "{env.PARTNERGATE_UPSTREAM_SECRET}"`,
		// the example serves this machine only (issue 18), and logs why a link was refused
		"\"listen\": [\n\t\t\t\t\t\t\"127.0.0.1:8080\"\n\t\t\t\t\t]", `"value": "{http.jwt_partner.request_id}"`, `"value": "{http.jwt_partner.error_code}"`} {
		if !strings.Contains(got, want) {
			t.Errorf("adapted Caddyfile.example lacks %s", want)
		}
	}
}

// TestDeployCaddyfileAdapts: the production Caddyfile of deploy/ (docs/operations.md)
// adapts without a warning and keeps what the walk-through promises: the admin API on a
// Unix socket, metrics on their own loopback listener, TLS for the site's name, log
// filters that drop credentials and the query, Redis over TLS with its password from the
// environment, and the app route stripped of the gateway's headers.
func TestDeployCaddyfileAdapts(t *testing.T) {
	data, err := os.ReadFile("../../deploy/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	got, err := adapt("deploy/Caddyfile", string(data))
	if err != nil {
		t.Fatalf("adapting deploy/Caddyfile: %v", err)
	}
	if strings.Contains(got, "\nwarning: ") {
		t.Errorf("adapting deploy/Caddyfile warns:\n%s", got[strings.Index(got, "\nwarning: "):])
	}
	var cfg struct {
		Admin struct {
			Listen string `json:"listen"`
		} `json:"admin"`
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Listen []string          `json:"listen"`
					Routes []json.RawMessage `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(got), &cfg); err != nil {
		t.Fatalf("adapted deploy/Caddyfile: %v", err)
	}
	if !strings.HasPrefix(cfg.Admin.Listen, "unix/") {
		t.Errorf("admin listens on %q, want a Unix socket", cfg.Admin.Listen)
	}
	var metrics, site bool
	for name, srv := range cfg.Apps.HTTP.Servers {
		var compact bytes.Buffer
		for _, r := range srv.Routes {
			if err := json.Compact(&compact, r); err != nil {
				t.Fatal(err)
			}
		}
		routes := compact.String()
		switch {
		case strings.Contains(routes, `"handler":"metrics"`):
			metrics = true
			for _, l := range srv.Listen {
				if !strings.HasPrefix(l, "127.0.0.1:") {
					t.Errorf("the metrics server %s listens on %s, want loopback only", name, l)
				}
			}
			if strings.Contains(routes, "jwt_partner") {
				t.Errorf("the metrics server %s also serves partner routes", name)
			}
		case strings.Contains(routes, `"handler":"jwt_partner"`):
			site = true
			if !slices.Equal(srv.Listen, []string{":443"}) {
				t.Errorf("the gateway's server listens on %v, want [:443] (HTTPS for the site's name)", srv.Listen)
			}
		}
	}
	if !metrics || !site {
		t.Errorf("deploy/Caddyfile: metrics server %v, gateway server %v; want both", metrics, site)
	}
	for _, want := range []string{
		`"gateway.example.com"`,
		`"jwks_url": "https://links.acme.example/.well-known/jwks.json"`,
		`"store": "redis"`, `"password": "{env.PARTNERGATE_REDIS_PASSWORD}"`, `"ca_file": "/etc/partnergate/redis-ca.pem"`,
		`"upstream_secret": "{env.PARTNERGATE_UPSTREAM_SECRET}"`,
		`"request\u003eheaders\u003eAuthorization": {`, `"request\u003eheaders\u003eCookie": {`, `"request\u003euri": {`,
		`"value": "{http.jwt_partner.error_code}"`,
		`"handler": "drop_trailers"`, `"X-Partner-*"`,
		`"read_header_timeout"`, `"read_timeout"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("adapted deploy/Caddyfile lacks %s", want)
		}
	}
}

// TestReadmeCaddyfileAdapts keeps the README's minimal Caddyfile, the first one a newcomer
// copies, a working configuration: it adapts without a warning into a jwt_partner handler
// with its partner before a reverse_proxy, and the catch-all route strips the gateway's
// headers.
func TestReadmeCaddyfileAdapts(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := caddyfileBlocks(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d caddyfile blocks, want the one minimal Caddyfile", len(blocks))
	}
	got, err := adapt("README.md", string(blocks[0].body))
	if err != nil {
		t.Fatalf("adapting the README's Caddyfile: %v", err)
	}
	if i := strings.Index(got, "\nwarning: "); i >= 0 {
		t.Errorf("adapting the README's Caddyfile warns:%s", got[i:])
	}
	for _, want := range []string{`"handler": "jwt_partner"`, `"acme": {`, `"jwks_url": "https://ehr.acme.example/.well-known/jwks.json"`, `"upstream_secret": "{env.PARTNERGATE_UPSTREAM_SECRET}"`, `"X-Partner-*"`, `"handler": "reverse_proxy"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the README's Caddyfile adapts without %s:\n%s", want, got)
		}
	}
	if strings.Index(got, `"handler": "jwt_partner"`) > strings.Index(got, `"handler": "reverse_proxy"`) {
		t.Errorf("the README's Caddyfile puts reverse_proxy before jwt_partner:\n%s", got)
	}
}
