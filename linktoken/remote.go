package linktoken

// The remote key source is written here on net/http rather than on jwx's jwk.Cache (httprc)
// because the cache lacks what docs/architecture.md (Keys) asks of a partner's jwks_url: a
// bound on how long the last good set is used while the URL fails (httprc keeps it forever), a
// limit on the response size, a lookup that answers "not yet" instead of blocking on the first
// fetch, a refetch on an unknown kid that is single-flight and rate-limited, a check of every
// fetched set by ParseKeySet that keeps the last good set on failure, and an outcome per fetch
// for metrics and logs. jwx still parses every key (ParseKeySet uses jwk).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of RemoteConfig.
const (
	DefaultMinRefresh   = time.Minute
	DefaultMaxRefresh   = time.Hour
	DefaultCooldown     = 30 * time.Second
	DefaultMaxStale     = 24 * time.Hour
	DefaultFetchTimeout = 10 * time.Second
	maxRedirects        = 5
	firstRetry          = time.Second
)

// FetchReason says why a key set was fetched.
type FetchReason string

const (
	FetchStart      FetchReason = "start"       // the first fetch, in the background
	FetchRefresh    FetchReason = "refresh"     // a scheduled refresh
	FetchRetry      FetchReason = "retry"       // a scheduled retry after a failure
	FetchUnknownKid FetchReason = "unknown_kid" // a token named a kid the set does not hold
)

// FetchEvent is the outcome of one fetch, for metrics and logs. It carries no key
// material: Err says what failed (status, size, which key of the set and why).
type FetchEvent struct {
	Reason FetchReason
	// Err is nil when a set was loaded (or confirmed unchanged: NotModified).
	Err         error
	NotModified bool
	// Keys is the number of keys in the set in use after the fetch.
	Keys     int
	Duration time.Duration
	// Next is the time until the next scheduled fetch.
	Next time.Duration

	// The fields below say how the fetch changed the source's state, so that each change
	// is logged once rather than on every fetch. They name keys by kid only.

	// Loaded is set when the fetch installed the first usable set (of this source's
	// KeyCache: a configuration reload that keeps the cache does not load again).
	Loaded bool
	// Added and Removed list the kids that a newly fetched set added and removed, sorted.
	Added, Removed []string
	// RefusedChanged is set when Err is a refused set whose reason differs from the last
	// refusal (or there was none): the same refusal fetched again is not news.
	RefusedChanged bool
	// FailingSince is when the current run of failed fetches began; zero after a success.
	FailingSince time.Time
	// FailureStarted is set on the first failed fetch after a success (or of the source).
	FailureStarted bool
	// Recovered is set on the first successful fetch after failed ones; RecoveredFrom is
	// when the failures began.
	Recovered     bool
	RecoveredFrom time.Time
	// StaleSoon is set, once per run of failures, on the failed fetch that finds the last
	// good set with a quarter of MaxStale or less left (StaleIn, negative once it has run
	// out): after it, lookups answer keys_unavailable.
	StaleSoon bool
	StaleIn   time.Duration
}

