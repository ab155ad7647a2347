package jwtpartner

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/problem"
)

// tlsKeyServer serves a key set over HTTPS with httptest's self-signed certificate, and
// writes that certificate to a PEM file for jwks_ca_file.
func tlsKeyServer(t *testing.T, body []byte) (srv *httptest.Server, caFile string, down *atomic.Bool) {
	t.Helper()
	down = new(atomic.Bool)
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, caFile, down
}

// provisionURLPartner provisions a handler whose partner demo fetches url trusting caFile,
// and returns it with the function that unloads it (cancel, then Cleanup, as Caddy does).
func provisionURLPartner(t *testing.T, url, caFile string) (*Handler, func()) {
	t.Helper()
	h := &Handler{
		Partners: map[string]*Partner{"demo": {Issuer: testIssuer, Audience: testAudience, JWKSURL: url, JWKSCAFile: caFile}},
		store:    &fakeStore{},
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := h.Provision(ctx); err != nil {
		cancel()
		t.Fatalf("Provision: %v", err)
	}
	unload := func() {
		cancel()
		if err := h.Cleanup(); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	}
	t.Cleanup(unload)
	return h, unload
}

// waitKey waits until the handler's partner demo answers kid, failing after 20s.
func waitKey(t *testing.T, h *Handler, kid string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := h.partners["demo"].keys.Key(context.Background(), kid)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Key(%s) = %v after 20s, want the key", kid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKeyCacheKeptAcrossReload: a configuration provisioned while the partner's HTTPS key
// URL is down (its certificate from a private CA, trusted by jwks_ca_file) answers from
// the set the previous configuration fetched; a CA file with other contents is another key
// source (what is trusted changed) and starts empty.
func TestKeyCacheKeptAcrossReload(t *testing.T) {
	key := harness.NewKey(t, "ES256", "k1")
	srv, caFile, down := tlsKeyServer(t, harness.JWKS(t, key))
	old, unloadOld := provisionURLPartner(t, srv.URL+"/jwks.json", caFile)
	waitKey(t, old, "k1")

	down.Store(true)
	next, _ := provisionURLPartner(t, srv.URL+"/jwks.json", caFile)
	unloadOld() // a reload cleans up the old configuration after the new one is provisioned
	if _, err := next.partners["demo"].keys.Key(context.Background(), "k1"); err != nil {
		t.Errorf("Key(k1) after the reload with the URL down = %v, want the cached key", err)
	}

	// The same URL under a CA file with other contents: not the same source.
	otherCA := filepath.Join(t.TempDir(), "other.pem")
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherCA, append(pemBytes, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := provisionURLPartner(t, srv.URL+"/jwks.json", otherCA)
	if _, err := other.partners["demo"].keys.Key(context.Background(), "k1"); linktoken.CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("Key(k1) under another CA file = %v, want %s (no cache shared)", err, problem.CodeKeysUnavailable)
	}
}

// TestJWKSCAFileReplacesSystemPool: without jwks_ca_file the private CA's server is not
// trusted; with it the set loads.
func TestJWKSCAFileReplacesSystemPool(t *testing.T) {
	key := harness.NewKey(t, "RS256", "k1")
	srv, caFile, _ := tlsKeyServer(t, harness.JWKS(t, key))
	withCA, _ := provisionURLPartner(t, srv.URL+"/trusted.json", caFile)
	waitKey(t, withCA, "k1")

	without, _ := provisionURLPartner(t, srv.URL+"/untrusted.json", "")
	deadline := time.Now().Add(20 * time.Second)
	failed := func() float64 {
		var m dto.Metric
		if err := without.metrics.keyRefreshes.WithLabelValues("demo", "error").Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	for failed() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no failed fetch after 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := without.partners["demo"].keys.Key(context.Background(), "k1"); linktoken.CodeOf(err) != problem.CodeKeysUnavailable {
		t.Errorf("Key(k1) without jwks_ca_file = %v, want %s", err, problem.CodeKeysUnavailable)
	}
}

// TestUnknownKidsPacing: a burst of key_unknown is one line per cooldown, with the count
// since the last line.
func TestUnknownKidsPacing(t *testing.T) {
	var u unknownKids
	t0 := time.Unix(1_800_000_000, 0)
	steps := []struct {
		at   time.Duration
		want int
	}{
		{0, 1}, // the first is logged at once
		{time.Second, 0},
		{2 * time.Second, 0},
		{30 * time.Second, 3}, // the cooldown has passed: this one and the two held
		{31 * time.Second, 0},
		{2 * time.Minute, 2},
	}
	noFlush := func(time.Duration) func() bool { return func() bool { return true } }
	for _, s := range steps {
		if got := u.note(t0.Add(s.at), 30*time.Second, noFlush); got != s.want {
			t.Errorf("note(+%s) = %d, want %d", s.at, got, s.want)
		}
	}
}

// fakeTimers is a Handler's afterFunc that runs nothing by itself: the test fires the
// scheduled functions.
type fakeTimers struct {
	mu      sync.Mutex
	after   []time.Duration
	f       []func()
	stopped int
}

func (ft *fakeTimers) afterFunc(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.after, ft.f = append(ft.after, d), append(ft.f, f)
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		ft.stopped++
		return true
	}
}

// fire runs the i-th scheduled function.
func (ft *fakeTimers) fire(i int) {
	ft.mu.Lock()
	f := ft.f[i]
	ft.mu.Unlock()
	f()
}

// TestUnknownKidsWrittenWhenTheCooldownEnds: the count of a burst's held key_unknown
// answers is written when the burst's cooldown ends, without waiting for another
// key_unknown; one flush is scheduled per cooldown, and Cleanup writes what is held and
// stops the flush.
func TestUnknownKidsWrittenWhenTheCooldownEnds(t *testing.T) {
	const msg = "partner tokens name kids not in the key set"
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	core, logs := observer.New(zapcore.InfoLevel)
	timers := &fakeTimers{}
	ps := &partnerState{name: "demo", unknownKids: new(unknownKids), cooldown: 30 * time.Second}
	h := &Handler{
		logger:    zap.New(core),
		now:       func() time.Time { return now },
		afterFunc: timers.afterFunc,
		partners:  map[string]*partnerState{"demo": ps},
	}
	counts := func() []int64 {
		var out []int64
		for _, e := range logs.FilterMessage(msg).AllUntimed() {
			out = append(out, e.ContextMap()["count"].(int64))
		}
		return out
	}

	for _, at := range []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second} {
		now = t0.Add(at)
		h.noteUnknownKid(ps)
	}
	if got := counts(); !reflect.DeepEqual(got, []int64{1}) {
		t.Fatalf("lines during the burst: counts %v, want [1]", got)
	}
	if !reflect.DeepEqual(timers.after, []time.Duration{29 * time.Second}) {
		t.Fatalf("flushes scheduled after %v, want one after 29s (the cooldown's end)", timers.after)
	}
	now = t0.Add(30 * time.Second)
	timers.fire(0)
	if got := counts(); !reflect.DeepEqual(got, []int64{1, 3}) {
		t.Fatalf("lines after the cooldown: counts %v, want [1 3]", got)
	}

	// The flush's line starts a cooldown: the next answer is held, and flushed at its end.
	now = t0.Add(40 * time.Second)
	h.noteUnknownKid(ps)
	if got := counts(); len(got) != 2 || len(timers.after) != 2 || timers.after[1] != 20*time.Second {
		t.Fatalf("an answer 10s after the flush: counts %v, flushes after %v, want it held and a flush after 20s", got, timers.after)
	}
	if err := h.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if got := counts(); !reflect.DeepEqual(got, []int64{1, 3, 1}) || timers.stopped != 1 {
		t.Errorf("Cleanup: counts %v, %d flushes stopped, want [1 3 1] and 1", got, timers.stopped)
	}
	// A flush that fires after Cleanup writes nothing more, and nothing is scheduled again.
	timers.fire(1)
	now = t0.Add(41 * time.Second)
	h.noteUnknownKid(ps)
	if got := counts(); len(got) != 3 || len(timers.after) != 2 {
		t.Errorf("after Cleanup: counts %v, %d flushes scheduled, want no new line and none scheduled", got, len(timers.after))
	}
}

// TestKeySetGauges: a jwks_file partner reports its load time as the key set's last
// success and an age; no failure series before a failure.
func TestKeySetGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	jwks := harness.WriteJWKS(t, t.TempDir(), harness.NewKey(t, "ES256", "k"))
	loaded := time.Now().Add(-time.Hour)
	h := &Handler{now: func() time.Time { return loaded }, metrics: newMetrics(reg)}
	if _, err := h.keySource(ctx, "demo", &Partner{JWKSFile: jwks}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == "demo" && m.GetGauge() != nil {
				got[mf.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	if v, ok := got["partnergate_key_set_last_success_timestamp_seconds"]; !ok || v != unixSeconds(loaded) {
		t.Errorf("partnergate_key_set_last_success_timestamp_seconds = %v (%v), want %v", v, ok, unixSeconds(loaded))
	}
	// An hour, give or take the test's own run time.
	if v := got["partnergate_key_set_age_seconds"]; v < 3600 || v > 3660 {
		t.Errorf("partnergate_key_set_age_seconds = %v, want about 3600", v)
	}
	if v, ok := got["partnergate_key_set_last_failure_timestamp_seconds"]; ok {
		t.Errorf("partnergate_key_set_last_failure_timestamp_seconds = %v, want no series before a failure", v)
	}
}

// TestLogFetch: each change a fetch reports is one line at its level; a fetch that changes
// nothing writes only its debug line.
func TestLogFetch(t *testing.T) {
	since := time.Unix(1_800_000_000, 0)
	refused := &linktoken.KeySetError{Key: 0, KeyID: "k2", Err: errors.New(`key holds private key material (member "d")`)}
	tests := []struct {
		name string
		ev   linktoken.FetchEvent
		want []string // "level message"
	}{
		{"unchanged", linktoken.FetchEvent{Keys: 1}, nil},
		{"loaded", linktoken.FetchEvent{Loaded: true, Keys: 2}, []string{"info partner key set loaded"}},
		{"rotated", linktoken.FetchEvent{Added: []string{"k2"}, Removed: []string{"k1"}, Keys: 1}, []string{"info partner key set rotated"}},
		{"refused, failing", linktoken.FetchEvent{Err: fmt.Errorf("refusing fetched key set: %w", refused), RefusedChanged: true, FailureStarted: true, FailingSince: since, Keys: 1},
			[]string{"warn partner key set refused", "warn partner key set fetch failing"}},
		{"refused again", linktoken.FetchEvent{Err: fmt.Errorf("refusing fetched key set: %w", refused), FailingSince: since, Keys: 1}, nil},
		{"still failing", linktoken.FetchEvent{Err: errors.New("fetching key set: status 503"), FailingSince: since, Keys: 1}, nil},
		{"near max_stale", linktoken.FetchEvent{Err: errors.New("fetching key set: status 503"), StaleSoon: true, StaleIn: time.Hour, FailingSince: since, Keys: 1},
			[]string{"warn partner key set near max_stale"}},
		{"recovered", linktoken.FetchEvent{Recovered: true, RecoveredFrom: since, Keys: 1}, []string{"info partner key set fetch recovered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			logFetch(zap.New(core), tt.ev)
			var got []string
			for _, e := range logs.All() {
				got = append(got, e.Level.String()+" "+e.Message)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("logFetch(%s) wrote %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}
