package nonce

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/partnergate/partnergate/internal/benchcpu"
	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

func benchRedisStore(b *testing.B, guard bool) (*Redis, *redistest.Server) {
	b.Helper()
	srv := redistest.Start(b)
	r := &Redis{Address: srv.Addr(), RequireCleanStart: guard}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := r.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Cleanup(); cancel() })
	return r, srv
}

// BenchmarkRedisClaim is the store round trip of one fresh nonce against a local
// redis-server. Run with -cpu 1,2,8 to see the effect of concurrent requests.
func BenchmarkRedisClaim(b *testing.B) {
	for _, guard := range []bool{false, true} {
		b.Run(fmt.Sprintf("require_clean_start=%v", guard), func(b *testing.B) {
			r, _ := benchRedisStore(b, guard)
			var seq atomic.Int64
			from := time.Now().Add(time.Hour) // after the guard's start
			until := time.Now().Add(time.Hour)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					e := Entry{Partner: "acme", Nonce: "nonce-bench-" + strconv.FormatInt(seq.Add(1), 10), AcceptableFrom: from, Until: until}
					if fresh, err := r.Claim(ctx, e); err != nil || !fresh {
						b.Fatalf("Claim = %v, %v", fresh, err)
					}
				}
			})
		})
	}
}

// BenchmarkRedisClaimLoad drives the store with a fixed number of concurrent clients for
// a fixed number of claims and reports throughput, the p50/p99 latency of one claim and
// the CPU the gateway's side spends per claim (cpu-ns/op: this process, not Redis).
func BenchmarkRedisClaimLoad(b *testing.B) {
	for _, conc := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			r, _ := benchRedisStore(b, false)
			until := time.Now().Add(time.Hour)
			var seq atomic.Int64
			lat := make([][]time.Duration, conc)
			b.ResetTimer()
			cpu := benchcpu.Start(b)
			start := time.Now()
			var wg sync.WaitGroup
			per := (b.N + conc - 1) / conc
			for w := range conc {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					mine := make([]time.Duration, 0, per)
					for range per {
						e := Entry{Partner: "acme", Nonce: "nonce-load-" + strconv.FormatInt(seq.Add(1), 10), AcceptableFrom: until, Until: until}
						t0 := time.Now()
						if _, err := r.Claim(ctx, e); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					lat[w] = mine
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			cpu.Report(b)
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) == 0 {
				return
			}
			q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) }
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "claims/s")
			b.ReportMetric(q(0.50), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
		})
	}
}

// BenchmarkRedisMemoryPerKey reports Redis's used_memory per live nonce key, measured over
// 100,000 claims.
func BenchmarkRedisMemoryPerKey(b *testing.B) {
	r, srv := benchRedisStore(b, false)
	ctx := context.Background()
	used := func() float64 {
		info := srv.Client().Info(ctx, "memory").Val()
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, _ := strconv.ParseFloat(v, 64)
				return n
			}
		}
		b.Fatal("used_memory not in INFO memory")
		return 0
	}
	const n = 100_000
	until := time.Now().Add(time.Hour)
	for i := 0; i < b.N; i++ {
		srv.Do("FLUSHALL")
		before := used()
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < n; j += 16 {
					if _, err := r.Claim(ctx, Entry{Partner: "acme", Nonce: fmt.Sprintf("nonce-mem-%016d", j), Until: until}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if got := srv.Client().DBSize(ctx).Val(); got != n {
			b.Fatalf("DBSIZE = %d, want %d", got, n)
		}
		b.ReportMetric((used()-before)/n, "bytes/key")
	}
}

// BenchmarkMemoryBytesPerEntry reports the memory store's heap bytes per live nonce over
// a million entries (TestMemoryBytesPerEntry asserts the bound).
func BenchmarkMemoryBytesPerEntry(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.ReportMetric(measureBytesPerEntry(1_000_000), "bytes/entry")
	}
}
