package nonce

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	caddy.RegisterModule(Memory{})
}

// Defaults of the memory store.
const (
	// defaultMaxEntries bounds the memory store at about 50-60 MB of live nonces (see
	// docs/performance.md for the measured bytes per entry).
	defaultMaxEntries = 1_000_000
	// defaultSweepInterval is how often expired nonces are removed. A nonce lives at most
	// max_lifetime + leeway (5m30s by default), so a 10s sweep keeps at most a few percent
	// of dead entries around.
	defaultSweepInterval = 10 * time.Second
)

// memoryShards is the number of independently locked maps, chosen by the keyed hash's
// (uniform) first byte: 256, one per value of it. A sweep holds one shard's lock at a time, so the shard's
// size bounds how long a claim can wait for it: at 5 million live nonces 256 shards hold
// it about 0.2 ms where 64 held it 0.8 (docs/performance.md), and lock contention is
// negligible either way.
const memoryShards = 256

// minKickGap keeps a full store from sweeping back to back: when a claim finds the store
// full it asks the sweeper to run early, at most once per this interval.
const minKickGap = time.Second

// memoryPool holds the memory stores' state across config reloads: a reload provisions the
// new handler before cleaning up the old one, so the state's reference count never drops
// to zero and no nonce is forgotten.
var memoryPool = caddy.NewUsagePool()

// memoryPoolKey is the one key of the memory state: one per process, whatever the config.
const memoryPoolKey = "memory"

// Memory is the embedded nonce store, module http.jwt_partner.nonce_stores.memory: one
// gateway's nonces in its own memory. It is the default when no store is configured.
//
// It keeps, per live nonce, a 128-bit keyed hash of partner and nonce and the expiry, in
// sharded maps: no partner or nonce text is retained, and the hash key is random per
// process so entries cannot be predicted or forged. Entries are removed by a background
// sweeper after Entry.Until; when max_entries live nonces are held, Claim refuses with
// ErrFull instead of evicting one (an evicted nonce could be replayed).
//
// The state is one per process, in a caddy.UsagePool, so it survives every config reload,
// also one that changes max_entries or sweep_interval (the new values apply to the kept
// nonces): a reload that forgot the live nonces would reopen their tokens to replay. Every
// jwt_partner handler of the process shares it, which is harmless (nonces are per partner)
// and refuses a token replayed at another site of the same Caddy. It does NOT survive a
// process restart, and it is not shared between gateway instances: use the redis store
// for several instances.
//
// Metrics: partnergate_nonce_store_memory_entries (held, live or unswept) and
// partnergate_nonce_store_memory_capacity (max_entries).
type Memory struct {
	// MaxEntries is the most live nonces held; when it is reached new tokens are refused
	// (503) until expired nonces are swept. Default 1000000.
	MaxEntries int `json:"max_entries,omitempty"`

	// SweepInterval is how often expired nonces are removed. Default 10s.
	SweepInterval caddy.Duration `json:"sweep_interval,omitempty"`

	poolKey string
	state   *memoryState
}

// CaddyModule returns the Caddy module information.
func (Memory) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.jwt_partner.nonce_stores.memory",
		New: func() caddy.Module { return new(Memory) },
	}
}

// Provision sets the defaults and attaches to the shared state for this configuration,
// creating it (and its sweeper) on first use.
func (m *Memory) Provision(ctx caddy.Context) error {
	if err := m.checkConfig(); err != nil {
		return err
	}
	if m.MaxEntries == 0 {
		m.MaxEntries = defaultMaxEntries
	}
	if m.SweepInterval == 0 {
		m.SweepInterval = caddy.Duration(defaultSweepInterval)
	}
	v, loaded, err := memoryPool.LoadOrNew(memoryPoolKey, func() (caddy.Destructor, error) {
		s := newMemoryState(m.MaxEntries, time.Now)
		s.startSweeper(time.Duration(m.SweepInterval))
		return s, nil
	})
	if err != nil {
		return fmt.Errorf("creating memory nonce store: %v", err)
	}
	m.poolKey = memoryPoolKey
	m.state = v.(*memoryState)
	if loaded {
		// the newest config's limits apply to the kept nonces
		m.state.setLimits(m.MaxEntries, time.Duration(m.SweepInterval))
	}
	registerMemoryMetrics(ctx.GetMetricsRegistry(), m.state)
	return nil
}

// registerMemoryMetrics exports how full the store is, so that operators see ErrFull
// coming. A second memory store in the same config (the same registry) keeps the first
// one's gauges.
func registerMemoryMetrics(reg prometheus.Registerer, s *memoryState) {
	if reg == nil {
		return
	}
	for _, g := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "partnergate",
			Subsystem: "nonce_store_memory",
			Name:      "entries",
			Help:      "Nonces held by the memory store, live or expired but not yet swept.",
		}, func() float64 { return float64(s.count.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "partnergate",
			Subsystem: "nonce_store_memory",
			Name:      "capacity",
			Help:      "The memory store's max_entries; at this many entries new tokens are refused.",
		}, func() float64 { return float64(s.max.Load()) }),
	} {
		_ = registerOrExisting(reg, g)
	}
}

// Validate checks the configuration.
func (m *Memory) Validate() error {
	return m.checkConfig()
}

func (m *Memory) checkConfig() error {
	if m.MaxEntries < 0 {
		return fmt.Errorf("max_entries must not be negative, got %d", m.MaxEntries)
	}
	if m.SweepInterval < 0 {
		return fmt.Errorf("sweep_interval must not be negative, got %s", time.Duration(m.SweepInterval))
	}
	return nil
}

