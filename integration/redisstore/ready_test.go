package redisstore

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

// readyCaddyfile is a gateway with the readiness route on a listener of its own, as the
// docs/jwt_partner.md shows: /ready for the gateway, /healthz for the gateway and then the app service.
// Vars.remote, when not empty, adds a partner whose key set comes from Vars.jwksURL.
var readyCaddyfile = harness.Gateway{
	Partners: []string{
		harness.PartnerBlock("demo", "jwks_file {{.Vars.jwks}}", "issuer "+issuer, "audience "+audience),
		"{{if .Vars.remote}}" + harness.PartnerBlock("remote", "jwks_url {{.Vars.jwksURL}}", "issuer "+issuer, "audience remote-audience", "refresh_min 1s") + "{{end}}",
	},
	Handler: []string{"nonce_store redis {{.Vars.redis}}"},
	More: `http://127.0.0.1:{{.Vars.readyPort}} {
	handle /ready {
		jwt_partner_ready
	}
	handle /healthz {
		jwt_partner_ready {
			forward
		}
		reverse_proxy {{.Vars.upstream}}
	}
}
`,
}.Caddyfile()

// readyAnswer is a readiness answer as a load balancer sees it.
type readyAnswer struct {
	status       int
	cacheControl string
	body         string
}

type notReady struct {
	Partner string `json:"partner"`
	Check   string `json:"check"`
}

func getReady(t *testing.T, base, path string) readyAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := harness.Do(t, req)
	return readyAnswer{resp.StatusCode, resp.Header.Get("Cache-Control"), string(resp.Body)}
}

// waitReady asks path until it answers status with the not_ready entries want (nil for
// a ready answer), and fails after 20s with the last answer. Readiness follows Redis
// and the key fetcher, which change on their own schedule: the test waits for the state, it
// does not time it.
func waitReady(t *testing.T, base, path string, status int, want []notReady) readyAnswer {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := getReady(t, base, path)
		var body struct {
			Ready    bool       `json:"ready"`
			NotReady []notReady `json:"not_ready"`
		}
		parsed := json.Unmarshal([]byte(a.body), &body) == nil
		if a.status == status && parsed && body.Ready == (status == http.StatusOK) && reflect.DeepEqual(body.NotReady, want) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %d %s, want %d with not_ready %+v", path, a.status, a.body, status, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jwksServer serves a key set once serve is set, and 503 before.
func jwksServer(t *testing.T, key *harness.Key) (*httptest.Server, *atomic.Bool) {
	t.Helper()
	jwks := harness.JWKS(t, key)
	var serve atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !serve.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	return srv, &serve
}

// TestReadyFollowsRedisAndKeys: the readiness route answers 200 while every partner has
// keys and Redis answers; 503 naming the nonce store while redis-server is stopped and 200
// again once it is back; 503 naming a partner added by a reload while its jwks_url has
// never served a set, and 200 once it serves. /healthz asks the app only when the gateway
// is ready.
func TestReadyFollowsRedisAndKeys(t *testing.T) {
	srv := redistest.Start(t)
	key := harness.NewKey(t, "RS256", "k1")
	up := harness.NewUpstream(t)
	jwks, serve := jwksServer(t, key)
	readyPort := freeport.For(t)
	vars := map[string]string{
		"jwks":      harness.WriteJWKS(t, t.TempDir(), key),
		"jwksURL":   jwks.URL + "/jwks.json",
		"redis":     srv.Addr(),
		"upstream":  up.Addr(),
		"readyPort": strconv.Itoa(readyPort),
		"remote":    "",
	}
	c := harness.StartCaddy(t, harness.Config{Caddyfile: readyCaddyfile, Vars: vars})
	lb := "http://127.0.0.1:" + strconv.Itoa(readyPort)

	a := waitReady(t, lb, "/ready", http.StatusOK, nil)
	if a.cacheControl != "no-store" {
		t.Errorf("ready answer Cache-Control = %q, want no-store", a.cacheControl)
	}
	if a := getReady(t, lb, "/healthz"); a.status != http.StatusOK || a.body != "upstream ok" {
		t.Errorf("GET /healthz while ready = %d %q, want the app's 200 upstream ok", a.status, a.body)
	}

	srv.Kill()
	a = waitReady(t, lb, "/ready", http.StatusServiceUnavailable, []notReady{{"demo", "nonce_store"}})
	if a.cacheControl != "no-store" {
		t.Errorf("not-ready answer Cache-Control = %q, want no-store", a.cacheControl)
	}
	up.Reset()
	if a := getReady(t, lb, "/healthz"); a.status != http.StatusServiceUnavailable {
		t.Errorf("GET /healthz with Redis down = %d %s, want 503", a.status, a.body)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("the app was asked %d times while the gateway was not ready, want 0", n)
	}
	// The route's answer matches what partners get meanwhile.
	if resp := c.PostURL(t, "demo", key.Sign(t, harness.Token{Issuer: issuer, Audience: audience})); resp.StatusCode != http.StatusServiceUnavailable || code(resp) != "nonce_store_unavailable" {
		t.Errorf("a link while not ready: %d %q, want 503 nonce_store_unavailable", resp.StatusCode, code(resp))
	}

	srv.Restart()
	waitReady(t, lb, "/ready", http.StatusOK, nil)

	// A reload that adds a partner whose key URL has not served a set yet.
	vars["remote"] = "yes"
	c.Reload(t, readyCaddyfile, vars)
	waitReady(t, lb, "/ready", http.StatusServiceUnavailable, []notReady{{"remote", "keys"}})
	serve.Store(true)
	waitReady(t, lb, "/ready", http.StatusOK, nil)

	// Redis down names every partner; after a reload that drops one, the new
	// configuration's check no longer names it.
	serve.Store(false)
	srv.Kill()
	waitReady(t, lb, "/ready", http.StatusServiceUnavailable, []notReady{{"demo", "nonce_store"}, {"remote", "nonce_store"}})
	vars["remote"] = ""
	c.Reload(t, readyCaddyfile, vars)
	waitReady(t, lb, "/ready", http.StatusServiceUnavailable, []notReady{{"demo", "nonce_store"}})
	srv.Restart()
	waitReady(t, lb, "/ready", http.StatusOK, nil)
}
