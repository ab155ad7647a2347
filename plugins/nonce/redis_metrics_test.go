package nonce

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/partnergate/partnergate/plugins/nonce/redistest"
)

func TestRedisMetrics(t *testing.T) {
	srv := redistest.Start(t)
	r := &Redis{Address: srv.Addr(), PingInterval: caddy.Duration(50 * time.Millisecond), DialTimeout: caddy.Duration(200 * time.Millisecond)}
	ctx := provisionRedis(t, r)
	e := liveEntry("acme", "nonce-metrics-00001")
	claimCtx(t, r, e)
	claimCtx(t, r, e)

	// a second store in the same config (same registry) must not fail to register
	second := &Redis{Address: srv.Addr(), KeyPrefix: "other:"}
	if err := second.Provision(ctx); err != nil {
		t.Fatalf("second Provision in the same context: %v", err)
	}
	defer second.Cleanup()
	if second.metrics.claims != r.metrics.claims {
		t.Error("second store registered its own claims counter, want the existing one")
	}

	reg := ctx.GetMetricsRegistry()
	counter := func(outcome string) float64 {
		return metricValue(t, r.metrics.claims.WithLabelValues(srv.Addr(), outcome))
	}
	if counter("fresh") != 1 || counter("replayed") != 1 || counter("error") != 0 {
		t.Errorf("claims fresh, replayed, error = %v, %v, %v, want 1, 1, 0", counter("fresh"), counter("replayed"), counter("error"))
	}
	gaugeUp := func() (float64, error) { return gatherUp(reg, srv.Addr()) }
	eventually(t, 30*time.Second, "up gauge", func() error {
		if v, err := gaugeUp(); err != nil || v != 1 {
			return fmt.Errorf("up = %v, %v, want 1", v, err)
		}
		return nil
	})
	var h dto.Metric
	if err := r.metrics.duration.WithLabelValues(srv.Addr()).(prometheus.Metric).Write(&h); err != nil || h.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("duration samples = %d, %v, want 2", h.GetHistogram().GetSampleCount(), err)
	}

	srv.Kill()
	claimCtx(t, r, liveEntry("acme", "nonce-metrics-00002"))
	if counter("error") != 1 {
		t.Errorf("claims error = %v, want 1", counter("error"))
	}
	eventually(t, 30*time.Second, "up gauge after Redis went down", func() error {
		if v, err := gaugeUp(); err != nil || v != 0 {
			return fmt.Errorf("up = %v, %v, want 0", v, err)
		}
		return nil
	})
}

func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

// gatherUp returns the value of partnergate_nonce_store_redis_up for target in reg.
func gatherUp(reg prometheus.Gatherer, target string) (float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != "partnergate_nonce_store_redis_up" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == target {
					return m.GetGauge().GetValue(), nil
				}
			}
		}
	}
	return 0, fmt.Errorf("partnergate_nonce_store_redis_up{target=%q} not gathered", target)
}

// TestRedisUpPerClient: two stores reach the same target with different settings, and only
// one of them can (the other has a wrong password). Each client keeps its own state, and
// the target's gauge is 0 while either fails: requests through that store get 503.
func TestRedisUpPerClient(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "right")
	// Generous timeouts: a ping of the good client may only fail if the other's state
	// overwrote it, not because a loaded machine stalled past the 500 ms default.
	good := &Redis{Address: srv.Addr(), Password: "right", PingInterval: caddy.Duration(20 * time.Millisecond),
		DialTimeout: caddy.Duration(10 * time.Second), ReadTimeout: caddy.Duration(10 * time.Second), WriteTimeout: caddy.Duration(10 * time.Second)}
	ctx := provisionRedis(t, good)
	reg := ctx.GetMetricsRegistry()
	eventually(t, 30*time.Second, "up with the good client", func() error {
		if v, err := gatherUp(reg, srv.Addr()); err != nil || v != 1 {
			return fmt.Errorf("up = %v, %v, want 1", v, err)
		}
		return nil
	})

	// pings once at start, and fails
	bad := &Redis{Address: srv.Addr(), Password: "wrong", PingInterval: caddy.Duration(time.Hour)}
	if err := bad.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the bad client's ping", func() error {
		if bad.Ping(context.Background()) == nil {
			t.Fatal("Ping with a wrong password succeeded")
		}
		if bad.conn.up.Load() {
			return errors.New("bad client up")
		}
		return nil
	})
	// The good client keeps pinging successfully; its state must not hide the bad one's.
	// Check across ten of its pings, counted where they arrive.
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "right"})
	defer admin.Close()
	pings := func() int {
		info := admin.Info(context.Background(), "commandstats").Val()
		m := regexp.MustCompile(`cmdstat_ping:calls=(\d+)`).FindStringSubmatch(info)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	from := pings()
	eventually(t, 30*time.Second, "ten pings of the good client", func() error {
		if v, err := gatherUp(reg, srv.Addr()); err != nil || v != 0 {
			t.Fatalf("up with one client failing = %v, %v, want 0", v, err)
		}
		if !good.conn.up.Load() {
			t.Fatal("the good client is down: its state was overwritten by the other's")
		}
		if n := pings() - from; n < 10 {
			return fmt.Errorf("%d pings", n)
		}
		return nil
	})

	if err := bad.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if v, err := gatherUp(reg, srv.Addr()); err != nil || v != 1 {
		t.Errorf("up once the failing store is gone = %v, %v, want 1", v, err)
	}
}
