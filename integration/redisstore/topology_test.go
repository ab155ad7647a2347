package redisstore

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

// TestClusterSharedByTwoInstances: gateways on a three-master Redis Cluster refuse every
// replay at the other instance, whichever slot and master the nonce lands on.
func TestClusterSharedByTwoInstances(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	// each instance is seeded with a different node, as separate deployments might be
	f := &fleet{key: harness.NewKey(t, "RS256", "k1"), up: harness.NewUpstream(t)}
	jwks := harness.WriteJWKS(t, t.TempDir(), f.key)
	for i := range 2 {
		f.instances = append(f.instances, harness.StartCaddy(t, harness.Config{
			Caddyfile: caddyfile,
			Vars: map[string]string{"jwks": jwks, "upstream": f.up.Addr(),
				"store": "nonce_store redis {\n addresses " + nodes[i].Addr() + "\n }"},
		}))
	}
	const n = 30
	for i := range n {
		tok := f.mint(t)
		if resp := f.instances[i%2].PostURL(t, "demo", tok); resp.StatusCode != http.StatusOK {
			t.Fatalf("token %d at instance %d: status %d body %s, want 200", i, i%2, resp.StatusCode, resp.Body)
		}
		if resp := f.instances[(i+1)%2].PostURL(t, "demo", tok); resp.StatusCode != http.StatusConflict {
			t.Fatalf("replay of token %d at instance %d: status %d body %s, want 409", i, (i+1)%2, resp.StatusCode, resp.Body)
		}
	}
	if got := len(f.up.Requests()); got != n {
		t.Errorf("upstream received %d requests, want %d", got, n)
	}
	for _, node := range nodes {
		if keys := node.Client().Keys(context.Background(), "partnergate:nonce:*").Val(); len(keys) == 0 {
			t.Errorf("master %s holds no nonce key, want them spread over every master", node.Addr())
		}
	}
}

// TestSentinelFailoverFollowed: after a forced failover the gateways write to the new
// master by themselves, and a token accepted before the failover stays refused.
func TestSentinelFailoverFollowed(t *testing.T) {
	const name = "gwmaster"
	master := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.Port()))
	sentinel := redistest.StartSentinel(t, name, master)
	ctx := context.Background()
	waitUntil(t, "replica in sync and known to the sentinel", func() error {
		if info := replica.Client().Info(ctx, "replication").Val(); !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica not in sync")
		}
		replicas := fmt.Sprint(sentinel.Client().Do(ctx, "SENTINEL", "REPLICAS", name).Val())
		if !strings.Contains(replicas, fmt.Sprint(replica.Port())) || strings.Contains(replicas, "s_down") || strings.Contains(replicas, "disconnected") {
			return fmt.Errorf("sentinel replicas: %s", replicas)
		}
		return nil
	})

	f := startFleet(t, 2, "nonce_store redis {\n addresses "+sentinel.Addr()+"\n master_name "+name+"\n }")
	before := f.mint(t)
	if resp := f.instances[0].PostURL(t, "demo", before); resp.StatusCode != http.StatusOK {
		t.Fatalf("token before failover: status %d body %s, want 200", resp.StatusCode, resp.Body)
	}
	if n := master.Do("WAIT", 1, 5000); n != int64(1) {
		t.Fatalf("WAIT = %v, want 1 replica", n)
	}
	var asked time.Time
	failover := func() error {
		asked = time.Now()
		return sentinel.Client().Do(ctx, "SENTINEL", "FAILOVER", name).Err()
	}
	waitUntil(t, "SENTINEL FAILOVER", failover)
	waitUntil(t, "replica promoted", func() error {
		addr := sentinel.Client().Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name).Val()
		if strings.Contains(fmt.Sprint(addr), fmt.Sprint(replica.Port())) {
			return nil
		}
		// A failover that outlives its failover-timeout (5s; a busy machine can miss it)
		// is aborted, and sentinel does not retry a manual one: ask again once the last
		// attempt is surely over, never while it may still complete.
		if time.Since(asked) > 6*time.Second {
			if err := failover(); err != nil {
				return fmt.Errorf("master is %v; SENTINEL FAILOVER again: %v", addr, err)
			}
		}
		return fmt.Errorf("master is %v", addr)
	})
	// each instance serves again, writing to the new master (until the switch is complete a
	// request may get 503, or land on the old master before it is demoted)
	for i, c := range f.instances {
		waitUntil(t, fmt.Sprintf("instance %d writing to the new master", i), func() error {
			before := replica.Client().DBSize(ctx).Val()
			resp := c.PostURL(t, "demo", f.mint(t))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d %s", resp.StatusCode, code(resp))
			}
			if after := replica.Client().DBSize(ctx).Val(); after != before+1 {
				return fmt.Errorf("the promoted replica did not receive the claim")
			}
			return nil
		})
		if resp := c.PostURL(t, "demo", before); resp.StatusCode != http.StatusConflict {
			t.Errorf("replay at instance %d of a token accepted before the failover: status %d, want 409", i, resp.StatusCode)
		}
	}
}

