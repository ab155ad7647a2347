package nonce

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reachable holds, per target, whether the last ping succeeded. It is package state rather
// than per client so that a gauge registered by an earlier config reads the same value as
// the client that replaced it.
var reachable sync.Map // target string → *atomic.Bool

func setReachable(target string, up bool) {
	v, _ := reachable.LoadOrStore(target, new(atomic.Bool))
	v.(*atomic.Bool).Store(up)
}

func isReachable(target string) bool {
	v, ok := reachable.Load(target)
	return ok && v.(*atomic.Bool).Load()
}

// redisMetrics are the redis store's collectors in one Caddy metrics registry.
type redisMetrics struct {
	duration *prometheus.HistogramVec
	claims   *prometheus.CounterVec
}

// registerRedisMetrics registers the collectors in reg, or reuses those already there: a
// second store in the same config, or a reload into the same registry, must not fail.
func registerRedisMetrics(reg prometheus.Registerer, target string) *redisMetrics {
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
	up := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace:   "partnergate",
		Subsystem:   "nonce_store_redis",
		Name:        "up",
		Help:        "1 when the last periodic ping of the Redis nonce store succeeded, else 0.",
		ConstLabels: prometheus.Labels{"target": target},
	}, func() float64 {
		if isReachable(target) {
			return 1
		}
		return 0
	})
	_ = registerOrExisting[prometheus.Collector](reg, up)
	return m
}

func registerOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// a conflicting collector of the same name: keep ours unregistered rather than
		// fail the config; the claims still work
	}
	return c
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
