package nonce

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Claims that wait at the same moment go to Redis together, as one pipeline: one write and
// one read for all of them instead of one each. On a busy gateway the socket calls of a
// round trip cost more CPU than anything else in a claim (docs/performance.md). A lane
// that takes a claim first lets the requests that are ready to run go on (most are about
// to claim too), and while its pipeline is on the wire the next claims queue up behind
// it, so the batches grow with the load; an idle gateway sends each claim at once, alone.
//
// This is what go-redis's AutoPipeline does, but AutoPipeline is experimental and may
// send a command again after a failed write, which turns a fresh token's SET NX into a
// false replay. Here nothing is ever sent twice: the client has MaxRetries -1, and a batch
// that fails fails every claim in it (503 nonce_store_unavailable; its nonces may or may not
// be stored, exactly as when a lone claim's reply is lost). Commands of one pipeline run in
// order on one connection, so two claims of the same nonce in one batch are still one
// fresh and one replayed.
//
// A Cluster batches per master, each on the master's own client (redis_cluster_batch.go):
// the Cluster client's pipeline re-sends the commands of a node whose connection failed.
const (
	// batchLanes is the number of pipelines that may be on the wire at once. One lane
	// batches best, but would queue every claim behind a slow round trip; two keep
	// claims moving while one pipeline waits.
	batchLanes = 2
	// maxBatch caps the claims in one pipeline, to bound one round trip's size and time.
	maxBatch = 128
	// batchQueue is how many claims may wait for a lane before Claim blocks (until its
	// context ends).
	batchQueue = 1024
)

// errStoreClosed is the answer to claims made while or after the client is closed.
var errStoreClosed = errors.New("redis nonce store closed")

// batcher sends queued commands through lanes, each taking what has queued since its last
// round trip.
type batcher struct {
	client *redis.Client
	queue  chan *queued
	stop   chan struct{}
	lanes  sync.WaitGroup

	roundTrips atomic.Int64 // round trips made, for tests and the performance notes
}

// queued is one command waiting for its reply. done is closed when cmd holds the reply or
// the error that stands for it; until then the waiter must not touch cmd.
type queued struct {
	ctx  context.Context
	cmd  redis.Cmder
	err  error // set instead of sending, when the claim's context ended before a lane took it
	done chan struct{}
}

func newBatcher(client *redis.Client) *batcher {
	b := &batcher{client: client, queue: make(chan *queued, batchQueue), stop: make(chan struct{})}
	for range batchLanes {
		b.lanes.Add(1)
		go b.lane()
	}
	return b
}

// do sends cmd, alone or with others, and waits for its reply. It returns an error instead
// when ctx ends or the batcher closes first; cmd must then not be read, as its reply may
// still arrive.
func (b *batcher) do(ctx context.Context, cmd redis.Cmder) error {
	q := &queued{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	select {
	case b.queue <- q:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stop:
		return errStoreClosed
	}
	select {
	case <-q.done:
		return q.err
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stop:
		// no lane may take it any more; a reply that came first still counts
		select {
		case <-q.done:
			return q.err
		default:
			return errStoreClosed
		}
	}
}

// close stops the lanes once their round trips are over; the claims still waiting fail
// with errStoreClosed. The client is closed after it.
func (b *batcher) close() {
	close(b.stop)
	b.lanes.Wait()
}

func (b *batcher) lane() {
	defer b.lanes.Done()
	batch := make([]*queued, 0, maxBatch)
	cmds := make([]redis.Cmder, 0, maxBatch)
	for {
		select {
		case <-b.stop:
			return
		case q := <-b.queue:
			batch = append(batch[:0], q)
		}
		// Let the goroutines that are ready to run go first: on a busy gateway they are
		// requests about to claim, and their claims join this round trip. On an idle one
		// there are none, and Gosched returns at once.
		runtime.Gosched()
	fill:
		for len(batch) < maxBatch {
			select {
			case q := <-b.queue:
				batch = append(batch, q)
			default:
				break fill
			}
		}
		b.send(batch, cmds[:0])
		clear(batch) // let the finished claims go
	}
}

// send makes one round trip for the claims of batch that are still wanted. A claim whose
// request has ended is not sent: its nonce stays unclaimed.
func (b *batcher) send(batch []*queued, cmds []redis.Cmder) {
	live := batch[:0]
	for _, q := range batch {
		if err := q.ctx.Err(); err != nil {
			q.finish(err)
			continue
		}
		live = append(live, q)
		cmds = append(cmds, q.cmd)
	}
	if len(live) == 0 {
		return
	}
	b.roundTrips.Add(1)
	// The round trip is bounded by the client's read and write timeouts, not by one
	// claim's context: a claim whose request ends meanwhile stops waiting (do), the others
	// still get their replies.
	ctx := context.Background()
	if len(cmds) == 1 {
		_ = b.client.Process(ctx, cmds[0])
	} else {
		pipe := b.client.Pipeline()
		for _, c := range cmds {
			_ = pipe.Process(ctx, c)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own reply or error
	}
	for _, q := range live {
		q.finish(nil)
	}
	clear(cmds)
}

func (q *queued) finish(err error) {
	q.err = err
	close(q.done)
}
