// Package redisstore tests the redis nonce store through the real gateway: several Caddy
// instances (the binary built from this checkout) in front of one recording upstream,
// sharing one redis-server started by the test, as gateways behind a load balancer do.
package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

const (
	issuer   = "https://partner.example"
	audience = "partnergate-demo"
)

var caddyfile = harness.Gateway{
	Partners: []string{harness.PartnerBlock("demo", "jwks_file {{.Vars.jwks}}", "issuer "+issuer, "audience "+audience)},
	Handler:  []string{"{{.Vars.store}}"},
}.Caddyfile()

func TestMain(m *testing.M) { harness.Main(m) }

// fleet is several gateway instances with the same partner keys and nonce store
// configuration in front of one upstream.
type fleet struct {
	key       *harness.Key
	up        *harness.Upstream
	instances []*harness.Caddy
}

// startFleet starts n gateways; store is the nonce_store line ("" for the default memory
// store).
func startFleet(t *testing.T, n int, store string) *fleet {
	t.Helper()
	f := &fleet{key: harness.NewKey(t, "RS256", "k1"), up: harness.NewUpstream(t)}
	jwks := harness.WriteJWKS(t, t.TempDir(), f.key)
	for range n {
		f.instances = append(f.instances, harness.StartCaddy(t, harness.Config{
			Caddyfile: caddyfile,
			Vars:      map[string]string{"jwks": jwks, "store": store, "upstream": f.up.Addr()},
		}))
	}
	return f
}

func (f *fleet) mint(t *testing.T) string {
	t.Helper()
	return f.key.Sign(t, harness.Token{Issuer: issuer, Audience: audience})
}

// postURL is Caddy.PostURL for a goroutine other than the test's, which must not call
// t.Fatal: it returns the error for the test goroutine to report.
func postURL(c *harness.Caddy, tok string) (*harness.Response, error) {
	req, err := http.NewRequest(http.MethodPost, c.URL+"/partner/demo/url", strings.NewReader(tok))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/plain")
	return harness.Send(req)
}

func redisStore(srv *redistest.Server) string {
	return "nonce_store redis " + srv.Addr()
}

// code is the problem code of a /url rejection.
func code(resp *harness.Response) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(resp.Body, &p)
	return p.Code
}

func TestTokenAcceptedAtOneInstanceIsRejectedAtTheOther(t *testing.T) {
	srv := redistest.Start(t)
	f := startFleet(t, 2, redisStore(srv))
	a, b := f.instances[0], f.instances[1]
	tok := f.mint(t)

	if resp := a.PostURL(t, "demo", tok); resp.StatusCode != http.StatusOK {
		t.Fatalf("first use at instance A: status %d body %s, want 200", resp.StatusCode, resp.Body)
	}
	resp := b.PostURL(t, "demo", tok)
	if resp.StatusCode != http.StatusConflict || code(resp) != "token_replayed" {
		t.Errorf("replay at instance B: status %d code %q, want 409 token_replayed", resp.StatusCode, code(resp))
	}
	if resp := a.PostURL(t, "demo", tok); resp.StatusCode != http.StatusConflict {
		t.Errorf("replay at instance A: status %d, want 409", resp.StatusCode)
	}
	if n := len(f.up.Requests()); n != 1 {
		t.Errorf("upstream received %d requests, want 1", n)
	}
}

// TestMemoryStoreDoesNotHoldAcrossInstances documents why the redis store exists: with the
// default memory store each instance remembers only its own nonces, so a token replayed
// at another instance behind the same load balancer is accepted again.
func TestMemoryStoreDoesNotHoldAcrossInstances(t *testing.T) {
	f := startFleet(t, 2, "")
	a, b := f.instances[0], f.instances[1]
	tok := f.mint(t)
	if resp := a.PostURL(t, "demo", tok); resp.StatusCode != http.StatusOK {
		t.Fatalf("first use at instance A: status %d body %s, want 200", resp.StatusCode, resp.Body)
	}
	if resp := a.PostURL(t, "demo", tok); resp.StatusCode != http.StatusConflict {
		t.Fatalf("replay at instance A: status %d, want 409 (the memory store holds within one instance)", resp.StatusCode)
	}
	if resp := b.PostURL(t, "demo", tok); resp.StatusCode != http.StatusOK {
		t.Fatalf("replay at instance B with the memory store: status %d body %s, want 200 (accepted again: the replay protection does not span instances)", resp.StatusCode, resp.Body)
	}
	if n := len(f.up.Requests()); n != 2 {
		t.Errorf("upstream received %d requests, want 2 (the replay got through)", n)
	}
}

