package jwtpartner

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/partnergate/partnergate/linktoken"
)

// keyCaches holds the jwks_url key caches across config reloads, by partner and key source
// (keyCacheKey):
// a reload provisions the new handler before cleaning up the old one, so the reference
// count of a source both configurations use never drops to zero, and the new
// configuration starts from the last good set and its age. Without it a reload while a
// partner's key URL is down would answer every link 503 until the URL came back, although
// max_stale is meant to cover that outage.
var keyCaches = caddy.NewUsagePool()

// keyCacheEntry is a pooled cache; it holds no goroutine, so Destruct has nothing to stop.
type keyCacheEntry struct{ *linktoken.KeyCache }

func (keyCacheEntry) Destruct() error { return nil }

// keyCacheKey names a partner's key source: the partner, what is fetched (the URL) and
// what is trusted (the CA pool's PEM, by hash, so that a CA file rewritten in place is a
// new source). Options that only change when or how long a set is used (refresh bounds,
// max_stale) are not part of it: a reload that changes them keeps the set. The partner is,
// so that each partner's key-set log lines and gauges are its own even where two partners
// publish at one URL (each fetched its own set before caches were kept, too).
func keyCacheKey(partner, url string, caPEM []byte) string {
	ca := "system"
	if caPEM != nil {
		sum := sha256.Sum256(caPEM)
		ca = hex.EncodeToString(sum[:])
	}
	return partner + " " + url + " " + ca
}

// keySource returns the partner's key source: a checked key set read from jwks_file now,
// or linktoken's remote source for jwks_url, started with ctx so its fetcher stops when
// this configuration is unloaded. Partner.check has made sure there is exactly one.
func (h *Handler) keySource(ctx caddy.Context, name string, p *Partner) (linktoken.KeySource, error) {
	if p.JWKSURL != "" {
		return h.remoteKeySource(ctx, name, p)
	}
	set, err := loadKeyFile(p.JWKSFile)
	if err != nil {
		return nil, err
	}
	h.metrics.keys(name, set.Len())
	loaded := linktoken.Status{Fetched: h.now(), Keys: set.Len()}
	h.metrics.keySet(name, func() linktoken.Status { return loaded })
	return set, nil
}

// loadKeyFile reads and checks a jwks_file, at provisioning (caddy run, reload and
// validate); the Caddyfile adapter only records the path. A relative path is read from the
// working directory of the process that provisions.
func loadKeyFile(path string) (*linktoken.KeySet, error) {
	set, err := linktoken.LoadKeySetFile(path)
	if err != nil {
		return nil, fmt.Errorf("jwks_file: %v", err)
	}
	return set, nil
}

// loadCAFile reads a jwks_ca_file: PEM certificates, at least one. It returns the pool and
// the file's bytes, which name the key source.
func loadCAFile(path string) (*x509.CertPool, []byte, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("jwks_ca_file: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("jwks_ca_file %s: no PEM certificate in the file", path)
	}
	return pool, pem, nil
}