// RemoteConfig configures a key source for a partner's jwks_url. Zero values take the
// defaults.
type RemoteConfig struct {
	// URL is the key set's location: https, or http on a loopback host only (127.0.0.0/8,
	// ::1, localhost), for tests and sidecars. Unless its host is loopback, the fetch
	// connects only to public addresses (see publicAddr), redirects included.
	URL string
	// Client makes the requests; nil uses a client of its own. Its redirect policy is
	// replaced by one that keeps the https rules and follows at most 5 redirects, and its
	// transport (nil or an *http.Transport) by a copy that dials through the address check,
	// without a proxy or kept-alive connections.
	Client *http.Client
	// MinRefresh and MaxRefresh bound the refresh interval that the response's
	// Cache-Control max-age or Expires asks for (default 1m and 1h). A response without
	// either is refreshed after MaxRefresh.
	MinRefresh, MaxRefresh time.Duration
	// Cooldown is the least time between two fetches caused by unknown kids (default
	// 30s): a flood of random kids costs one fetch per cooldown.
	Cooldown time.Duration
	// MaxStale bounds how long the last good set is used after the last successful fetch
	// while the URL fails (default 24h); after it, lookups answer keys_unavailable.
	MaxStale time.Duration
	// FetchTimeout bounds one fetch (default 10s).
	FetchTimeout time.Duration
	// MaxSize bounds the response body, in bytes (default MaxKeySetSize).
	MaxSize int64
	// OnFetch, if set, is called after every fetch, from the fetching goroutine.
	OnFetch func(FetchEvent)
	// RootCAs, if set, is the only pool of certificate authorities trusted for the key
	// set's https connections (redirects included); nil trusts the system's pool.
	RootCAs *x509.CertPool
	// Cache holds the last good set, its age and the failure record; a configuration
	// reload that hands the new source the old source's cache starts from the last good
	// set rather than from nothing. nil gives the source a cache of its own. Sources that
	// share a cache must share the key source (URL, RootCAs): it is the caller's key.
	Cache *KeyCache
	// Now is the clock of the cooldown and staleness rules; nil is time.Now.
	Now func() time.Time

	// resolve, if set, replaces DNS for the dial guard's tests, which run on loopback and
	// must make a public name resolve to 127.0.0.1.
	resolve func(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// RemoteKeys is a KeySource backed by a jwks_url: fetched in the background, cached,
// refreshed, refetched on an unknown kid. Lookups never wait for the network except when a
// kid is unknown and a refetch is allowed or already under way.
type RemoteKeys struct {
	cfg    RemoteConfig
	url    string
	client *http.Client
	cache  *KeyCache

	mu       sync.Mutex
	ctx      context.Context // the source's lifetime, set by Start
	inflight chan struct{}   // closed when the fetch under way ends
	lastMiss time.Time       // when an unknown kid last caused a fetch
	next     time.Time       // when the loop fetches next (wall clock)
	fetches  int             // fetches this source has made
	failures int             // failed fetches since this source's last success
}

// KeyCache is what a remote key source knows of its key set beyond one configuration's
// lifetime: the last good set and when it was fetched (max_stale counts from then), the
// ETag, the refusal and the record of failures. RemoteKeys replaces its state whole, so
// lookups read it without a lock; updates are serialised so that each change is seen,
// and reported, by one fetch.
type KeyCache struct {
	mu    sync.Mutex // held while a fetch's outcome is installed
	state atomic.Pointer[remoteState]
}

// NewKeyCache returns an empty cache.
func NewKeyCache() *KeyCache { return new(KeyCache) }

// Status is a key source's state for metrics: when the set in use was last fetched
// successfully (zero before the first), when a fetch last failed (zero if none has), and
// how many keys the set in use holds.
type Status struct {
	Fetched, Failed time.Time
	Keys            int
}

// Status reports the cache's state.
func (c *KeyCache) Status() Status {
	st := c.state.Load()
	if st == nil {
		return Status{}
	}
	return Status{Fetched: st.fetched, Failed: st.failed, Keys: st.set.Len()}
}

// remoteState is the set in use, replaced whole so that lookups read it without a lock.
type remoteState struct {
	set     *KeySet   // nil until a set loads
	fetched time.Time // last successful fetch, by cfg.Now
	etag    string    // the ETag of the set in use, for a conditional fetch
	// refused is why the set last fetched was refused, nil once a set loads again. A
	// lookup the usable set cannot answer answers with it: the partner's fix is in the set.
	refused *KeySetError
	failed  time.Time // last failed fetch, by cfg.Now
	// failingSince is when the current run of failed fetches began, zero after a success;
	// staleWarned is set once that run has reported StaleSoon.
	failingSince time.Time
	staleWarned  bool
}

// NewRemoteKeys checks the configuration and returns a source that is not fetching yet;
// Start starts it.
func NewRemoteKeys(cfg RemoteConfig) (*RemoteKeys, error) {
	if err := CheckKeySetURL(cfg.URL); err != nil {
		return nil, err
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.MinRefresh, DefaultMinRefresh)
	def(&cfg.MaxRefresh, DefaultMaxRefresh)
	def(&cfg.Cooldown, DefaultCooldown)
	def(&cfg.MaxStale, DefaultMaxStale)
	def(&cfg.FetchTimeout, DefaultFetchTimeout)
	if cfg.MaxSize == 0 {
		cfg.MaxSize = MaxKeySetSize
	}
	switch {
	case cfg.MinRefresh < 0 || cfg.MaxRefresh < cfg.MinRefresh:
		return nil, fmt.Errorf("refresh bounds %v..%v are not 0 < min <= max", cfg.MinRefresh, cfg.MaxRefresh)
	case cfg.Cooldown < 0 || cfg.MaxStale < 0 || cfg.FetchTimeout < 0 || cfg.MaxSize < 0:
		return nil, errors.New("cooldown, max stale, fetch timeout and max size must not be negative")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var client http.Client
	if cfg.Client != nil {
		client = *cfg.Client
	}
	var tr *http.Transport
	switch rt := client.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = rt.Clone()
	default:
		return nil, fmt.Errorf("key set client transport %T: want an *http.Transport, whose dialled addresses can be checked", rt)
	}
	guardTransport(tr, cfg.resolve, cfg.FetchTimeout)
	if cfg.RootCAs != nil {
		// Instead of the system's pool, not added to it: a partner on a private CA needs
		// that CA only, and any other CA trusted for its key URL could vouch for a server
		// that hands out the partner's identity.
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if tr.TLSClientConfig != nil {
			tc = tr.TLSClientConfig.Clone()
		}
		tc.RootCAs = cfg.RootCAs
		tr.TLSClientConfig = tc
	}
	client.Transport = tr
	client.CheckRedirect = checkRedirect
	cache := cfg.Cache
	if cache == nil {
		cache = NewKeyCache()
	}
	return &RemoteKeys{cfg: cfg, url: cfg.URL, client: &client, cache: cache}, nil
}

// Start begins fetching in the background; the goroutines stop when ctx is cancelled (a
// Caddy config unload). Calling Start again does nothing.
func (r *RemoteKeys) Start(ctx context.Context) {
	r.mu.Lock()
	if r.ctx != nil {
		r.mu.Unlock()
		return
	}
	r.ctx = ctx
	r.next = time.Now()
	r.mu.Unlock()
	go r.loop(ctx)
}

// Key returns the key with the given kid. Before the first successful fetch, and once the
// last good set is older than MaxStale, it answers keys_unavailable. For an unknown kid it
// refetches the set, at most once per cooldown, sharing a fetch already under way. While
// the set last fetched is refused, a kid the usable set lacks is answered keys_unavailable
// with the refusal's reason, as when no set is usable: the partner's key is most likely in
// the refused set.
func (r *RemoteKeys) Key(ctx context.Context, kid string) (*Key, error) {
	now := r.cfg.Now()
	k, miss, err := r.lookup(kid)
	if !miss || kid == "" || len(kid) > MaxKeyIDLength {
		return k, err
	}

	r.mu.Lock()
	ch := r.inflight
	if ch == nil {
		// A fetch may have ended between the lookup and the lock; the set it installed
		// is in place before inflight is cleared, so look again before refusing.
		if k, miss, err = r.lookup(kid); !miss {
			r.mu.Unlock()
			return k, err
		}
		if r.ctx == nil || (!r.lastMiss.IsZero() && now.Sub(r.lastMiss) < r.cfg.Cooldown) {
			r.mu.Unlock()
			return nil, err
		}
		r.lastMiss = now
		ch = r.startFetchLocked(FetchUnknownKid)
	}
	r.mu.Unlock()

	select {
	case <-ch:
	case <-ctx.Done():
		return nil, errKeysUnavailable(ctx.Err())
	}
	k, _, err = r.lookup(kid)
	return k, err
}

// lookup answers kid from the state in use; miss reports a kid that a usable set does not
// hold, which a refetch may find.
func (r *RemoteKeys) lookup(kid string) (k *Key, miss bool, err error) {
	st := r.cache.state.Load()
	switch {
	case st == nil:
		return nil, false, errKeysUnavailable(nil)
	case st.set == nil || r.cfg.Now().Sub(st.fetched) > r.cfg.MaxStale:
		if st.refused != nil {
			return nil, false, errKeySetRefused(st.refused)
		}
		return nil, false, errKeysUnavailable(nil)
	}
	if k, ok := st.set.keys[kid]; ok {
		return k, false, nil
	}
	if st.refused != nil {
		return nil, true, errKeySetRefused(st.refused)
	}
	return nil, true, errKeyUnknown()
}

// Current returns the set in use and when it was last fetched successfully, or nil before
// the first successful fetch.
func (r *RemoteKeys) Current() (*KeySet, time.Time) {
	st := r.cache.state.Load()
	if st == nil || st.set == nil {
		return nil, time.Time{}
	}
	return st.set, st.fetched
}

// loop fetches at start and then whenever r.next is due; fetches caused by unknown kids
// move r.next too, so a set just fetched is not fetched again by the loop.
func (r *RemoteKeys) loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		r.mu.Lock()
		wait := time.Until(r.next)
		if wait > 0 {
			r.mu.Unlock()
			timer.Reset(wait)
			continue
		}
		reason := FetchRefresh
		switch {
		case r.fetches == 0:
			reason = FetchStart
		case r.failures > 0:
			reason = FetchRetry
		}
		ch := r.inflight
		if ch == nil {
			ch = r.startFetchLocked(reason)
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		r.mu.Lock()
		wait = time.Until(r.next)
		r.mu.Unlock()
		timer.Reset(max(wait, 0))
	}
}

// startFetchLocked starts a fetch and returns the channel closed when it ends. r.mu is held.
func (r *RemoteKeys) startFetchLocked(reason FetchReason) chan struct{} {
	ch := make(chan struct{})
	r.inflight = ch
	r.fetches++
	ctx := r.ctx
	go func() {
		ev := r.fetch(ctx, reason)
		r.mu.Lock()
		r.inflight = nil
		if ev.Err == nil {
			r.failures = 0
		} else {
			r.failures++
			ev.Next = r.retryAfter(r.failures)
		}
		r.next = time.Now().Add(ev.Next)
		r.mu.Unlock()
		close(ch)
		if r.cfg.OnFetch != nil {
			r.cfg.OnFetch(ev)
		}
	}()
	return ch
}

// retryAfter backs off after failures: 1s, 2s, 4s, … up to MinRefresh.
func (r *RemoteKeys) retryAfter(failures int) time.Duration {
	d := firstRetry
	for i := 1; i < failures && d < r.cfg.MinRefresh; i++ {
		d *= 2
	}
	return min(d, r.cfg.MinRefresh)
}

// fetch gets, checks and installs the key set. A set that fails ParseKeySet, like a failed
// request, leaves the last good set in place.
func (r *RemoteKeys) fetch(ctx context.Context, reason FetchReason) FetchEvent {
	start := time.Now()
	res := r.get(ctx)
	ev := r.install(res)
	ev.Reason = reason
	ev.Duration = time.Since(start)
	ev.Next = res.next
	return ev
}

// fetchResult is what one request brought back, before it is installed.
type fetchResult struct {
	set         *KeySet
	notModified bool
	// conditional is the set whose ETag the request sent: a 304 confirms that set only.
	conditional *KeySet
	etag        string
	next        time.Duration
	err         error
	refused     *KeySetError // the set was fetched and refused; err wraps it
}

// get makes the request and parses the answer.
func (r *RemoteKeys) get(ctx context.Context) fetchResult {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.FetchTimeout)
	defer cancel()
	chain := &fetchChain{}
	if u, err := url.Parse(r.url); err != nil || !isLoopback(u.Hostname()) {
		chain.guarded.Store(true)
	}
	ctx = context.WithValue(ctx, fetchChainKey{}, chain)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return fetchResult{err: fmt.Errorf("fetching key set: %v", err)}
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	st := r.cache.state.Load()
	var conditional *KeySet
	if st != nil && st.set != nil && st.etag != "" {
		req.Header.Set("If-None-Match", st.etag)
		conditional = st.set
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fetchResult{err: fmt.Errorf("fetching key set: %v", err)}
	}
	defer resp.Body.Close()
	res := fetchResult{next: refreshInterval(resp.Header, time.Now(), r.cfg.MinRefresh, r.cfg.MaxRefresh)}

	if resp.StatusCode == http.StatusNotModified && conditional != nil {
		res.notModified, res.conditional = true, conditional
		return res
	}
	if resp.StatusCode != http.StatusOK {
		res.err = fmt.Errorf("fetching key set: status %d", resp.StatusCode)
		return res
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.cfg.MaxSize+1))
	if err != nil {
		res.err = fmt.Errorf("reading key set: %v", err)
		return res
	}
	if int64(len(body)) > r.cfg.MaxSize {
		res.refused = refuseSet(fmt.Errorf("key set is larger than %d bytes", r.cfg.MaxSize))
		res.err = res.refused
		return res
	}
	set, err := ParseKeySet(body)
	if err != nil {
		var kerr *KeySetError
		if errors.As(err, &kerr) {
			res.refused = kerr
		}
		res.err = fmt.Errorf("refusing fetched key set: %w", err)
		return res
	}
	res.set, res.etag = set, resp.Header.Get("ETag")
	return res
}

