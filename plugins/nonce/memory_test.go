package nonce

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// fakeClock is a settable clock for the stores' expiry logic.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func entry(clk *fakeClock, partner, nonce string) Entry {
	now := clk.Now()
	return Entry{Partner: partner, Nonce: nonce, AcceptableFrom: now, Until: now.Add(5*time.Minute + 30*time.Second)}
}

func TestMemoryClaim(t *testing.T) {
	clk := newFakeClock()
	s := newMemoryState(100, clk.Now)
	steps := []struct {
		name, partner, nonce string
		want                 bool
	}{
		{"first use is fresh", "acme", "nonce-0000000001", true},
		{"same partner and nonce is a replay", "acme", "nonce-0000000001", false},
		{"same nonce from another partner is fresh", "globex", "nonce-0000000001", true},
		{"and is then a replay there too", "globex", "nonce-0000000001", false},
		{"another nonce is fresh", "acme", "nonce-0000000002", true},
		// the partner is length-prefixed: ("ab", "c…") and ("a", "bc…") are different entries
		{"partner/nonce boundary ab|c", "ab", "cnonce-000000000", true},
		{"partner/nonce boundary a|bc", "a", "bcnonce-000000000", true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := s.claim(entry(clk, st.partner, st.nonce))
			if err != nil {
				t.Fatalf("claim(%q, %q) error = %v", st.partner, st.nonce, err)
			}
			if got != st.want {
				t.Errorf("claim(%q, %q) = %v, want %v", st.partner, st.nonce, got, st.want)
			}
		})
	}
}

func TestMemoryExpiry(t *testing.T) {
	clk := newFakeClock()
	s := newMemoryState(10, clk.Now)
	e := entry(clk, "acme", "nonce-expiring-0001")
	if fresh, err := s.claim(e); err != nil || !fresh {
		t.Fatalf("claim = %v, %v, want true, nil", fresh, err)
	}

	clk.Advance(e.Until.Sub(clk.Now()) - time.Nanosecond)
	if fresh, err := s.claim(e); err != nil || fresh {
		t.Fatalf("claim 1ns before Until = %v, %v, want false, nil", fresh, err)
	}
	s.sweep()
	if got := s.count.Load(); got != 1 {
		t.Fatalf("count after sweep before Until = %d, want 1", got)
	}

	clk.Advance(time.Nanosecond)
	s.sweep()
	if got := s.count.Load(); got != 0 {
		t.Fatalf("count after sweep at Until = %d, want 0", got)
	}
	if n := len(s.shards[int(s.key("acme", "nonce-expiring-0001")[0])%memoryShards].m); n != 0 {
		t.Fatalf("shard still holds %d entries after sweep", n)
	}

	t.Run("expired but unswept entry is reused", func(t *testing.T) {
		e := entry(clk, "acme", "nonce-expiring-0002")
		if fresh, _ := s.claim(e); !fresh {
			t.Fatal("first claim not fresh")
		}
		clk.Advance(e.Until.Sub(clk.Now()))
		e2 := entry(clk, "acme", "nonce-expiring-0002")
		if fresh, err := s.claim(e2); err != nil || !fresh {
			t.Fatalf("claim after Until without sweep = %v, %v, want true, nil", fresh, err)
		}
		if got := s.count.Load(); got != 1 {
			t.Errorf("count = %d, want 1 (slot reused, not added)", got)
		}
		if fresh, _ := s.claim(e2); fresh {
			t.Error("the re-recorded nonce is fresh again, want a replay")
		}
	})
}

func TestMemoryFull(t *testing.T) {
	clk := newFakeClock()
	s := newMemoryState(3, clk.Now)
	for i := range 3 {
		if fresh, err := s.claim(entry(clk, "acme", fmt.Sprintf("nonce-full-%08d", i))); err != nil || !fresh {
			t.Fatalf("claim %d = %v, %v, want true, nil", i, fresh, err)
		}
	}
	if fresh, err := s.claim(entry(clk, "acme", "nonce-full-overflow")); !errors.Is(err, ErrFull) || fresh {
		t.Fatalf("claim when full = %v, %v, want false, ErrFull", fresh, err)
	}
	// refusing is not evicting: every live nonce is still a replay
	for i := range 3 {
		if fresh, err := s.claim(entry(clk, "acme", fmt.Sprintf("nonce-full-%08d", i))); err != nil || fresh {
			t.Errorf("replay %d when full = %v, %v, want false, nil", i, fresh, err)
		}
	}
	// expiry frees the slots
	clk.Advance(6 * time.Minute)
	s.sweep()
	if fresh, err := s.claim(entry(clk, "acme", "nonce-full-overflow")); err != nil || !fresh {
		t.Fatalf("claim after expiry and sweep = %v, %v, want true, nil", fresh, err)
	}
}

