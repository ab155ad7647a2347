package nonce

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

func TestRedisCluster(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	for _, guard := range []bool{false, true} {
		t.Run(fmt.Sprintf("require_clean_start=%v", guard), func(t *testing.T) {
			prefix := fmt.Sprintf("cluster-%v:", guard)
			// two gateways seeded with different nodes, as two instances would be
			a := &Redis{Addresses: []string{nodes[0].Addr()}, KeyPrefix: prefix, RequireCleanStart: guard}
			b := &Redis{Addresses: []string{nodes[1].Addr(), nodes[2].Addr()}, KeyPrefix: prefix, RequireCleanStart: guard}
			provisionRedis(t, a)
			provisionRedis(t, b)
			if err := a.Ping(context.Background()); err != nil {
				t.Fatalf("Ping = %v, want nil", err)
			}
			const n = 200
			entries := make([]Entry, n)
			for i := range entries {
				entries[i] = pastGuardStart(liveEntry("acme", fmt.Sprintf("nonce-cluster-%08d", i)))
			}
			for i, e := range entries {
				fresh, err := claimCtx(t, a, e)
				if err != nil || !fresh {
					t.Fatalf("a.Claim(%d) = %v, %v, want true, nil", i, fresh, err)
				}
			}
			for i, e := range entries {
				fresh, err := claimCtx(t, b, e)
				if err != nil || fresh {
					t.Fatalf("replay at b of claim %d = %v, %v, want false, nil", i, fresh, err)
				}
			}
			// the keys are spread over the slots of every master, so replays were
			// rejected across slots and nodes
			for _, node := range nodes {
				keys := node.Client().Keys(context.Background(), prefix+"{*}*").Val()
				nonceKeys := 0
				for _, k := range keys {
					if !strings.HasSuffix(k, "epoch") {
						nonceKeys++
					}
				}
				if nonceKeys == 0 {
					t.Errorf("node %s holds no nonce key, want the keys spread over every master", node.Addr())
				}
			}
		})
	}
}

func TestRedisSentinelFailover(t *testing.T) {
	const name = "pgmaster"
	master := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.Port()))
	sentinel := redistest.StartSentinel(t, name, master)
	ctx := context.Background()

	// the sentinel must know a replica in sync before it can fail over
	eventually(t, 30*time.Second, "replica in sync and known to the sentinel", func() error {
		if info := replica.Client().Info(ctx, "replication").Val(); !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica not in sync")
		}
		replicas := fmt.Sprint(sentinel.Client().Do(ctx, "SENTINEL", "REPLICAS", name).Val())
		if !strings.Contains(replicas, fmt.Sprint(replica.Port())) || strings.Contains(replicas, "s_down") || strings.Contains(replicas, "disconnected") {
			return fmt.Errorf("sentinel replicas: %s", replicas)
		}
		return nil
	})

	r := &Redis{Addresses: []string{sentinel.Addr()}, MasterName: name}
	provisionRedis(t, r)
	before := liveEntry("acme", "nonce-sentinel-before")
	if fresh, err := claimCtx(t, r, before); err != nil || !fresh {
		t.Fatalf("Claim before failover = %v, %v, want true, nil", fresh, err)
	}
	// replicated before the failover, as AOF and WAIT would make it in production
	if n := master.Do("WAIT", 1, 5000); n != int64(1) {
		t.Fatalf("WAIT = %v, want 1 replica", n)
	}

	eventually(t, 30*time.Second, "SENTINEL FAILOVER", func() error {
		return sentinel.Client().Do(ctx, "SENTINEL", "FAILOVER", name).Err()
	})
	eventually(t, 30*time.Second, "replica promoted", func() error {
		addr := sentinel.Client().Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name).Val()
		if !strings.Contains(fmt.Sprint(addr), fmt.Sprint(replica.Port())) {
			return fmt.Errorf("master is %v", addr)
		}
		return nil
	})

	// The store follows the new master by itself. Until the sentinel has demoted the old
	// master and go-redis has switched, claims may fail or still land on the old master
	// (the asynchronous failover window of docs/redis.md); then they are written to the
	// promoted replica.
	attempt := 0
	eventually(t, 30*time.Second, "claims written to the new master", func() error {
		attempt++
		e := liveEntry("acme", fmt.Sprintf("nonce-sentinel-after-%04d", attempt))
		fresh, err := claimCtx(t, r, e)
		if err != nil {
			return err
		}
		if !fresh {
			t.Fatal("claim of a new nonce after failover was not fresh")
		}
		bucket, hash := redisKeyParts(e.Partner, e.Nonce)
		if n := replica.Client().Exists(ctx, defaultKeyPrefix+bucket+hash).Val(); n != 1 {
			return fmt.Errorf("claim not on the promoted replica")
		}
		return nil
	})
	if fresh, err := claimCtx(t, r, before); err != nil || fresh {
		t.Errorf("replay of a nonce claimed before failover = %v, %v, want false, nil", fresh, err)
	}
}