// install records a fetch's outcome in the cache and says what it changed. A failure
// keeps the last good set; a refused set is remembered so that lookups can say why.
func (r *RemoteKeys) install(res fetchResult) FetchEvent {
	c := r.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	now := r.cfg.Now()
	st := new(remoteState)
	if old := c.state.Load(); old != nil {
		*st = *old
	}
	old := *st
	var ev FetchEvent
	if res.notModified && st.set != res.conditional {
		// Another source on this cache (the configuration being replaced by a reload)
		// installed a set while the request ran: the 304 says nothing about it.
		ev.NotModified, ev.Keys = true, st.set.Len()
		return ev
	}
	if res.err == nil {
		if !res.notModified {
			if old.set == nil {
				ev.Loaded = true
			} else {
				ev.Added, ev.Removed = diffKids(old.set, res.set)
			}
			st.set, st.etag = res.set, res.etag
		}
		st.fetched, st.refused = now, nil
		if !old.failingSince.IsZero() {
			ev.Recovered, ev.RecoveredFrom = true, old.failingSince
		}
		st.failingSince, st.staleWarned = time.Time{}, false
	} else {
		ev.Err = res.err
		st.failed = now
		if res.refused != nil {
			ev.RefusedChanged = old.refused == nil || old.refused.Error() != res.refused.Error()
			st.refused = res.refused
		}
		if st.failingSince.IsZero() {
			st.failingSince, ev.FailureStarted = now, true
		}
		ev.FailingSince = st.failingSince
		if left := st.fetched.Add(r.cfg.MaxStale).Sub(now); st.set != nil && !st.staleWarned && left <= r.cfg.MaxStale/4 {
			st.staleWarned, ev.StaleSoon, ev.StaleIn = true, true, left
		}
	}
	c.state.Store(st)
	ev.NotModified = res.notModified
	ev.Keys = st.set.Len()
	return ev
}

