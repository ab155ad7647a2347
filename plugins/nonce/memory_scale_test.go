package nonce

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMemoryScale is the memory store at 10k, 1M and 5M live nonces (issue 29, goal
// 4): what a nonce costs in heap, what a sweep costs and how long it holds a shard's lock,
// and what a sweep does to the latency of the claims that run beside it. Each size is
// filled once per run of its function; run it with -benchtime 1x (ns/op is then one sweep
// pass, the same as sweep-ms):
//
//	go test -run '^$' -bench BenchmarkMemoryScale -benchtime 1x -timeout 30m ./plugins/nonce/
//
// Metrics:
//   - bytes/nonce: Go heap after GC, before and after filling, per live nonce;
//   - sweep-ms: one sweep pass over the live nonces, none expired (the usual pass);
//   - sweep-expired10-ms: one pass where 10% of them have expired and are removed;
//   - lock-hold-max-us: the longest any one shard's lock is held by a pass, none expired
//     (the largest shard's pass, timed alone: see maxShardSweep);
//   - claim-p50-us, claim-p99-us, claim-p999-us: claims of fresh nonces while a sweep
//     runs in a loop. During a pass about one claim in 256 (the shards) meets the shard
//     being swept and waits for its lock, so the 99th percentile sits on the edge of those
//     waits and jumps between runs; the 99.9th shows them;
//   - claim-p50-idle-us, claim-p99-idle-us, claim-p999-idle-us: the same claims with no
//     sweep running;
//   - claimers: the goroutines claiming (GOMAXPROCS-1, at least 1, so that claimers and
//     the sweeper do not queue for a core and the latency is the store's, not the
//     scheduler's).
func BenchmarkMemoryScale(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{
		{"10k", 10_000},
		{"1M", 1_000_000},
		{"5M", 5_000_000},
	} {
		b.Run("live="+size.name, func(b *testing.B) {
			benchmarkMemoryScale(b, size.n)
		})
	}
}

// Times of the scale benchmark's fake clock, from its start: the fill's nonces live an
// hour, but one in ten expires after ten minutes; the claims' nonces live a minute past
// the clock of their phase, so that a sweep after the phase removes exactly them.
const (
	scaleLive      = time.Hour
	scaleShortLive = 10 * time.Minute
	scaleClaimLive = time.Minute
)

// scaleClaims is how many claims each claimer makes with no sweep running, and at least
// how many beside the sweeps: enough samples for a stable 99th percentile.
const scaleClaims = 20_000

// scaleSweepPasses is the fewest whole sweep passes the claims run beside.
const scaleSweepPasses = 3

func benchmarkMemoryScale(b *testing.B, n int) {
	clk := newFakeClock()
	t0 := clk.Now()
	claimers := max(1, runtime.GOMAXPROCS(0)-1)
	// room above n for the claims measured below: the limit is reached only where the
	// end of this function checks it
	s := newMemoryState(2*n+10*scaleClaims*claimers, clk.Now)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fillScale(b, s, "fill", n, func(i int) time.Time {
		if i%10 == 0 {
			return t0.Add(scaleShortLive)
		}
		return t0.Add(scaleLive)
	})
	runtime.GC()
	runtime.ReadMemStats(&after)
	bytesPerNonce := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)

	// the usual pass: everything live, nothing removed
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		s.sweep()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	// after ResetTimer, which drops the metrics reported before it
	b.ReportMetric(bytesPerNonce, "bytes/nonce")
	if got := s.count.Load(); got != int64(n) {
		b.Fatalf("entries after sweeps with none expired = %d, want %d", got, n)
	}
	b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "sweep-ms")
	b.ReportMetric(float64(maxShardSweep(s).Nanoseconds())/1000, "lock-hold-max-us")

	// one in ten has expired
	clk.Advance(scaleShortLive + time.Minute)
	start = time.Now()
	s.sweep()
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "sweep-expired10-ms")
	expired := int64((n + 9) / 10)
	if got := s.count.Load(); got != int64(n)-expired {
		b.Fatalf("entries after the sweep with 10%% expired = %d, want %d", got, int64(n)-expired)
	}
	// back to n live nonces for the claims
	fillScale(b, s, "refill", int(expired), func(int) time.Time { return t0.Add(scaleLive) })

	b.ReportMetric(float64(claimers), "claimers")
	idle := claimLatencies(b, s, clk, "idle", claimers, false)
	b.ReportMetric(percentileMicros(idle, 500), "claim-p50-idle-us")
	b.ReportMetric(percentileMicros(idle, 990), "claim-p99-idle-us")
	b.ReportMetric(percentileMicros(idle, 999), "claim-p999-idle-us")
	dropClaims(b, s, clk, n)

	sweeping := claimLatencies(b, s, clk, "sweeping", claimers, true)
	b.ReportMetric(percentileMicros(sweeping, 500), "claim-p50-us")
	b.ReportMetric(percentileMicros(sweeping, 990), "claim-p99-us")
	b.ReportMetric(percentileMicros(sweeping, 999), "claim-p999-us")
	dropClaims(b, s, clk, n)

	// the documented behaviour at the limit: a full store refuses a fresh nonce (fail
	// closed) and keeps the ones it holds, shown at this size too (TestMemoryFull is the
	// small, deterministic test of it)
	s.setLimits(n, defaultSweepInterval)
	e := Entry{Partner: "acme", Nonce: "nonce-scale-at-the-limit", Until: clk.Now().Add(scaleClaimLive)}
	if fresh, err := s.claim(e); fresh || !errors.Is(err, ErrFull) {
		b.Fatalf("claim at max_entries %d = %v, %v, want false, ErrFull", n, fresh, err)
	}
	if fresh, err := s.claim(Entry{Partner: "acme", Nonce: scaleNonce("fill", 1), Until: clk.Now().Add(scaleClaimLive)}); fresh || err != nil {
		b.Fatalf("replay of a held nonce at max_entries = %v, %v, want false, nil", fresh, err)
	}
	runtime.KeepAlive(s)
}