// TestRedisClusterNodeStalls: a master that stops answering in the middle of a claim (its
// process stopped, as an overloaded or stalled node) fails the claim with an error (503).
// The claim must never be re-sent: the node applies the first attempt when it wakes, so a
// re-sent SET NX would find the key that attempt wrote and answer "replayed" for a fresh
// token (409 instead of 503). The node counts the claims it ran once it wakes: exactly one.
func TestRedisClusterNodeStalls(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	const readTimeout = 300 * time.Millisecond
	for _, guard := range []bool{false, true} {
		t.Run(fmt.Sprintf("require_clean_start=%v", guard), func(t *testing.T) {
			prefix := fmt.Sprintf("stall-%v:", guard)
			r := &Redis{Addresses: []string{nodes[0].Addr()}, KeyPrefix: prefix, RequireCleanStart: guard,
				ReadTimeout: caddy.Duration(readTimeout), PingInterval: caddy.Duration(time.Hour)}
			provisionRedis(t, r)
			// connect to every master (and load the guard's script) before the stall
			for i := range 30 {
				e := pastGuardStart(liveEntry("acme", fmt.Sprintf("nonce-stall-warm-%04d", i)))
				if fresh, err := claimCtx(t, r, e); err != nil || !fresh {
					t.Fatalf("warm-up Claim = %v, %v, want true, nil", fresh, err)
				}
			}

			e := pastGuardStart(liveEntry("acme", "nonce-stall-0000001"))
			bucket, hash := redisKeyParts(e.Partner, e.Nonce)
			key := prefix + bucket + hash
			owner := masterFor(t, r, nodes, key)
			// the claim's own command: the guard's script runs its SET inside EVALSHA
			claimCmds := []string{"set"}
			if guard {
				claimCmds = []string{"evalsha", "eval"}
			}
			before := commandCalls(t, owner, claimCmds...)
			resume := owner.Pause()
			fresh, err := claimCtx(t, r, e)
			resume() // returns once the node has run what reached it while it was stopped
			if err == nil {
				t.Fatalf("Claim against a stalled master = %v, nil, want an error (503); a re-sent claim answers replayed for a fresh token", fresh)
			}
			if got := commandCalls(t, owner, claimCmds...) - before; got != 1 {
				t.Errorf("the stalled master ran the claim %d times once it woke, want once: the claim was re-sent", got)
			}
			if n := owner.Client().Exists(context.Background(), key).Val(); n != 1 {
				t.Errorf("EXISTS(claim key) after the stall = %d, want 1: the node applies the claim when it wakes", n)
			}
			// the other nodes may have marked the stopped one as failing: wait for the
			// cluster to be whole again before the next subtest
			for _, n := range nodes {
				eventually(t, 30*time.Second, "cluster_state:ok after the stall", func() error {
					if info := n.Client().ClusterInfo(context.Background()).Val(); !strings.Contains(info, "cluster_state:ok") {
						return fmt.Errorf("node %s: cluster not ok", n.Addr())
					}
					return nil
				})
			}
		})
	}
}