func TestConcurrentSameNonceAcrossInstances(t *testing.T) {
	srv := redistest.Start(t)
	f := startFleet(t, 2, redisStore(srv))
	tok := f.mint(t)
	var ok, replayed, other atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	start := make(chan struct{})
	for i := range 50 {
		wg.Go(func() {
			<-start
			resp, err := postURL(f.instances[i%2], tok)
			if err != nil {
				other.Add(1)
				errs <- err
				return
			}
			switch {
			case resp.StatusCode == http.StatusOK:
				ok.Add(1)
			case resp.StatusCode == http.StatusConflict && code(resp) == "token_replayed":
				replayed.Add(1)
			default:
				other.Add(1)
				t.Errorf("status %d body %s, want 200 or 409 token_replayed", resp.StatusCode, resp.Body)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ok.Load() != 1 || replayed.Load() != 49 {
		t.Errorf("accepted, replayed, other = %d, %d, %d, want 1, 49, 0", ok.Load(), replayed.Load(), other.Load())
	}
	if n := len(f.up.Requests()); n != 1 {
		t.Errorf("upstream received %d requests, want 1", n)
	}
}

// TestRedisKilledUnderLoad kills Redis in the middle of a load of valid tokens at both
// instances: no request is forwarded without a successful check, every failure is a 503
// nonce_store_unavailable with Retry-After, and the gateways serve again by themselves
// once Redis is back.
func TestRedisKilledUnderLoad(t *testing.T) {
	srv := redistest.Start(t)
	f := startFleet(t, 2, "nonce_store redis "+srv.Addr()+" {\n dial_timeout 200ms\n read_timeout 300ms\n}")

	var (
		mu       sync.Mutex
		statuses = map[string]int{}
		nonces   []string
		accepted atomic.Int32
		refused  atomic.Int32
	)
	record := func(resp *harness.Response) {
		key := fmt.Sprint(resp.StatusCode)
		switch resp.StatusCode {
		case http.StatusOK:
			accepted.Add(1)
		case http.StatusServiceUnavailable:
			refused.Add(1)
			key += " " + code(resp)
			if code(resp) != "nonce_store_unavailable" || resp.Header.Get("Retry-After") == "" {
				t.Errorf("503 with code %q Retry-After %q, want nonce_store_unavailable and a Retry-After", code(resp), resp.Header.Get("Retry-After"))
			}
		default:
			t.Errorf("status %d body %s, want 200 or 503", resp.StatusCode, resp.Body)
		}
		mu.Lock()
		statuses[key]++
		mu.Unlock()
	}

	// The workers report what the test goroutine alone may end the test for (a failed
	// request or signature) through errs; t.Errorf, which they call in record, is safe
	// from any goroutine.
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := harness.RandomNonce()
				mu.Lock()
				nonces = append(nonces, n)
				mu.Unlock()
				tok, err := f.key.Mint(harness.Token{Issuer: issuer, Audience: audience, Nonce: n})
				if err != nil {
					errs <- fmt.Errorf("worker %d: minting a token: %v", w, err)
					return
				}
				resp, err := postURL(f.instances[w%2], tok)
				if err != nil {
					errs <- fmt.Errorf("worker %d: %v", w, err)
					return
				}
				record(resp)
			}
		})
	}
	stopWorkers := func() {
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if len(errs) > 0 || time.Now().After(deadline) {
				stopWorkers()
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: not within 30s (statuses %v)", what, statuses)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("requests accepted with Redis up", func() bool { return accepted.Load() >= 20 })
	srv.Kill()
	refusedAtKill := refused.Load()
	waitFor("requests refused with Redis down", func() bool { return refused.Load() >= refusedAtKill+20 })
	srv.Restart()
	back := time.Now()
	acceptedAtRestart := accepted.Load()
	waitFor("requests accepted after Redis came back", func() bool { return accepted.Load() >= acceptedAtRestart+20 })
	t.Logf("serving again %s after Redis restarted", time.Since(back).Round(time.Millisecond))
	stopWorkers()

	// never forwarded without a successful check: the upstream saw exactly the accepted
	// requests, none of the refused ones
	if n := len(f.up.Requests()); n != int(accepted.Load()) {
		t.Errorf("upstream received %d requests, gateways answered 200 to %d: every forwarded request must have passed the check", n, accepted.Load())
	}
	t.Logf("statuses: %v", statuses)

	// each failure is logged at error with its outcome, and no log line carries a nonce
	for i, c := range f.instances {
		logs := c.Logs()
		found := false
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, `"level":"error"`) && strings.Contains(line, `"outcome":"nonce_store_unavailable"`) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("instance %d logged no error line with outcome nonce_store_unavailable", i)
		}
		for _, n := range nonces {
			if strings.Contains(logs, n) {
				t.Fatalf("instance %d logged a nonce", i)
			}
		}
	}
}

