package nonce

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
				entries[i] = liveEntry("acme", fmt.Sprintf("nonce-cluster-%08d", i))
				// issued after the guard's start (markers are written when the store starts)
				entries[i].IssuedAt = entries[i].IssuedAt.Add(2 * DefaultCleanStartLeeway)
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
		if n := replica.Client().Exists(ctx, DefaultKeyPrefix+bucket+hash).Val(); n != 1 {
			return fmt.Errorf("claim not on the promoted replica")
		}
		return nil
	})
	if fresh, err := claimCtx(t, r, before); err != nil || fresh {
		t.Errorf("replay of a nonce claimed before failover = %v, %v, want false, nil", fresh, err)
	}
}