// TestRedisClusterBatchesPerMaster: on a Cluster, the claims for one master made while its
// lanes are on the wire go to it together, each sent once and to that master only, with
// its own answer, as on a single server.
func TestRedisClusterBatchesPerMaster(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	r := &Redis{Addresses: []string{nodes[0].Addr()}, KeyPrefix: "batch:",
		ReadTimeout: caddy.Duration(time.Minute), PingInterval: caddy.Duration(time.Hour)}
	provisionRedis(t, r)
	target := nodes[1]
	// onTarget makes a nonce of name whose key the target serves.
	onTarget := func(name string) string {
		for i := 0; ; i++ {
			n := fmt.Sprintf("%s-%d", name, i)
			bucket, hash := redisKeyParts("acme", n)
			if masterFor(t, r, nodes, r.KeyPrefix+bucket+hash) == target {
				return n
			}
		}
	}
	warm := onTarget("nonce-warm")
	if fresh, err := claimCtx(t, r, liveEntry("acme", warm)); err != nil || !fresh {
		t.Fatalf("warm-up Claim = %v, %v, want true, nil", fresh, err)
	}
	bucket, hash := redisKeyParts("acme", warm)
	client, err := r.conn.client.(*redis.ClusterClient).MasterForKey(context.Background(), r.KeyPrefix+bucket+hash)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := r.conn.cluster.nodes.Load(client)
	if !ok {
		t.Fatalf("no batcher for the target master after a claim on it")
	}
	others := map[*redistest.Server]int{}
	for _, n := range nodes {
		if n != target {
			others[n] = setCalls(t, n)
		}
	}
	checkBatchesWaitingClaims(t, r, target, v.(*nodeBatcher).batcher, onTarget)
	for n, before := range others {
		if got := setCalls(t, n) - before; got != 0 {
			t.Errorf("master %s ran SET %d times for claims of another master's slots", n.Addr(), got)
		}
	}
	if n := r.conn.cluster.rerouted.Load(); n != 0 {
		t.Errorf("%d claims were redirected with a settled slot map, want 0", n)
	}
}

// masterFor returns the node that serves key.
func masterFor(t *testing.T, r *Redis, nodes []*redistest.Server, key string) *redistest.Server {
	t.Helper()
	cc, ok := r.conn.client.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("client is %T, want a cluster client", r.conn.client)
	}
	m, err := cc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatalf("MasterForKey: %v", err)
	}
	for _, n := range nodes {
		if n.Addr() == m.Options().Addr {
			return n
		}
	}
	t.Fatalf("no node serves %s", m.Options().Addr)
	return nil
}

