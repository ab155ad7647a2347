// Package deploy checks what an operator builds and installs from the repository: the
// module's version in `caddy list-modules --versions` (xcaddy.sh), `caddy validate` naming a
// missing environment variable, the container image definition and the systemd units of
// deploy/ (issue 18). The production Caddyfile's adapt and format checks live with the
// other Caddyfiles in integration/caddyfile_adapt.
package deploy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
)

// TestMain removes the caddy the harness builds for these tests once they have run.
func TestMain(m *testing.M) { harness.Main(m) }

// root returns the repository's root folder.
func root(t *testing.T) string {
	t.Helper()
	dir, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs name with args in dir under a 10-minute limit (a cold build of caddy on a
// small machine) and returns its stdout and stderr.
func run(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// semver is a module version as Go writes it in go.mod: a tag vX.Y.Z or a pseudo-version.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// moduleVersions returns the version list-modules --versions gives each of partnergate's
// Caddy modules.
func moduleVersions(t *testing.T, caddy string) map[string]string {
	t.Helper()
	out, stderr, err := run(t, t.TempDir(), nil, caddy, "list-modules", "--versions", "--skip-standard")
	if err != nil {
		t.Fatalf("caddy list-modules --versions: %v\n%s%s", err, out, stderr)
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(out, "\n") {
		id, version, _ := strings.Cut(strings.TrimSpace(line), " ")
		if id == "http.handlers.jwt_partner" || strings.HasPrefix(id, "http.jwt_partner.") || id == "http.handlers.drop_trailers" {
			got[id] = version
		}
	}
	if len(got) != 4 {
		t.Fatalf("caddy list-modules --versions lists %d of partnergate's 4 modules:\n%s", len(got), out)
	}
	return got
}

// TestListModulesVersion: `caddy list-modules --versions` of a caddy built with xcaddy.sh
// shows partnergate's version next to each of its modules: the one given in
// PARTNERGATE_VERSION (a release build), or else the one xcaddy.sh derives from the
// checkout (a tag, or a Go pseudo-version of the commit) and says it builds.
func TestListModulesVersion(t *testing.T) {
	dir := root(t)
	t.Run("release", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "caddy")
		if _, stderr, err := run(t, dir, []string{"PARTNERGATE_VERSION=v1.9.7"}, "./xcaddy.sh", bin); err != nil {
			t.Fatalf("./xcaddy.sh: %v\n%s", err, stderr)
		}
		for id, version := range moduleVersions(t, bin) {
			if version != "v1.9.7" {
				t.Errorf("list-modules --versions: %s %q, want v1.9.7", id, version)
			}
		}
	})
	t.Run("checkout", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "caddy")
		_, stderr, err := run(t, dir, []string{"PARTNERGATE_VERSION="}, "./xcaddy.sh", bin)
		if err != nil {
			t.Fatalf("./xcaddy.sh: %v\n%s", err, stderr)
		}
		m := regexp.MustCompile(`building Caddy \S+ with \S+ (\S+)`).FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("./xcaddy.sh did not say which version it builds:\n%s", stderr)
		}
		if !semver.MatchString(m[1]) {
			t.Errorf("./xcaddy.sh builds version %q, want a semver tag or a Go pseudo-version", m[1])
		}
		for id, version := range moduleVersions(t, bin) {
			if version != m[1] {
				t.Errorf("list-modules --versions: %s %q, want %q, the version xcaddy.sh built", id, version, m[1])
			}
		}
	})
}

// TestValidateNamesMissingVariable: `caddy validate` of a configuration whose upstream
// secret comes from an environment variable that is not set exits 1 and says on stderr
// which variable to set.
func TestValidateNamesMissingVariable(t *testing.T) {
	dir := t.TempDir()
	jwks := harness.WriteJWKS(t, dir, harness.NewKey(t, "ES256", "k1"))
	caddyfile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(`{
	admin off
}
http://localhost:8080 {
	route /partner/* {
		jwt_partner {
			partner demo {
				jwks_file `+jwks+`
				issuer https://partner.example
				audience partnergate-demo
			}
			upstream_secret {env.PARTNERGATE_UPSTREAM_SECRET}
		}
		reverse_proxy 127.0.0.1:9080
	}
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := harness.Binary(t, "./cmd/caddy")
	for _, tt := range []struct{ name, value, want string }{
		{"unset", "", "upstream_secret is empty: is the environment variable PARTNERGATE_UPSTREAM_SECRET set?"},
		{"cut short", "0123456789", "upstream_secret: shorter than 32 bytes after expansion (is the environment variable PARTNERGATE_UPSTREAM_SECRET set to the whole secret?)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// An empty variable is what {env.X} makes of an unset one.
			t.Setenv("PARTNERGATE_UPSTREAM_SECRET", tt.value)
			stdout, stderr, err := run(t, dir, []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}, bin, "validate", "--config", caddyfile, "--adapter", "caddyfile")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("caddy validate = %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("caddy validate's stderr lacks %q:\n%s", tt.want, stderr)
			}
			if tt.value != "" && strings.Contains(stdout+stderr, tt.value) {
				t.Errorf("caddy validate's output carries the secret's value")
			}
		})
	}
}