// Cleanup releases this instance's reference to the shared state; the last release stops
// the sweeper and frees the nonces. It is safe after a failed or partial Provision.
func (m *Memory) Cleanup() error {
	if m.poolKey == "" {
		return nil
	}
	_, err := memoryPool.Delete(m.poolKey)
	m.poolKey, m.state = "", nil
	return err
}

// Claim implements Store.
func (m *Memory) Claim(_ context.Context, e Entry) (bool, error) {
	if m.state == nil {
		return false, fmt.Errorf("memory nonce store not provisioned")
	}
	return m.state.claim(e)
}

// UnmarshalCaddyfile sets up the store from Caddyfile tokens; the dispenser is positioned
// on the store name.
//
// Syntax:
//
//	nonce_store memory {
//		max_entries    <n>
//		sweep_interval <duration>
//	}
func (m *Memory) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // store name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		opt := d.Val()
		if seen[opt] {
			return d.Errf("duplicate option %q", opt)
		}
		seen[opt] = true
		switch opt {
		case "max_entries":
			var v string
			if !d.AllArgs(&v) {
				return d.ArgErr()
			}
			n, err := parsePositiveInt(v)
			if err != nil {
				return d.Errf("max_entries: %v", err)
			}
			m.MaxEntries = n
		case "sweep_interval":
			dur, err := parsePositiveDuration(d)
			if err != nil {
				return err
			}
			m.SweepInterval = dur
		default:
			return d.Errf("unknown memory nonce store option %q", opt)
		}
	}
	return nil
}

// memoryState is the shared state of one memory store configuration.
type memoryState struct {
	max    atomic.Int64
	count  atomic.Int64 // entries held across all shards, live or unswept
	now    func() time.Time
	secret [32]byte
	shards [memoryShards]memoryShard

	interval atomic.Int64 // sweep interval in nanoseconds
	kick     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

type memoryShard struct {
	mu sync.Mutex
	// m maps the keyed hash to the expiry in Unix nanoseconds: 16+8 bytes a slot, the
	// smallest layout that keeps a Go map's per-entry cost well under 100 bytes.
	m map[[16]byte]int64
}

func newMemoryState(max int, now func() time.Time) *memoryState {
	s := &memoryState{now: now, kick: make(chan struct{}, 1)}
	s.max.Store(int64(max))
	if _, err := rand.Read(s.secret[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a fixed key would make
		// entries predictable, so refuse to run rather than continue with one.
		panic("reading random hash key: " + err.Error())
	}
	for i := range s.shards {
		s.shards[i].m = make(map[[16]byte]int64)
	}
	return s
}

// key hashes partner and nonce with the process's secret. The partner is length-prefixed
// so that no (partner, nonce) pair can be spelled as another.
func (s *memoryState) key(partner, nonce string) [16]byte {
	// built on the stack for the usual sizes: no allocation on the request path
	var buf [512]byte
	b := buf[:0]
	if n := len(s.secret) + binary.MaxVarintLen64 + len(partner) + len(nonce); n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = append(b, s.secret[:]...)
	b = binary.AppendUvarint(b, uint64(len(partner)))
	b = append(b, partner...)
	b = append(b, nonce...)
	sum := sha256.Sum256(b)
	return [16]byte(sum[:16])
}

func (s *memoryState) claim(e Entry) (bool, error) {
	k := s.key(e.Partner, e.Nonce)
	now := s.now().UnixNano()
	sh := &s.shards[int(k[0])%memoryShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if exp, ok := sh.m[k]; ok {
		if exp > now {
			return false, nil
		}
		// expired but not yet swept: the slot is reused, the count is unchanged
		sh.m[k] = e.Until.UnixNano()
		return true, nil
	}
	for {
		c := s.count.Load()
		if c >= s.max.Load() {
			select {
			case s.kick <- struct{}{}:
			default:
			}
			return false, ErrFull
		}
		if s.count.CompareAndSwap(c, c+1) {
			break
		}
	}
	sh.m[k] = e.Until.UnixNano()
	return true, nil
}

// sweep removes the expired entries, one shard at a time so that claims on other shards
// are never blocked.
func (s *memoryState) sweep() {
	now := s.now().UnixNano()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		removed := 0
		for k, exp := range sh.m {
			if exp <= now {
				delete(sh.m, k)
				removed++
			}
		}
		sh.mu.Unlock()
		s.count.Add(int64(-removed))
	}
}

func (s *memoryState) startSweeper(interval time.Duration) {
	s.interval.Store(int64(interval))
	s.stop = make(chan struct{})
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTimer(interval)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			case <-s.kick:
				if time.Since(last) < minKickGap {
					continue
				}
			}
			s.sweep()
			last = time.Now()
			// a reload may have changed the interval
			t.Reset(time.Duration(s.interval.Load()))
		}
	}()
}

// setLimits applies a reloaded config's max_entries and sweep_interval (the latter from
// the next sweep on).
func (s *memoryState) setLimits(max int, interval time.Duration) {
	s.max.Store(int64(max))
	s.interval.Store(int64(interval))
}

// Destruct stops the sweeper; the usage pool calls it when the last user is cleaned up.
func (s *memoryState) Destruct() error {
	if s.stop != nil {
		s.stopOnce.Do(func() { close(s.stop) })
		<-s.done
	}
	return nil
}

// Ping answers nil: the store is in the process's memory, so it answers whenever the
// gateway does.
func (m *Memory) Ping(context.Context) error { return nil }

// Interface guards
var (
	_ Store                 = (*Memory)(nil)
	_ Pinger                = (*Memory)(nil)
	_ caddy.Provisioner     = (*Memory)(nil)
	_ caddy.Validator       = (*Memory)(nil)
	_ caddy.CleanerUpper    = (*Memory)(nil)
	_ caddyfile.Unmarshaler = (*Memory)(nil)
	_ caddy.Destructor      = (*memoryState)(nil)
)