// TestRedisClusterFollowsMoved: a claim whose slot moved to another master after the store
// loaded the slot map is redirected (MOVED) and lands there: the claim is sent at most once
// per node, but redirects are still followed.
func TestRedisClusterFollowsMoved(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	ctx := context.Background()
	ids := map[*redistest.Server]string{}
	for _, n := range nodes {
		ids[n] = n.Do("CLUSTER", "MYID").(string)
	}
	for _, guard := range []bool{false, true} {
		t.Run(fmt.Sprintf("require_clean_start=%v", guard), func(t *testing.T) {
			do := func(n *redistest.Server, args ...any) any {
				t.Helper()
				v, err := n.Client().Do(ctx, args...).Result()
				if err != nil {
					t.Fatalf("redis %v: %v", args, err)
				}
				return v
			}
			prefix := fmt.Sprintf("moved-%v:", guard)
			r := &Redis{Addresses: []string{nodes[0].Addr()}, KeyPrefix: prefix, RequireCleanStart: guard, PingInterval: caddy.Duration(time.Hour)}
			provisionRedis(t, r)
			if guard {
				eventually(t, 30*time.Second, "markers written", func() error {
					n := 0
					for _, node := range nodes {
						n += len(node.Client().Keys(ctx, prefix+"{*}epoch").Val())
					}
					if n != redisBuckets {
						return fmt.Errorf("%d markers, want %d", n, redisBuckets)
					}
					return nil
				})
			}
			// A nonce whose slot holds no key but its bucket's marker, which is deleted
			// (the claim writes it again), so that the slot moves by reassignment alone.
			var e Entry
			var key string
			var slot int64
			var from *redistest.Server
			for i := 0; ; i++ {
				e = pastGuardStart(liveEntry("acme", fmt.Sprintf("nonce-moved-%v-%06d", guard, i)))
				bucket, hash := redisKeyParts(e.Partner, e.Nonce)
				key = prefix + bucket + hash
				slot = do(nodes[0], "CLUSTER", "KEYSLOT", key).(int64)
				from = masterFor(t, r, nodes, key) // the store's slot map is loaded now
				do(from, "DEL", prefix+bucket+"epoch")
				if do(from, "CLUSTER", "COUNTKEYSINSLOT", slot) == int64(0) {
					break
				}
			}
			to := nodes[0]
			if to == from {
				to = nodes[1]
			}
			for _, n := range append([]*redistest.Server{to, from}, nodes...) {
				do(n, "CLUSTER", "SETSLOT", slot, "NODE", ids[to])
			}
			eventually(t, 30*time.Second, "slot moved", func() error {
				err := from.Client().Get(ctx, key).Err()
				if err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
					return fmt.Errorf("GET at the old master = %v, want MOVED", err)
				}
				return nil
			})

			rerouted := r.conn.cluster.rerouted.Load()
			if fresh, err := claimCtx(t, r, e); err != nil || !fresh {
				t.Fatalf("Claim after the slot moved = %v, %v, want true, nil", fresh, err)
			}
			// The old master's batch answers MOVED and the Cluster client follows it (with
			// the guard once more when the new master lacks the script: EVAL after NOSCRIPT).
			if n := r.conn.cluster.rerouted.Load() - rerouted; n == 0 {
				t.Errorf("no claim was sent again after MOVED: the claim did not go through the old master's batch")
			}
			if n := to.Client().Exists(ctx, key).Val(); n != 1 {
				t.Errorf("the claim is not on the slot's new master")
			}
			if fresh, err := claimCtx(t, r, e); err != nil || fresh {
				t.Errorf("replay = %v, %v, want false, nil", fresh, err)
			}
		})
	}
}

// TestRedisClusterRetiresBatchers: the batcher of a node that is no longer a master stops
// once it has been idle since the last ping; a master's, or one used since, stays.
func TestRedisClusterRetiresBatchers(t *testing.T) {
	cb := newClusterBatches(redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}))
	defer cb.client.Close()
	clients := make([]*redis.Client, 3)
	for i := range clients {
		clients[i] = redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		defer clients[i].Close()
	}
	master, gone, busy := cb.batcher(clients[0]), cb.batcher(clients[1]), cb.batcher(clients[2])
	lastPing := time.Now()
	gone.used.Store(lastPing.Add(-time.Second).UnixNano())
	master.used.Store(lastPing.Add(-time.Second).UnixNano())
	busy.used.Store(lastPing.Add(time.Millisecond).UnixNano())

	cb.retire(map[*redis.Client]bool{clients[0]: true}, lastPing)

	for _, tc := range []struct {
		name   string
		client *redis.Client
		b      *nodeBatcher
		kept   bool
	}{{"a master's", clients[0], master, true}, {"an idle former master's", clients[1], gone, false}, {"a former master's used since the ping", clients[2], busy, true}} {
		_, kept := cb.nodes.Load(tc.client)
		stopped := false
		select {
		case <-tc.b.stop:
			stopped = true
		default:
		}
		if kept != tc.kept || stopped == tc.kept {
			t.Errorf("%s batcher: kept %v, stopped %v; want kept %v", tc.name, kept, stopped, tc.kept)
		}
	}
	cb.close()
	if b := cb.batcher(clients[0]); b != nil {
		t.Errorf("batcher after close = %v, want nil", b)
	}
}
