package jwtpartner

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/partnergate/partnergate/linktoken"
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
	keySets      *keySetCollector         // partner

	// The nonce store histogram's two series, looked up once (see lazy).
	nonceOK, nonceErr lazy[prometheus.Observer]
}

// lazy holds one series of a vector, looked up on first use: WithLabelValues hashes its
// labels and takes the vector's lock on every call, which the request path pays on every
// link, and a series made at provisioning would show before anything happened.
type lazy[T any] struct {
	once sync.Once
	v    T
}

func (l *lazy[T]) get(newSeries func() T) T {
	l.once.Do(func() { l.v = newSeries() })
	return l.v
}

// partnerSeries are the series an accepted link of one partner touches.
type partnerSeries struct {
	verify                   lazy[prometheus.Observer]
	acceptedURL, acceptedPay lazy[prometheus.Counter]
}

// verifyDurationOf observes one verification of the partner of s.
func (m *metrics) verifyDurationOf(s *partnerSeries, partner string, d time.Duration) {
	s.verify.get(func() prometheus.Observer { return m.verify.WithLabelValues(partner) }).Observe(d.Seconds())
}

// accepted counts one accepted link of the partner of s at endpoint, as
// request(partner, endpoint, outcomeAccepted) does.
func (m *metrics) accepted(s *partnerSeries, partner, endpoint string) {
	l := &s.acceptedURL
	switch endpoint {
	case endpointURL:
	case endpointPayload:
		l = &s.acceptedPay
	default:
		m.request(partner, endpoint, outcomeAccepted)
		return
	}
	l.get(func() prometheus.Counter { return m.requests.WithLabelValues(partner, endpoint, outcomeAccepted) }).Inc()
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
		keySets: newKeySetCollector(time.Now),
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
	m.keySets = register(reg, m.keySets)
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

func (m *metrics) nonceDuration(d time.Duration, err error) {
	l, result := &m.nonceOK, "ok"
	if err != nil {
		l, result = &m.nonceErr, "error"
	}
	l.get(func() prometheus.Observer { return m.nonceStore.WithLabelValues(result) }).Observe(d.Seconds())
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

// keySet makes the key set gauges report the partner's key source through status.
func (m *metrics) keySet(partner string, status func() linktoken.Status) {
	m.keySets.set(partner, status)
}

// keySetCollector reports, per partner, the age of the key set in use and the times of
// the last successful and the last failed fetch, read from the key sources when scraped:
// an age gauge set at each fetch would be stale by the time it is read. A partner's
// series are absent until there is something to say (no set yet, no failure yet).
type keySetCollector struct {
	age, success, failure *prometheus.Desc
	now                   func() time.Time

	mu      sync.Mutex
	sources map[string]func() linktoken.Status
}

func newKeySetCollector(now func() time.Time) *keySetCollector {
	return &keySetCollector{
		age: prometheus.NewDesc("partnergate_key_set_age_seconds",
			"Seconds since the partner's key set in use was fetched successfully from jwks_url (or loaded from jwks_file); max_stale counts from then.",
			[]string{"partner"}, nil),
		success: prometheus.NewDesc("partnergate_key_set_last_success_timestamp_seconds",
			"Unix time of the last successful fetch of the partner's jwks_url (or load of its jwks_file).",
			[]string{"partner"}, nil),
		failure: prometheus.NewDesc("partnergate_key_set_last_failure_timestamp_seconds",
			"Unix time of the last failed fetch of the partner's jwks_url (unreachable, an error status, or a refused set).",
			[]string{"partner"}, nil),
		now:     now,
		sources: make(map[string]func() linktoken.Status),
	}
}

func (c *keySetCollector) set(partner string, status func() linktoken.Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources[partner] = status
}

// Describe implements prometheus.Collector.
func (c *keySetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.age
	ch <- c.success
	ch <- c.failure
}

// Collect implements prometheus.Collector.
func (c *keySetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for partner, status := range c.sources {
		st := status()
		if !st.Fetched.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, max(now.Sub(st.Fetched).Seconds(), 0), partner)
			ch <- prometheus.MustNewConstMetric(c.success, prometheus.GaugeValue, unixSeconds(st.Fetched), partner)
		}
		if !st.Failed.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.failure, prometheus.GaugeValue, unixSeconds(st.Failed), partner)
		}
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
