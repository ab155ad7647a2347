package nonce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterBatches batches a Cluster's claims per master: the claims for one master that
// wait at the same moment go to it as one pipeline, on that master's own client, as a
// single server's do (redis_batch.go). The Cluster client's pipeline is not used, because
// it re-sends the commands of a node whose connection failed; a node's own client has
// MaxRetries -1 and sends each command once. Before this a Cluster claim was one round trip
// of its own, which cost about 60 µs of gateway CPU and four times the Redis CPU of a
// batched claim (docs/performance.md).
//
// A master answers MOVED or ASK for a claim whose slot is no longer (or not yet) its own,
// and a demoted one READONLY, without running it; such a claim, and one whose node client
// was closed before sending (the Cluster dropped the node), is sent again through the
// Cluster client, which follows the redirect and reloads the slot map. That is no re-send:
// no node ran it. Every other error fails the claim, as on a single server.
type clusterBatches struct {
	client   *redis.ClusterClient
	mu       sync.Mutex   // held to add or retire a node's batcher
	nodes    sync.Map     // *redis.Client → *nodeBatcher
	closed   bool         // under mu: no batcher may be added
	rerouted atomic.Int64 // claims sent again after MOVED, ASK or a closed node client
}

// nodeBatcher is the batcher of one master, with when it was last used, so that the
// batcher of a node that is no longer a master can be retired once it is idle.
type nodeBatcher struct {
	*batcher
	used atomic.Int64 // Unix ns
}

func newClusterBatches(client *redis.ClusterClient) *clusterBatches {
	return &clusterBatches{client: client}
}

// do sends the claim cmd on key once, batched with the claims for the same master, and
// waits for its reply. When it returns an error, cmd must not be read.
func (cb *clusterBatches) do(ctx context.Context, key string, cmd redis.Cmder) error {
	node, err := cb.client.MasterForKey(ctx, key)
	if err != nil {
		// No slot map (the Cluster cannot be reached or is loading): the Cluster client
		// sends it alone and answers with its error, as before batching.
		_ = cb.client.Process(ctx, cmd)
		return nil
	}
	b := cb.batcher(node)
	if b == nil {
		return errStoreClosed
	}
	if err := b.do(ctx, cmd); err != nil {
		return err
	}
	if notRun(cmd.Err()) {
		cb.rerouted.Add(1)
		_ = cb.client.Process(ctx, cmd)
	}
	return nil
}

// notRun reports a reply that says no node ran the command: a redirect, a master demoted
// to a replica (READONLY), or a client that was closed before it sent anything.
func notRun(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "READONLY") ||
		errors.Is(err, redis.ErrClosed)
}

// batcher returns node's batcher, started on first use; nil once closed.
func (cb *clusterBatches) batcher(node *redis.Client) *nodeBatcher {
	now := time.Now().UnixNano()
	if v, ok := cb.nodes.Load(node); ok {
		b := v.(*nodeBatcher)
		b.used.Store(now)
		return b
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.closed {
		return nil
	}
	v, ok := cb.nodes.Load(node)
	if !ok {
		v = &nodeBatcher{batcher: newBatcher(node)}
		cb.nodes.Store(node, v)
	}
	b := v.(*nodeBatcher)
	b.used.Store(now)
	return b
}

// retire stops the batchers of nodes that are not among masters and have not been used
// since idleSince: the Cluster moved their slots away or dropped them. A claim that took
// such a batcher at the last moment fails closed (503).
func (cb *clusterBatches) retire(masters map[*redis.Client]bool, idleSince time.Time) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	cb.nodes.Range(func(k, v any) bool {
		b := v.(*nodeBatcher)
		if !masters[k.(*redis.Client)] && b.used.Load() < idleSince.UnixNano() {
			cb.nodes.Delete(k)
			b.close()
		}
		return true
	})
}

// close stops every batcher; claims still waiting fail with errStoreClosed.
func (cb *clusterBatches) close() {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	cb.closed = true
	cb.nodes.Range(func(k, v any) bool {
		cb.nodes.Delete(k)
		v.(*nodeBatcher).close()
		return true
	})
}
