package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
)

func TestListModules(t *testing.T) {
	out, err := harness.RunCaddy(t, t.TempDir(), "list-modules")
	if err != nil {
		t.Fatalf("caddy list-modules: %v\n%s", err, out)
	}
	for _, m := range []string{"http.handlers.jwt_partner", "http.handlers.jwt_partner_ready", "http.handlers.drop_trailers", "http.jwt_partner.nonce_stores.memory", "http.jwt_partner.nonce_stores.redis"} {
		if !strings.Contains(out, m+"\n") {
			t.Errorf("caddy list-modules does not show %s", m)
		}
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := harness.WriteJWKS(t, dir, harness.NewKey(t, "ES256", "k1"))
	priv := filepath.Join(dir, "private.json")
	key := harness.NewKey(t, "RS256", "k2")
	if err := os.WriteFile(priv, []byte(`{"keys":[`+mustJSON(t, key.PrivateJWK(t))+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	site := func(partner, extra string) string {
		return "{\n\tadmin off\n}\n\nhttp://127.0.0.1:8080 {\n\tjwt_partner {\n\t\tpartner demo {\n" + partner + "\n\t\t}\n" + extra + "\n\t}\n\treverse_proxy 127.0.0.1:9080\n}\n"
	}
	const ids = "\t\t\tissuer https://partner.example\n\t\t\taudience partnergate-demo\n"
	tests := []struct {
		name string
		file string
		env  string
		want string // "" means valid
		line int    // the Caddyfile line the error must name, 0 for none
	}{
		{"valid", site(ids+"\t\t\tjwks_file "+good, ""), "", "", 0},
		{"valid with secret", site(ids+"\t\t\tjwks_file "+good, "\t\tupstream_secret {env.TEST_SECRET}"), "TEST_SECRET=" + secret, "", 0},
		{"unknown option", site(ids+"\t\t\tjwks_file "+good+"\n\t\t\tskip_signature", ""), "", "unrecognized subdirective", 11},
		{"HS256", site(ids+"\t\t\tjwks_file "+good+"\n\t\t\talgorithms HS256", ""), "", "is not allowed (want RS256, PS256 or ES256", 11},
		{"missing issuer", site("\t\t\taudience a\n\t\t\tjwks_file "+good, ""), "", "partner demo: issuer is required, at ", 7},
		{"missing audience", site("\t\t\tissuer a\n\t\t\tjwks_file "+good, ""), "", "partner demo: audience is required, at ", 7},
		{"missing keys", site(ids, ""), "", "jwks_file or jwks_url is required, at ", 7},
		// A jwks_file is read at provisioning, not by the adapter: the error names the
		// partner and the path, not a Caddyfile line.
		{"key file missing", site(ids+"\t\t\tjwks_file "+filepath.Join(dir, "nope.json"), ""), "", "partner demo: jwks_file: reading key set: open " + filepath.Join(dir, "nope.json") + ": no such file or directory", 0},
		{"key file with private key", site(ids+"\t\t\tjwks_file "+priv, ""), "", "partner demo: jwks_file: key set " + priv + ": key 0", 0},
		{"secret not set", site(ids+"\t\t\tjwks_file "+good, "\t\tupstream_secret {env.TEST_SECRET_UNSET}"), "", "upstream_secret is empty: is the environment variable TEST_SECRET_UNSET set?", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "Caddyfile")
			if err := os.WriteFile(file, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"validate", "--config", file, "--adapter", "caddyfile"}
			if tt.env != "" {
				t.Setenv(strings.Split(tt.env, "=")[0], strings.Split(tt.env, "=")[1])
			}
			out, err := harness.RunCaddy(t, dir, args...)
			if tt.want == "" {
				if err != nil || !strings.Contains(out, "Valid configuration") {
					t.Errorf("caddy validate = %v\n%s\nwant a valid configuration", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(out, tt.want) {
				t.Errorf("caddy validate = %v\n%s\nwant an error containing %q", err, out, tt.want)
			}
			if at := fmt.Sprintf("%s:%d", file, tt.line); tt.line > 0 && !strings.Contains(out, at) {
				t.Errorf("caddy validate output does not name %s:\n%s", at, out)
			}
		})
	}
}
