package kit

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// servedFile serves path at /jwks.json, read on every request, as a partner's web server
// serves the file that `partnerlink jwks` edits.
func servedFile(t *testing.T, path string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jwks.json" {
			http.NotFound(w, r)
			return
		}
		body, err := os.ReadFile(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=1")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/jwks.json"
}

// eventually posts fresh tokens until the gateway answers want ("" for accepted), for at
// most a minute: the key set is fetched in the background.
func eventually(t *testing.T, post func() string, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := post()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway answers %q, want %q", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRotationWithoutReload: the published jwks.json, served from a jwks_url, is rotated
// with `partnerlink jwks add` and `remove`; the gateway follows without a reload.
func TestRotationWithoutReload(t *testing.T) {
	oldDir := keygen(t, "RS256", "acme-2026-03")
	newDir := keygen(t, "ES256", "acme-2026-09")
	published := filepath.Join(t.TempDir(), "jwks.json")
	data, err := os.ReadFile(filepath.Join(oldDir, "jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(published, data, 0o644); err != nil {
		t.Fatal(err)
	}
	url := servedFile(t, published)
	c, _ := startGateway(t, partner("acme", "jwks_url "+url, "refresh_min 1s", "refresh_max 2s", "refresh_cooldown 1s"))
	post := func(dir string) func() string {
		return func() string {
			return gatewayCode(t, c.PostURL(t, "acme", mint(t, dir, "go", "--jwks", published)))
		}
	}
	postOld := func() string {
		// After removal the old key is no longer in the published set: name kid and alg.
		return gatewayCode(t, c.PostURL(t, "acme", mint(t, oldDir, "go", "--kid", "acme-2026-03", "--alg", "RS256")))
	}

	eventually(t, post(oldDir), "")

	mustPartnerlink(t, "jwks", "add", "--jwks", published, "--key", filepath.Join(newDir, "private.pem"), "--kid", "acme-2026-09")
	eventually(t, post(newDir), "")
	if got := post(oldDir)(); got != "" {
		t.Errorf("old key during the overlap: %q, want accepted", got)
	}

	mustPartnerlink(t, "jwks", "remove", "--jwks", published, "--kid", "acme-2026-03")
	eventually(t, postOld, "key_unknown")
	if got := post(newDir)(); got != "" {
		t.Errorf("new key after the old one was removed: %q, want accepted", got)
	}
	if r := partnerlink(t, "jwks", "remove", "--jwks", published, "--kid", "acme-2026-09"); r.code != 1 {
		t.Errorf("removing the last key = %d, want 1 (refused)", r.code)
	}
}