// fillScale claims n fresh nonces, the i-th live until until(i).
func fillScale(b *testing.B, s *memoryState, prefix string, n int, until func(i int) time.Time) {
	b.Helper()
	for i := range n {
		if fresh, err := s.claim(Entry{Partner: "acme", Nonce: scaleNonce(prefix, i), Until: until(i)}); err != nil || !fresh {
			b.Fatalf("filling: claim %d = %v, %v, want true, nil", i, fresh, err)
		}
	}
}

// scaleNonce is the i-th nonce of a series, 16..256 characters as a partner's are.
func scaleNonce(prefix string, i int) string {
	var buf [64]byte
	out := append(buf[:0], "nonce-scale-"...)
	out = append(out, prefix...)
	out = append(out, '-')
	return string(strconv.AppendInt(out, int64(i), 10))
}

// maxShardSweep returns the longest the store's own sweep takes over one shard, which is
// how long it holds that shard's lock: each shard is swept alone by a copy of the state
// that holds only that shard's map (its 63 other locks, taken and released uncontended, add
// well under a microsecond). The shards are swept in order, as a pass does, so that each
// meets the cache as the real pass leaves it; that is done three times and each shard's
// time is its least, so that a pass another process's work preempted (this is a shared
// machine) does not stand for the store. Nothing must have expired, so that nothing is
// removed.
func maxShardSweep(s *memoryState) time.Duration {
	var shortest [memoryShards]time.Duration
	for round := range 3 {
		for i := range s.shards {
			probe := &memoryState{now: s.now}
			probe.shards[i].m = s.shards[i].m
			start := time.Now()
			probe.sweep()
			if d := time.Since(start); round == 0 || d < shortest[i] {
				shortest[i] = d
			}
		}
	}
	return slices.Max(shortest[:])
}

// claimLatencies has claimers goroutines claim fresh nonces and returns each claim's
// latency. Without sweeping each makes scaleClaims claims; with it a sweep runs in a loop
// beside them, and they claim until each has made scaleClaims and the sweep has made
// scaleSweepPasses whole passes.
func claimLatencies(b *testing.B, s *memoryState, clk *fakeClock, phase string, claimers int, sweeping bool) []time.Duration {
	b.Helper()
	until := clk.Now().Add(scaleClaimLive)
	var passes atomic.Int64
	stop := make(chan struct{})
	var sweeper sync.WaitGroup
	if sweeping {
		sweeper.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.sweep()
				passes.Add(1)
			}
		})
	}
	enough := func(claimed int) bool {
		return claimed >= scaleClaims && (!sweeping || passes.Load() >= scaleSweepPasses)
	}
	lat := make([][]time.Duration, claimers)
	var wg sync.WaitGroup
	for g := range claimers {
		wg.Go(func() {
			prefix := phase + "-" + strconv.Itoa(g)
			l := make([]time.Duration, 0, scaleClaims)
			for i := 0; !enough(i); i++ {
				e := Entry{Partner: "acme", Nonce: scaleNonce(prefix, i), Until: until}
				start := time.Now()
				fresh, err := s.claim(e)
				l = append(l, time.Since(start))
				if err != nil || !fresh {
					b.Errorf("%s claim %d = %v, %v, want true, nil", phase, i, fresh, err)
					return
				}
			}
			lat[g] = l
		})
	}
	wg.Wait()
	close(stop)
	sweeper.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return slices.Concat(lat...)
}

// dropClaims removes a phase's claims, so that the next phase starts from the n live
// nonces of the fill: their nonces expire a minute after the phase's clock, the fill's
// far later.
func dropClaims(b *testing.B, s *memoryState, clk *fakeClock, n int) {
	b.Helper()
	clk.Advance(2 * scaleClaimLive)
	s.sweep()
	if got := s.count.Load(); got != int64(n) {
		b.Fatalf("entries after dropping the claims = %d, want %d", got, n)
	}
}

// percentileMicros returns the permille-th per-mille of d in microseconds (nearest rank).
func percentileMicros(d []time.Duration, permille int) float64 {
	slices.Sort(d)
	i := (len(d)*permille+999)/1000 - 1
	return float64(d[max(i, 0)].Nanoseconds()) / 1000
}
