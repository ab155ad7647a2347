package jwtpartner

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the handler's Prometheus collectors, registered in the configuration's
// registry (caddy.Context.GetMetricsRegistry), so they are served by Caddy's metrics
// endpoint and replaced with the configuration.
type metrics struct {
	requests     *prometheus.CounterVec   // partner, endpoint, outcome
	verify       *prometheus.HistogramVec // partner
	nonceStore   *prometheus.HistogramVec // result
	keyRefreshes *prometheus.CounterVec   // partner, result
	keyCount     *prometheus.GaugeVec     // partner
	dropped      *prometheus.CounterVec   // partner, field
}

// latencyBuckets span a signature check (tens of microseconds) to a slow Redis round trip.
var latencyBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

// newMetrics registers the collectors in reg. Several jwt_partner handlers in one
// configuration share them: a collector that is already registered is reused rather than
// panicking. A nil reg gives working, unregistered collectors (unit tests).
func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "partnergate_requests_total",
			Help: "Partner link requests by partner, endpoint and outcome: accepted, the rejection code (upstream_unavailable included), upstream_error, upstream_rejected or client_closed.",
		}, []string{"partner", "endpoint", "outcome"}),
		verify: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "partnergate_verify_duration_seconds",
			Help:    "Time to verify a link token (signature and claims), by partner.",
			Buckets: latencyBuckets,
		}, []string{"partner"}),
		nonceStore: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "partnergate_nonce_store_duration_seconds",
			Help:    "Time to claim a nonce in the nonce store, by result (ok, error).",
			Buckets: latencyBuckets,
		}, []string{"result"}),
		keyRefreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "partnergate_key_refreshes_total",
			Help: "Fetches of a partner's jwks_url, by partner and result (ok, error).",
		}, []string{"partner", "result"}),
		keyCount: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "partnergate_keys",
			Help: "Keys in the partner's current key set.",
		}, []string{"partner"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "partnergate_optional_fields_dropped_total",
			Help: "Optional payload fields of accepted links dropped because their values were malformed or blank, by partner and field (its JSON path).",
		}, []string{"partner", "field"}),
	}
	if reg == nil {
		return m
	}
	m.requests = register(reg, m.requests)
	m.verify = register(reg, m.verify)
	m.nonceStore = register(reg, m.nonceStore)
	m.keyRefreshes = register(reg, m.keyRefreshes)
	m.keyCount = register(reg, m.keyCount)
	m.dropped = register(reg, m.dropped)
	return m
}

// register registers c, or returns the collector already registered under its name.
func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	// Another collector with our name but a different shape: keep ours unregistered
	// rather than fail the configuration over metrics.
	return c
}

func (m *metrics) request(partner, endpoint, outcome string) {
	m.requests.WithLabelValues(partner, endpoint, outcome).Inc()
}

func (m *metrics) verifyDuration(partner string, d time.Duration) {
	m.verify.WithLabelValues(partner).Observe(d.Seconds())
}

func (m *metrics) nonceDuration(d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.nonceStore.WithLabelValues(result).Observe(d.Seconds())
}

func (m *metrics) keys(partner string, n int) {
	m.keyCount.WithLabelValues(partner).Set(float64(n))
}

func (m *metrics) keyRefresh(partner string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.keyRefreshes.WithLabelValues(partner, result).Inc()
}

// optionalFieldDropped counts one dropped optional field. field is a path from the tables
// of linkspec (linkspec.Fields), never partner text, so the label set is bounded.
func (m *metrics) optionalFieldDropped(partner, field string) {
	m.dropped.WithLabelValues(partner, field).Inc()
}
