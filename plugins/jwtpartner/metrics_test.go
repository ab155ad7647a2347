package jwtpartner

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestSeriesLookedUpOnceCountLikeLabels: the request path's series, looked up once per
// partner, count into the same series that WithLabelValues names, and none of them shows
// before its first use.
func TestSeriesLookedUpOnceCountLikeLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	if n := countSeries(t, reg); n != 0 {
		t.Fatalf("series before any request = %d, want 0", n)
	}
	var s partnerSeries
	m.accepted(&s, "acme", endpointURL)
	m.accepted(&s, "acme", endpointURL)
	m.accepted(&s, "acme", endpointPayload)
	m.verifyDurationOf(&s, "acme", time.Millisecond)
	m.nonceDuration(time.Millisecond, nil)
	m.nonceDuration(time.Millisecond, errors.New("down"))
	m.nonceDuration(time.Millisecond, nil)

	counter := func(c prometheus.Counter) float64 {
		var d dto.Metric
		if err := c.Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetCounter().GetValue()
	}
	histogram := func(o prometheus.Observer) uint64 {
		var d dto.Metric
		if err := o.(prometheus.Metric).Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetHistogram().GetSampleCount()
	}
	for _, tt := range []struct {
		name      string
		got, want float64
	}{
		{"accepted url", counter(m.requests.WithLabelValues("acme", "url", "accepted")), 2},
		{"accepted payload", counter(m.requests.WithLabelValues("acme", "payload", "accepted")), 1},
		{"verify", float64(histogram(m.verify.WithLabelValues("acme"))), 1},
		{"nonce ok", float64(histogram(m.nonceStore.WithLabelValues("ok"))), 2},
		{"nonce error", float64(histogram(m.nonceStore.WithLabelValues("error"))), 1},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func countSeries(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() == "partnergate_requests_total" || f.GetName() == "partnergate_verify_duration_seconds" ||
			f.GetName() == "partnergate_nonce_store_duration_seconds" {
			n += len(f.GetMetric())
		}
	}
	return n
}
