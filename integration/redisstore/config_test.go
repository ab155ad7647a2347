package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

// siteWithStore is a minimal gateway Caddyfile with the given nonce_store block.
func siteWithStore(t *testing.T, store string) string {
	t.Helper()
	key := harness.NewKey(t, "RS256", "k1")
	jwks := harness.WriteJWKS(t, t.TempDir(), key)
	return fmt.Sprintf(`{
	admin off
}
http://127.0.0.1:8080 {
	jwt_partner {
		partner demo {
			jwks_file %s
			issuer %s
			audience %s
		}
		%s
	}
	reverse_proxy 127.0.0.1:9
}
`, jwks, issuer, audience, store)
}

func writeCaddyfile(t *testing.T, text string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func TestAdaptRedisStore(t *testing.T) {
	dir, file := writeCaddyfile(t, siteWithStore(t, `nonce_store redis {
			addresses s1:26379 s2:26379
			master_name mymaster
			db 2
			password {env.REDIS_PASSWORD}
			tls {
				ca_file /etc/ca.pem
			}
			read_timeout 300ms
			require_clean_start
		}`))
	out, err := harness.RunCaddy(t, dir, "adapt", "--config", file, "--adapter", "caddyfile")
	if err != nil {
		t.Fatalf("caddy adapt: %v\n%s", err, out)
	}
	start := strings.Index(out, `"nonce_store":`)
	if start < 0 {
		t.Fatalf("adapted JSON has no nonce_store:\n%s", out)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):strings.LastIndex(out, "}")+1]), &doc); err != nil {
		t.Fatalf("adapted output is not JSON: %v\n%s", err, out)
	}
	want := `"nonce_store":{"addresses":["s1:26379","s2:26379"],"db":2,"master_name":"mymaster","password":"{env.REDIS_PASSWORD}","read_timeout":300000000,"require_clean_start":true,"store":"redis","tls":{"ca_file":"/etc/ca.pem"}}`
	if !strings.Contains(out, want) {
		t.Errorf("caddy adapt output lacks\n%s\ngot\n%s", want, out)
	}
}

func TestValidateRejectsBadStoreConfig(t *testing.T) {
	tests := []struct {
		name, store, want string
	}{
		{"address and addresses", "nonce_store redis {\n address a:1\n addresses b:1\n }", "address and addresses are exclusive"},
		{"db on a cluster", "nonce_store redis {\n addresses a:1 b:1\n db 3\n }", "db must be 0 with a cluster"},
		{"master_name without sentinels", "nonce_store redis {\n master_name m\n }", "one of address"},
		{"username without password", "nonce_store redis {\n address a:1\n username gw\n }", "username needs password"},
		{"unknown redis option", "nonce_store redis {\n adress a:1\n }", `unknown redis nonce store option \"adress\", at `},
		{"missing ca file", "nonce_store redis {\n address a:1\n tls {\n ca_file /nonexistent/ca.pem\n }\n }", "reading tls ca_file"},
		{"insecure tls refused", "nonce_store redis {\n address a:1\n tls {\n insecure_skip_verify\n }\n }", "insecure_skip_verify is not offered"},
		{"bad memory option", "nonce_store memory {\n max_entries 0\n }", "max_entries: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, file := writeCaddyfile(t, siteWithStore(t, tt.store))
			out, err := harness.RunCaddy(t, dir, "validate", "--config", file, "--adapter", "caddyfile")
			if err == nil {
				t.Fatalf("caddy validate accepted the config, want an error containing %q\n%s", tt.want, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("caddy validate output lacks %q:\n%s", tt.want, out)
			}
		})
	}
	t.Run("valid config while Redis is down", func(t *testing.T) {
		dir, file := writeCaddyfile(t, siteWithStore(t, fmt.Sprintf("nonce_store redis 127.0.0.1:%d", freeport.For(t))))
		if out, err := harness.RunCaddy(t, dir, "validate", "--config", file, "--adapter", "caddyfile"); err != nil {
			t.Fatalf("caddy validate: %v\n%s", err, out)
		}
	})
}

// TestReloadKeepsNoncesAndConnections reloads a gateway with the redis store many times:
// replays stay refused, and the connections to Redis do not pile up.
func TestReloadKeepsNoncesAndConnections(t *testing.T) {
	srv := redistest.Start(t)
	f := startFleet(t, 1, redisStore(srv))
	c := f.instances[0]
	jwks := harness.WriteJWKS(t, t.TempDir(), f.key)
	vars := map[string]string{"jwks": jwks, "store": redisStore(srv), "upstream": f.up.Addr()}
	tok := f.mint(t)
	if resp := c.PostURL(t, "demo", tok); resp.StatusCode != http.StatusOK {
		t.Fatalf("first use: status %d body %s, want 200", resp.StatusCode, resp.Body)
	}
	clients := func() int {
		info := srv.Client().Info(context.Background(), "clients").Val()
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "connected_clients:"); ok {
				var n int
				fmt.Sscan(v, &n)
				return n
			}
		}
		return -1
	}
	after1 := clients()
	for i := range 10 {
		// alternate between two configs so that every reload really changes the config
		vars["store"] = redisStore(srv)
		if i%2 == 0 {
			vars["store"] = "nonce_store redis " + srv.Addr() + " {\n key_prefix partnergate:nonce:\n }"
		}
		c.Reload(t, caddyfile, vars)
		if resp := c.PostURL(t, "demo", tok); resp.StatusCode != http.StatusConflict {
			t.Fatalf("replay after reload %d: status %d body %s, want 409", i, resp.StatusCode, resp.Body)
		}
		if resp := c.PostURL(t, "demo", f.mint(t)); resp.StatusCode != http.StatusOK {
			t.Fatalf("new token after reload %d: status %d body %s, want 200", i, resp.StatusCode, resp.Body)
		}
	}
	// the pool's connections plus one admin connection, with slack for the connections a
	// burst of requests may have opened; without sharing, each reload would add a pool
	deadline := time.Now().Add(10 * time.Second)
	for n := clients(); n > after1+3; n = clients() {
		if time.Now().After(deadline) {
			t.Fatalf("connected_clients = %d after 10 reloads, %d after the first request: connections leak across reloads", n, after1)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