// diffKids returns the kids of next that prev lacks and those of prev that next lacks,
// sorted (KeyIDs is).
func diffKids(prev, next *KeySet) (added, removed []string) {
	for _, id := range next.KeyIDs() {
		if _, ok := prev.keys[id]; !ok {
			added = append(added, id)
		}
	}
	for _, id := range prev.KeyIDs() {
		if _, ok := next.keys[id]; !ok {
			removed = append(removed, id)
		}
	}
	return added, removed
}

// refreshInterval reads the freshness lifetime of a response (RFC 9111 §4.2.1:
// Cache-Control max-age, else Expires minus Date) and bounds it to [min, max]; no-cache
// and no-store mean min, and a response without either header max.
func refreshInterval(h http.Header, now time.Time, lo, hi time.Duration) time.Duration {
	d, ok := freshness(h, now)
	if !ok {
		return hi
	}
	return max(lo, min(d, hi))
}

func freshness(h http.Header, now time.Time) (time.Duration, bool) {
	if cc := h.Values("Cache-Control"); len(cc) > 0 {
		maxAge, found := time.Duration(0), false
		for _, line := range cc {
			for _, dir := range strings.Split(line, ",") {
				name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
				switch strings.ToLower(name) {
				case "no-cache", "no-store":
					return 0, true
				case "max-age":
					n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
					if err != nil || n < 0 {
						return 0, true // an invalid max-age is stale (RFC 9111 §4.2.1)
					}
					maxAge, found = time.Duration(min(n, 1<<31))*time.Second, true
				}
			}
		}
		if found {
			return maxAge, true
		}
	}
	if exp := h.Get("Expires"); exp != "" {
		t, err := http.ParseTime(exp)
		if err != nil {
			return 0, true // an invalid Expires is in the past (RFC 9111 §5.3)
		}
		base := now
		if date, err := http.ParseTime(h.Get("Date")); err == nil {
			base = date
		}
		return max(t.Sub(base), 0), true
	}
	return 0, false
}

var _ KeySource = (*RemoteKeys)(nil)
