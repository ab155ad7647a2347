package nonce

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// redisMetrics are the redis store's collectors in one Caddy metrics registry.
type redisMetrics struct {
	duration *prometheus.HistogramVec
	claims   *prometheus.CounterVec
	up       *upCollector
}

// registerRedisMetrics registers the collectors in reg, or reuses those already there: a
// second store in the same config, or a reload into the same registry, must not fail.
func registerRedisMetrics(reg prometheus.Registerer) *redisMetrics {
	m := &redisMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "partnergate",
			Subsystem: "nonce_store_redis",
			Name:      "claim_duration_seconds",
			Help:      "Time of one nonce claim round trip to Redis, successful or not.",
			Buckets:   []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"target"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "partnergate",
			Subsystem: "nonce_store_redis",
			Name:      "claims_total",
			Help:      "Nonce claims by outcome: fresh, replayed, too_old (clean-start guard) or error (the request was refused with 503).",
		}, []string{"target", "outcome"}),
	}
	if reg == nil {
		return m
	}
	m.duration = registerOrExisting(reg, m.duration)
	m.claims = registerOrExisting(reg, m.claims)
	m.up = registerOrExisting(reg, &upCollector{
		desc: prometheus.NewDesc("partnergate_nonce_store_redis_up",
			"1 when the last periodic ping of every Redis client for the target succeeded, else 0.",
			[]string{"target"}, nil),
		conns: map[*redisConn]int{},
	})
	return m
}

// upCollector reports the reachability of the Redis clients that the stores of one config
// use. The state lives on each shared client (redisConn.up), not per target: two stores
// may reach the same target with different settings (credentials, TLS, timeouts), and
// then one can fail while the other succeeds. The gauge of a target is 1 only when every
// client for it is up, because a request through either store depends on its own client.
type upCollector struct {
	desc  *prometheus.Desc
	mu    sync.Mutex
	conns map[*redisConn]int // the stores using each client
}

func (u *upCollector) add(c *redisConn) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.conns[c]++
}

func (u *upCollector) remove(c *redisConn) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conns[c]--; u.conns[c] <= 0 {
		delete(u.conns, c)
	}
}

// Describe implements prometheus.Collector.
func (u *upCollector) Describe(ch chan<- *prometheus.Desc) { ch <- u.desc }

// Collect implements prometheus.Collector.
func (u *upCollector) Collect(ch chan<- prometheus.Metric) {
	u.mu.Lock()
	up := make(map[string]bool, len(u.conns))
	for c := range u.conns {
		all, seen := up[c.target]
		up[c.target] = c.up.Load() && (all || !seen)
	}
	u.mu.Unlock()
	for target, ok := range up {
		v := 0.0
		if ok {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(u.desc, prometheus.GaugeValue, v, target)
	}
}

func (m *redisMetrics) observe(target string, d time.Duration, fresh bool, err error) {
	if m == nil {
		return
	}
	outcome := "fresh"
	switch {
	case errors.Is(err, ErrTooOld):
		outcome = "too_old"
	case err != nil:
		outcome = "error"
	case !fresh:
		outcome = "replayed"
	}
	m.duration.WithLabelValues(target).Observe(d.Seconds())
	m.claims.WithLabelValues(target, outcome).Inc()
}