func TestMemoryFullKicksSweeper(t *testing.T) {
	clk := newFakeClock()
	s := newMemoryState(1, clk.Now)
	s.startSweeper(time.Hour) // the ticker never fires during the test
	defer s.Destruct()
	if _, err := s.claim(entry(clk, "acme", "nonce-kick-000001")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(6 * time.Minute)
	time.Sleep(minKickGap) // the kick is ignored within minKickGap of the sweeper's start
	// the store is full of an expired entry; the refused claim asks for an early sweep
	deadline := time.Now().Add(10 * time.Second)
	for {
		fresh, err := s.claim(entry(clk, "acme", "nonce-kick-000002"))
		if err == nil && fresh {
			return
		}
		if !errors.Is(err, ErrFull) {
			t.Fatalf("claim = %v, %v, want true or ErrFull", fresh, err)
		}
		if time.Now().After(deadline) {
			t.Fatal("full store never swept its expired entry after a refused claim")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMemoryConcurrentSameNonce(t *testing.T) {
	clk := newFakeClock()
	s := newMemoryState(1000, clk.Now)
	var fresh atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := s.claim(entry(clk, "acme", "nonce-concurrent-01"))
			if err != nil {
				t.Errorf("claim error = %v", err)
			}
			if ok {
				fresh.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := fresh.Load(); got != 1 {
		t.Errorf("fresh claims of one nonce from 100 goroutines = %d, want 1", got)
	}
}

func TestMemoryConcurrentBound(t *testing.T) {
	clk := newFakeClock()
	s := newMemoryState(500, clk.Now)
	var fresh, full atomic.Int32
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				ok, err := s.claim(entry(clk, "acme", fmt.Sprintf("nonce-bound-%03d-%04d", g, i)))
				switch {
				case errors.Is(err, ErrFull):
					full.Add(1)
				case err != nil:
					t.Errorf("claim error = %v", err)
				case ok:
					fresh.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if fresh.Load() != 500 || full.Load() != 1500 || s.count.Load() != 500 {
		t.Errorf("fresh, full, held = %d, %d, %d, want 500, 1500, 500", fresh.Load(), full.Load(), s.count.Load())
	}
}

func provisionMemory(t *testing.T, m *Memory) caddy.Context {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := m.Provision(ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	return ctx
}

func TestMemoryReloadSharesState(t *testing.T) {
	ctx := context.Background()
	old := &Memory{MaxEntries: 77}
	provisionMemory(t, old)
	e := Entry{Partner: "acme", Nonce: "nonce-reload-00001", Until: time.Now().Add(time.Minute)}
	if fresh, err := old.Claim(ctx, e); err != nil || !fresh {
		t.Fatalf("old.Claim = %v, %v, want true, nil", fresh, err)
	}

	// a reload provisions the new config before cleaning up the old one
	reloaded := &Memory{MaxEntries: 77}
	provisionMemory(t, reloaded)
	if err := old.Cleanup(); err != nil {
		t.Fatalf("old.Cleanup: %v", err)
	}
	if fresh, err := reloaded.Claim(ctx, e); err != nil || fresh {
		t.Fatalf("Claim after reload = %v, %v, want false, nil (replay remembered)", fresh, err)
	}

	state := reloaded.state
	if err := reloaded.Cleanup(); err != nil {
		t.Fatalf("reloaded.Cleanup: %v", err)
	}
	select {
	case <-state.done:
	case <-time.After(5 * time.Second):
		t.Fatal("sweeper still running after the last Cleanup")
	}
	if _, ok := memoryPool.References(reloaded.poolKey); ok {
		t.Error("state still in the pool after the last Cleanup")
	}

	// after the last user is gone, a new provision starts empty
	fresh := &Memory{MaxEntries: 77}
	provisionMemory(t, fresh)
	defer fresh.Cleanup()
	if ok, err := fresh.Claim(ctx, e); err != nil || !ok {
		t.Fatalf("Claim on a new store = %v, %v, want true, nil", ok, err)
	}
}

func TestMemoryReloadWithNewLimitsKeepsNonces(t *testing.T) {
	ctx := context.Background()
	old := &Memory{MaxEntries: 2}
	provisionMemory(t, old)
	claimed := []Entry{
		{Partner: "acme", Nonce: "nonce-limits-000001", Until: time.Now().Add(time.Minute)},
		{Partner: "acme", Nonce: "nonce-limits-000002", Until: time.Now().Add(time.Minute)},
	}
	for _, e := range claimed {
		if fresh, err := old.Claim(ctx, e); err != nil || !fresh {
			t.Fatalf("Claim(%q) = %v, %v, want true, nil", e.Nonce, fresh, err)
		}
	}
	if _, err := old.Claim(ctx, Entry{Partner: "acme", Nonce: "nonce-limits-000003", Until: time.Now().Add(time.Minute)}); !errors.Is(err, ErrFull) {
		t.Fatalf("Claim beyond max_entries 2 = %v, want ErrFull", err)
	}

	// a reload that changes the limits must not forget the live nonces
	reloaded := &Memory{MaxEntries: 3, SweepInterval: caddy.Duration(time.Second)}
	provisionMemory(t, reloaded)
	defer reloaded.Cleanup()
	if err := old.Cleanup(); err != nil {
		t.Fatal(err)
	}
	for _, e := range claimed {
		if fresh, err := reloaded.Claim(ctx, e); err != nil || fresh {
			t.Errorf("replay of %q after a reload with new limits = %v, %v, want false, nil", e.Nonce, fresh, err)
		}
	}
	if fresh, err := reloaded.Claim(ctx, Entry{Partner: "acme", Nonce: "nonce-limits-000003", Until: time.Now().Add(time.Minute)}); err != nil || !fresh {
		t.Errorf("Claim within the new max_entries 3 = %v, %v, want true, nil", fresh, err)
	}
	if _, err := reloaded.Claim(ctx, Entry{Partner: "acme", Nonce: "nonce-limits-000004", Until: time.Now().Add(time.Minute)}); !errors.Is(err, ErrFull) {
		t.Errorf("Claim beyond the new max_entries 3 = %v, want ErrFull", err)
	}
	if got := time.Duration(reloaded.state.interval.Load()); got != time.Second {
		t.Errorf("sweep interval after reload = %s, want 1s", got)
	}
}

func TestMemoryProvisionDefaults(t *testing.T) {
	m := &Memory{}
	provisionMemory(t, m)
	defer m.Cleanup()
	if m.MaxEntries != defaultMaxEntries || time.Duration(m.SweepInterval) != defaultSweepInterval {
		t.Errorf("defaults = %d, %s, want %d, %s", m.MaxEntries, time.Duration(m.SweepInterval), defaultMaxEntries, defaultSweepInterval)
	}
}

func TestMemoryUnprovisioned(t *testing.T) {
	var m Memory
	if _, err := m.Claim(context.Background(), Entry{}); err == nil {
		t.Error("Claim on an unprovisioned store succeeded, want an error")
	}
	if err := m.Cleanup(); err != nil {
		t.Errorf("Cleanup of an unprovisioned store = %v, want nil", err)
	}
}

func TestMemoryValidate(t *testing.T) {
	tests := []struct {
		name string
		m    Memory
		ok   bool
	}{
		{"zero is default", Memory{}, true},
		{"set", Memory{MaxEntries: 5, SweepInterval: caddy.Duration(time.Second)}, true},
		{"negative max_entries", Memory{MaxEntries: -1}, false},
		{"negative sweep_interval", Memory{SweepInterval: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Validate()
			if (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok {
				m := tt.m
				ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
				defer cancel()
				if err := m.Provision(ctx); err == nil {
					m.Cleanup()
					t.Error("Provision accepted an invalid config")
				}
			}
		})
	}
}

func TestMemoryUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    Memory
		wantErr string
	}{
		{"bare", `memory`, Memory{}, ""},
		{"empty block", "memory {\n}", Memory{}, ""},
		{"all options", "memory {\n max_entries 5000\n sweep_interval 3s\n}", Memory{MaxEntries: 5000, SweepInterval: caddy.Duration(3 * time.Second)}, ""},
		{"argument after name", `memory big`, Memory{}, "wrong argument count"},
		{"unknown option", "memory {\n max 5\n}", Memory{}, `unknown memory nonce store option "max"`},
		{"duplicate option", "memory {\n max_entries 5\n max_entries 6\n}", Memory{}, `duplicate option "max_entries"`},
		{"max_entries missing", "memory {\n max_entries\n}", Memory{}, "wrong argument count"},
		{"max_entries two args", "memory {\n max_entries 1 2\n}", Memory{}, "wrong argument count"},
		{"max_entries not a number", "memory {\n max_entries lots\n}", Memory{}, `max_entries: "lots" is not an integer`},
		{"max_entries zero", "memory {\n max_entries 0\n}", Memory{}, "max_entries: must be positive"},
		{"sweep_interval missing", "memory {\n sweep_interval\n}", Memory{}, "wrong argument count"},
		{"sweep_interval bad", "memory {\n sweep_interval soon\n}", Memory{}, `sweep_interval: parsing duration "soon"`},
		{"sweep_interval zero", "memory {\n sweep_interval 0s\n}", Memory{}, "sweep_interval: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Memory
			err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			checkUnmarshal(t, tt.input, err, tt.wantErr)
			if tt.wantErr == "" && (got.MaxEntries != tt.want.MaxEntries || got.SweepInterval != tt.want.SweepInterval) {
				t.Errorf("UnmarshalCaddyfile(%q) = %+v, want %+v", tt.input, got, tt.want)
			}
		})
	}
}

// checkUnmarshal checks a Caddyfile error against the wanted substring ("" for none) and
// that errors carry the file position.
func checkUnmarshal(t *testing.T, input string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("UnmarshalCaddyfile(%q) error = %v, want none", input, err)
		}
		return
	}
	if err == nil {
		t.Fatalf("UnmarshalCaddyfile(%q) succeeded, want error containing %q", input, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("UnmarshalCaddyfile(%q) error = %q, want it to contain %q", input, err, want)
	}
	if !strings.Contains(err.Error(), "Testfile:") {
		t.Errorf("UnmarshalCaddyfile(%q) error = %q, want a file:line position", input, err)
	}
}

// TestMemoryBytesPerEntry measures the heap cost of a million live nonces: issue 7 goal 3
// asks for at most about 100 bytes per live nonce.
func TestMemoryBytesPerEntry(t *testing.T) {
	const n = 1_000_000
	perEntry := measureBytesPerEntry(n)
	t.Logf("memory store: %.1f bytes per live nonce (%d nonces)", perEntry, n)
	if perEntry > 100 {
		t.Errorf("memory store uses %.1f bytes per live nonce, want at most 100", perEntry)
	}
}

func measureBytesPerEntry(n int) float64 {
	clk := newFakeClock()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newMemoryState(n, clk.Now)
	until := clk.Now().Add(time.Hour)
	buf := []byte("nonce-0000000000000000")
	for i := range n {
		// a distinct 22-character nonce per entry without a fmt allocation
		x := i
		for j := len(buf) - 1; j >= 6 && x > 0; j-- {
			buf[j] = byte('0' + x%10)
			x /= 10
		}
		if _, err := s.claim(Entry{Partner: "acme", Nonce: string(buf), Until: until}); err != nil {
			panic(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

func BenchmarkMemoryClaim(b *testing.B) {
	clk := newFakeClock()
	s := newMemoryState(b.N+1, clk.Now)
	until := clk.Now().Add(time.Hour)
	var seq atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.claim(Entry{Partner: "acme", Nonce: fmt.Sprintf("nonce-%016d", seq.Add(1)), Until: until}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestMemoryMetrics(t *testing.T) {
	m := &Memory{MaxEntries: 42}
	ctx := provisionMemory(t, m)
	defer m.Cleanup()
	for i := range 3 {
		if _, err := m.Claim(context.Background(), Entry{Partner: "acme", Nonce: fmt.Sprintf("nonce-metric-%06d", i), Until: time.Now().Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	// a second store in the same config must not fail to register
	second := &Memory{MaxEntries: 42}
	if err := second.Provision(ctx); err != nil {
		t.Fatalf("second Provision in the same context: %v", err)
	}
	defer second.Cleanup()
	mfs, err := ctx.GetMetricsRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			got[mf.GetName()] = metric.GetGauge().GetValue()
		}
	}
	if got["partnergate_nonce_store_memory_entries"] != 3 || got["partnergate_nonce_store_memory_capacity"] != 42 {
		t.Errorf("entries, capacity = %v, %v, want 3, 42", got["partnergate_nonce_store_memory_entries"], got["partnergate_nonce_store_memory_capacity"])
	}
}

// TestMemoryClaimAllocations keeps the hot path free of allocations: the key is hashed on
// the stack (a new entry may still grow its shard's map).
func TestMemoryClaimAllocations(t *testing.T) {
	clk := newFakeClock()
	s := newMemoryState(10, clk.Now)
	e := entry(clk, "acme", "nonce-allocs-000000000000000001")
	if _, err := s.claim(e); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = s.claim(e) }); n != 0 {
		t.Errorf("claim of a known nonce allocates %v times, want 0", n)
	}
}

// BenchmarkMemorySweep is one sweep over a million live entries (none expired): the
// background cost per sweep_interval at the default capacity. Each shard's lock is held
// for 1/64 of it.
func BenchmarkMemorySweep(b *testing.B) {
	clk := newFakeClock()
	s := newMemoryState(1_000_000, clk.Now)
	until := clk.Now().Add(time.Hour)
	for i := range 1_000_000 {
		if _, err := s.claim(Entry{Partner: "acme", Nonce: fmt.Sprintf("nonce-sweep-%016d", i), Until: until}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.sweep()
	}
}
