package nonce

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

// setCalls is how many SET commands the server has run (INFO commandstats), to show that
// no claim was sent twice and none that should not have been sent was.
func setCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	return commandCalls(t, srv, "set")
}

// commandCalls is how many times the server has run the named commands, together (INFO
// commandstats).
func commandCalls(t *testing.T, srv *redistest.Server, names ...string) int {
	t.Helper()
	info, _ := srv.Do("INFO", "commandstats").(string)
	total := 0
	for _, name := range names {
		m := regexp.MustCompile(`cmdstat_` + regexp.QuoteMeta(name) + `:calls=(\d+)`).FindStringSubmatch(info)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total
}

// pause holds every client's writes in the server (CLIENT PAUSE WRITE) until the returned
// function is called, as a busy or distant Redis keeps a round trip on the wire.
func pause(t *testing.T, srv *redistest.Server) (unpause func()) {
	t.Helper()
	// SET waits; INFO and UNPAUSE still run. The server's own end of the pause is only a
	// backstop: the test unpauses when it has seen what it waits for.
	srv.Do("CLIENT", "PAUSE", 120000, "WRITE")
	var once sync.Once
	unpause = func() { once.Do(func() { srv.Do("CLIENT", "UNPAUSE") }) }
	t.Cleanup(unpause)
	return unpause
}

// warmStore starts a redis-server and a store on it with readTimeout, and makes one claim,
// so that the store has a connection open before a test holds the server's writes.
func warmStore(t *testing.T, readTimeout time.Duration) (*Redis, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr(), ReadTimeout: caddy.Duration(readTimeout)}
	provisionRedis(t, r)
	if r.conn.batch == nil {
		t.Fatal("a single-server store does not batch")
	}
	if fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-warm-"+t.Name())); err != nil || !fresh {
		t.Fatalf("Claim before the pause = %v, %v", fresh, err)
	}
	return r, srv
}

// waitRoundTrips waits until the store's batcher has made n round trips.
func waitRoundTrips(t *testing.T, r *Redis, n int64) {
	t.Helper()
	waitBatcherTrips(t, r.conn.batch, n)
}

func waitBatcherTrips(t *testing.T, b *batcher, n int64) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%d round trips on the wire", n), func() error {
		if got := b.roundTrips.Load(); got < n {
			return fmt.Errorf("%d round trips", got)
		}
		return nil
	})
}

// TestRedisBatchesWaitingClaims: claims made while the lanes' round trips are on the wire
// go out together, as one pipeline per lane, and each gets its own answer: the fresh
// nonces fresh, the second claim of a nonce replayed, in one batch as across batches.
func TestRedisBatchesWaitingClaims(t *testing.T) {
	r, srv := warmStore(t, time.Minute) // the lanes wait for the unpause, however long it takes
	checkBatchesWaitingClaims(t, r, srv, r.conn.batch, func(name string) string { return name })
}

// checkBatchesWaitingClaims holds srv's writes, fills b's lanes and queue with claims of
// the nonces that nonce makes of a name, and checks that they went out together, each
// sent once with its own answer.
func checkBatchesWaitingClaims(t *testing.T, r *Redis, srv *redistest.Server, b *batcher, nonce func(name string) string) {
	t.Helper()
	before := b.roundTrips.Load()
	calls := setCalls(t, srv)

	unpause := pause(t, srv)
	// Occupy both lanes with a round trip each, so that the next claims queue up.
	type result struct {
		fresh bool
		err   error
	}
	results := make(map[string][]result)
	var mu sync.Mutex
	var wg sync.WaitGroup
	claim := func(nonce string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fresh, err := claimCtx(t, r, liveEntry("acme", nonce))
			mu.Lock()
			results[nonce] = append(results[nonce], result{fresh, err})
			mu.Unlock()
		}()
	}
	// One at a time: two claims queued at the same moment could go out together on one lane.
	for i := range batchLanes {
		claim(nonce(fmt.Sprintf("nonce-batch-lane-%d", i)))
		waitBatcherTrips(t, b, before+int64(i)+1)
	}
	const distinct, twice = 40, 5
	nonces := make([]string, distinct)
	for i := range distinct {
		nonces[i] = nonce(fmt.Sprintf("nonce-batch-%02d", i))
		claim(nonces[i])
	}
	for i := range twice {
		claim(nonces[i]) // the same nonce again, likely in the same batch
	}
	// every claim is queued before the lanes come back
	eventually(t, 30*time.Second, "claims queued", func() error {
		if n := len(b.queue); n < distinct+twice {
			return fmt.Errorf("%d claims queued", n)
		}
		return nil
	})
	unpause()
	wg.Wait()

	for nonce, rs := range results {
		fresh := 0
		for _, res := range rs {
			if res.err != nil {
				t.Errorf("Claim(%s) error = %v", nonce, res.err)
			}
			if res.fresh {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("nonce %s claimed %d times: %d fresh answers, want 1", nonce, len(rs), fresh)
		}
	}
	trips := b.roundTrips.Load() - before
	claims := int64(batchLanes + distinct + twice)
	if trips > 2*batchLanes {
		t.Errorf("%d claims made while the lanes were busy took %d round trips, want at most %d", claims, trips, 2*batchLanes)
	}
	if got := setCalls(t, srv) - calls; got != int(claims) {
		t.Errorf("server ran SET %d times for %d claims, want each sent once", got, claims)
	}
	t.Logf("%d claims in %d round trips", claims, trips)
}