// TestCleanStartGuardRefusesReplayAfterWipe: with require_clean_start, a token accepted
// before Redis restarted empty is refused afterwards, also for a partner whose leeway is
// longer than the handler's default (the guard learns each token's partner leeway from
// the gateway), with 409 token_before_store_start: final, no Retry-After, logged at info.
func TestCleanStartGuardRefusesReplayAfterWipe(t *testing.T) {
	srv := redistest.Start(t)
	// a store that has been remembering for an hour already
	ctx := context.Background()
	for b := range 256 {
		srv.Client().Set(ctx, fmt.Sprintf("partnergate:nonce:{%02x}epoch", b), time.Now().Add(-time.Hour).UnixMilli(), 0)
	}
	f := &fleet{key: harness.NewKey(t, "RS256", "k1"), up: harness.NewUpstream(t)}
	jwks := harness.WriteJWKS(t, t.TempDir(), f.key)
	site := strings.Replace(caddyfile, "audience "+audience+"\n", "audience "+audience+"\n\t\t\t\tleeway 1m\n", 1)
	c := harness.StartCaddy(t, harness.Config{
		Caddyfile: site,
		Vars: map[string]string{"jwks": jwks, "upstream": f.up.Addr(),
			"store": "nonce_store redis " + srv.Addr() + " {\n require_clean_start\n }"},
	})

	// nbf 50s ahead: acceptable now only by the partner's 1m leeway
	nonce := harness.RandomNonce()
	tok := f.key.Sign(t, harness.Token{Issuer: issuer, Audience: audience, Now: time.Now().Add(50 * time.Second), Nonce: nonce})
	if resp := c.PostURL(t, "demo", tok); resp.StatusCode != http.StatusOK {
		t.Fatalf("first use: status %d body %s, want 200", resp.StatusCode, resp.Body)
	}
	if resp := c.PostURL(t, "demo", tok); resp.StatusCode != http.StatusConflict || code(resp) != "token_replayed" {
		t.Fatalf("replay: status %d code %q, want 409 token_replayed", resp.StatusCode, code(resp))
	}

	srv.Restart() // no persistence: every nonce is forgotten
	waitUntil(t, "the gateway reaching Redis again", func() error {
		resp := c.PostURL(t, "demo", tok)
		if resp.StatusCode == http.StatusServiceUnavailable {
			return fmt.Errorf("status 503 %s", code(resp))
		}
		if resp.StatusCode != http.StatusConflict || code(resp) != "token_before_store_start" {
			t.Fatalf("replay after Redis restarted empty: status %d code %q body %s, want 409 token_before_store_start", resp.StatusCode, code(resp), resp.Body)
		}
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			t.Errorf("Retry-After = %q, want none: the same token can never succeed", ra)
		}
		return nil
	})
	if n := len(f.up.Requests()); n != 1 {
		t.Errorf("upstream received %d requests, want 1", n)
	}
	// the log line is the security signal of an info-level refusal, not a dependency error
	waitUntil(t, "an info log line with outcome token_before_store_start", func() error {
		for _, line := range strings.Split(c.Logs(), "\n") {
			if strings.Contains(line, `"outcome":"token_before_store_start"`) {
				if !strings.Contains(line, `"level":"info"`) {
					t.Fatalf("log line %s, want level info", line)
				}
				return nil
			}
		}
		return errors.New("not logged yet")
	})
	if strings.Contains(c.Logs(), nonce) {
		t.Error("the gateway logged the nonce")
	}
}