// remoteKeySource starts linktoken's remote key source for jwks_url, on the pooled cache
// of its key source. The first fetch runs in the background: Caddy starts while the URL is
// down, and requests are answered 503 keys_unavailable until a set has loaded (unless an
// earlier configuration loaded one).
func (h *Handler) remoteKeySource(ctx caddy.Context, name string, p *Partner) (linktoken.KeySource, error) {
	var roots *x509.CertPool
	var caPEM []byte
	if p.JWKSCAFile != "" {
		var err error
		if roots, caPEM, err = loadCAFile(p.JWKSCAFile); err != nil {
			return nil, err
		}
	}
	key := keyCacheKey(name, p.JWKSURL, caPEM)
	v, _, err := keyCaches.LoadOrNew(key, func() (caddy.Destructor, error) {
		return keyCacheEntry{linktoken.NewKeyCache()}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("jwks_url: %v", err)
	}
	h.cacheKeys = append(h.cacheKeys, key)
	cache := v.(keyCacheEntry).KeyCache

	logger := h.logger.With(zap.String("partner", name))
	rk, err := linktoken.NewRemoteKeys(linktoken.RemoteConfig{
		URL:        p.JWKSURL,
		RootCAs:    roots,
		Cache:      cache,
		MinRefresh: time.Duration(p.RefreshMin),
		MaxRefresh: time.Duration(p.RefreshMax),
		Cooldown:   time.Duration(p.RefreshCooldown),
		MaxStale:   time.Duration(p.MaxStale),
		Now:        h.now,
		OnFetch: func(ev linktoken.FetchEvent) {
			h.metrics.keyRefresh(name, ev.Err)
			h.metrics.keys(name, ev.Keys)
			logFetch(logger, ev)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("jwks_url: %v", err)
	}
	if st := cache.Status(); st.Keys > 0 {
		h.metrics.keys(name, st.Keys)
	}
	h.metrics.keySet(name, cache.Status)
	// The caddy.Context is cancelled when this configuration is unloaded, which stops the
	// fetcher: a reload never leaves an old partner's fetcher running. The cache stays in
	// keyCaches while a configuration uses it.
	rk.Start(ctx)
	return rk, nil
}

// logFetch logs a fetch at debug, and each change of the key set once (linktoken reports
// it on the one fetch that made it): loaded and rotated at info with the kids, a refused
// set and the start of failing fetches at warn (the last good set stays in use until
// max_stale), recovery at info, and a warning when max_stale is near. ev.Err never carries
// key material; keys are named by kid only.
func logFetch(logger *zap.Logger, ev linktoken.FetchEvent) {
	if c := logger.Check(zapcore.DebugLevel, "fetching partner key set"); c != nil {
		c.Write(
			zap.String("reason", string(ev.Reason)),
			zap.Int("keys", ev.Keys),
			zap.Bool("not_modified", ev.NotModified),
			zap.Duration("duration", ev.Duration),
			zap.Duration("next", ev.Next),
			zap.Error(ev.Err),
		)
	}
	if ev.Loaded {
		logger.Info("partner key set loaded", zap.Int("keys", ev.Keys))
	}
	if len(ev.Added) > 0 || len(ev.Removed) > 0 {
		logger.Info("partner key set rotated",
			zap.Strings("added", ev.Added),
			zap.Strings("removed", ev.Removed),
			zap.Int("keys", ev.Keys))
	}
	if ev.Recovered {
		logger.Info("partner key set fetch recovered",
			zap.Time("failing_since", ev.RecoveredFrom),
			zap.Int("keys", ev.Keys))
	}
	var kerr *linktoken.KeySetError
	if ev.RefusedChanged && errors.As(ev.Err, &kerr) {
		logger.Warn("partner key set refused", zap.String("reason", kerr.Error()), zap.Int("keys_in_use", ev.Keys))
	}
	if ev.FailureStarted {
		logger.Warn("partner key set fetch failing",
			zap.Time("since", ev.FailingSince),
			zap.Int("keys_in_use", ev.Keys),
			zap.Error(ev.Err))
	}
	if ev.StaleSoon {
		logger.Warn("partner key set near max_stale",
			zap.Duration("stale_in", ev.StaleIn),
			zap.Time("failing_since", ev.FailingSince),
			zap.Int("keys_in_use", ev.Keys))
	}
}

// releaseKeyCaches drops this configuration's references to the pooled key caches.
func (h *Handler) releaseKeyCaches() error {
	var errs []error
	for _, key := range h.cacheKeys {
		if _, err := keyCaches.Delete(key); err != nil {
			errs = append(errs, err)
		}
	}
	h.cacheKeys = nil
	return errors.Join(errs...)
}

// unknownKids counts a partner's key_unknown answers so that a burst is logged once per
// cooldown, with its count, rather than once per request (each request's line is at
// debug). A burst means the partner signs with a key it has not published, or someone is
// probing with made-up kids. The count held during a cooldown is written when the
// cooldown ends, by a flush the first held answer schedules, not at the next key_unknown,
// which may never come.
type unknownKids struct {
	mu       sync.Mutex
	count    int         // key_unknown answers since the last line
	lastLine time.Time   // when the last line was written; zero before the first
	stop     func() bool // stops the scheduled flush; nil when none is scheduled
	closed   bool        // the configuration is unloaded: no flush is scheduled any more
}

// note counts one key_unknown at now and returns the count to log, or 0 while the
// cooldown since the last line runs. The first answer held in a cooldown schedules the
// flush at the cooldown's end with schedule, which returns what stops it; it is called
// under the lock, so that one flush is scheduled at a time, and must not run the flush
// itself.
func (u *unknownKids) note(now time.Time, cooldown time.Duration, schedule func(time.Duration) (stop func() bool)) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.count++
	if !u.lastLine.IsZero() && now.Sub(u.lastLine) < cooldown {
		if u.stop == nil && !u.closed {
			u.stop = schedule(u.lastLine.Add(cooldown).Sub(now))
		}
		return 0
	}
	n := u.count
	u.count, u.lastLine = 0, now
	return n
}

// flush returns the count held since the last line, 0 when there is none; a count
// returned starts a new cooldown at now, since it is written as a line.
func (u *unknownKids) flush(now time.Time) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stop = nil
	n := u.count
	if n > 0 {
		u.count, u.lastLine = 0, now
	}
	return n
}

// close stops the scheduled flush and returns the count held, to be written at once: the
// configuration is unloaded, and its logger with it.
func (u *unknownKids) close() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.stop != nil {
		u.stop()
		u.stop = nil
	}
	u.closed = true
	n := u.count
	u.count = 0
	return n
}

// noteUnknownKid logs a burst of key_unknown answers for ps at warn, at most once per
// refresh_cooldown: the first answer at once, then the count since the last line when
// the cooldown ends.
func (h *Handler) noteUnknownKid(ps *partnerState) {
	n := ps.unknownKids.note(h.now(), ps.cooldown, func(d time.Duration) func() bool {
		return h.afterFunc(d, func() { h.logUnknownKids(ps, ps.unknownKids.flush(h.now())) })
	})
	h.logUnknownKids(ps, n)
}

// flushUnknownKids writes every partner's held key_unknown count and stops the scheduled
// flushes; Cleanup calls it.
func (h *Handler) flushUnknownKids() {
	for _, ps := range h.partners {
		if ps.unknownKids != nil {
			h.logUnknownKids(ps, ps.unknownKids.close())
		}
	}
}

// logUnknownKids writes the line of n key_unknown answers for ps; nothing when n is 0.
func (h *Handler) logUnknownKids(ps *partnerState, n int) {
	if n == 0 {
		return
	}
	if c := h.logger.Check(zapcore.WarnLevel, "partner tokens name kids not in the key set"); c != nil {
		c.Write(zap.String("partner", ps.name), zap.Int("count", n), zap.Duration("per", ps.cooldown))
	}
}