// TestRedisBatchFailsClosed: a batch whose replies do not come within the read timeout
// fails every claim in it, with an error and never as fresh, and nothing is sent again.
func TestRedisBatchFailsClosed(t *testing.T) {
	r, srv := warmStore(t, 300*time.Millisecond)
	calls := setCalls(t, srv)
	unpause := pause(t, srv)
	var wg sync.WaitGroup
	errs := make([]error, 30)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fresh bool
			fresh, errs[i] = claimCtx(t, r, liveEntry("acme", fmt.Sprintf("nonce-failclosed-%02d", i)))
			if fresh {
				t.Errorf("claim %d answered fresh from a paused server", i)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("claim %d against a paused server: no error", i)
		}
	}
	unpause()
	// The server runs what reached it once it is unpaused (a claim whose connection is
	// still open), at most one SET per claim. A claim made after the unpause came back is
	// run after the held ones: count then.
	attempts := 0
	eventually(t, 30*time.Second, "claims after the pause", func() error {
		attempts++
		_, err := claimCtx(t, r, liveEntry("acme", fmt.Sprintf("nonce-failclosed-after-%d", attempts)))
		return err
	})
	if got := setCalls(t, srv) - calls - attempts; got > len(errs) {
		t.Errorf("server ran SET %d times for %d failed claims: a claim was sent twice", got, len(errs))
	}
}

// TestRedisBatchRequestEnds: a claim whose request ends while it waits returns at once
// with the context's error, and when its request ended before a lane took it, it is
// never sent: its nonce stays unclaimed for the partner's next attempt.
func TestRedisBatchRequestEnds(t *testing.T) {
	r, srv := warmStore(t, time.Minute) // the lanes wait for the unpause, however long it takes
	before := r.conn.batch.roundTrips.Load()
	calls := setCalls(t, srv)
	unpause := pause(t, srv)
	var wg sync.WaitGroup
	// One lane at a time: two claims queued at the same moment could go out together.
	for i := range batchLanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := r.Claim(ctx, liveEntry("acme", fmt.Sprintf("nonce-ends-lane-%d", i))); err != nil {
				t.Errorf("lane claim %d: %v", i, err)
			}
		}()
		waitRoundTrips(t, r, before+int64(i)+1)
	}

	lanesDone := make(chan struct{})
	go func() { wg.Wait(); close(lanesDone) }()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	type result struct {
		fresh bool
		err   error
	}
	ended := make(chan result, 1)
	go func() {
		fresh, err := r.Claim(ctx, liveEntry("acme", "nonce-ends-late"))
		ended <- result{fresh, err}
	}()
	// The lanes are held until the unpause, so the claim's answer must come while they
	// still wait: it did not wait for a lane.
	select {
	case res := <-ended:
		if !errors.Is(res.err, context.DeadlineExceeded) || res.fresh {
			t.Errorf("Claim whose request ended while queued = %v, %v, want false and the deadline", res.fresh, res.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Claim whose request ended while queued did not return while the lanes were held")
	}
	select {
	case <-lanesDone:
		t.Fatal("the lanes' claims returned before the unpause; want them held, so that the ended claim's answer did not wait for one")
	default:
	}
	unpause()
	<-lanesDone
	// A lane takes the ended claim before this one (the queue is first in, first out).
	if fresh, err := claimCtx(t, r, liveEntry("acme", "nonce-ends-late")); err != nil || !fresh {
		t.Errorf("the ended request's nonce claimed again = %v, %v, want fresh: its first claim was sent", fresh, err)
	}
	if got := setCalls(t, srv) - calls; got != batchLanes+1 {
		t.Errorf("server ran SET %d times, want %d: the ended request's claim was sent", got, batchLanes+1)
	}
}