func waitUntil(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after 30s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterStalledNodeAnswers503: a Cluster master that stops answering in the middle of
// a claim gets the request 503 nonce_store_unavailable, never 409 token_replayed, and the
// claim is sent once. The stalled node applies the claim when it wakes; had the gateway
// re-sent it (go-redis's cluster client retries timeouts), the retry would find that key
// and call the fresh token a replay. The nodes' own count of SET commands (the claim) shows
// a re-send whatever the timing, where a bound on the answer's time would measure the
// machine.
func TestClusterStalledNodeAnswers503(t *testing.T) {
	nodes := redistest.StartCluster(t, 3, "--enable-debug-command", "yes")
	const readTimeout = 300 * time.Millisecond
	f := startFleet(t, 1, "nonce_store redis {\n addresses "+nodes[0].Addr()+"\n read_timeout 300ms\n }")
	c := f.instances[0]
	// connect to every master before the stall
	for i := range 20 {
		if resp := c.PostURL(t, "demo", f.mint(t)); resp.StatusCode != http.StatusOK {
			t.Fatalf("warm-up token %d: status %d body %s, want 200", i, resp.StatusCode, resp.Body)
		}
	}
	before := setCalls(t, nodes)
	// every master stalls, so whichever serves the nonce's slot does
	var stalls []<-chan struct{}
	for _, n := range nodes {
		stalls = append(stalls, n.Stall(4*readTimeout))
	}
	tok := f.mint(t)
	resp := c.PostURL(t, "demo", tok)
	for _, s := range stalls {
		<-s
	}
	if resp.StatusCode != http.StatusServiceUnavailable || code(resp) != "nonce_store_unavailable" {
		t.Fatalf("token during the stall: status %d code %q, want 503 nonce_store_unavailable", resp.StatusCode, code(resp))
	}
	if n := len(f.up.Requests()); n != 20 {
		t.Errorf("upstream received %d requests, want the 20 warm-up ones", n)
	}
	// The woken nodes run what was sent to them during the stall before they answer a
	// command sent after it, so after one round trip to each, the count is final.
	for _, n := range nodes {
		if err := n.Client().Ping(context.Background()).Err(); err != nil {
			t.Fatalf("PING %s after the stall: %v", n.Addr(), err)
		}
	}
	if sent := setCalls(t, nodes) - before; sent > 1 {
		t.Errorf("the masters ran %d SET commands for the one token sent during the stall, want at most 1: the claim was re-sent", sent)
	}
}

// setCalls returns how many SET commands the nodes have run in all (INFO commandstats).
func setCalls(t *testing.T, nodes []*redistest.Server) int64 {
	t.Helper()
	var sum int64
	for _, n := range nodes {
		info, err := n.Client().Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatalf("INFO commandstats at %s: %v", n.Addr(), err)
		}
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_set:calls="); ok {
				calls, _, _ := strings.Cut(rest, ",")
				v, err := strconv.ParseInt(calls, 10, 64)
				if err != nil {
					t.Fatalf("INFO commandstats at %s: %q: %v", n.Addr(), line, err)
				}
				sum += v
			}
		}
	}
	return sum
}
