package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/bench/wrk"
)

// TestWithCompareRunsABesideA: with -compare, every round runs A right after a and B and
// C at the end, and A, B and C run a's, b's and c's configuration.
func TestWithCompareRunsABesideA(t *testing.T) {
	round := []string{phaseBaseline, phaseMemory, phaseFlood, phaseFloodAlone, phaseFloor, phaseFloorAlone, phaseRedis}
	want := []string{"a", "A", "b", "d", "e", "f", "g", "c", "B", "C"}
	if got := withCompare(round); !slices.Equal(got, want) {
		t.Errorf("withCompare(%q) = %q, want %q", round, got, want)
	}
	for ph, want := range map[string]string{"A": "a", "B": "b", "C": "c", "a": "a", "b": "b", "d": "d"} {
		if got := config(ph); got != want {
			t.Errorf("config(%q) = %q, want %q", ph, got, want)
		}
	}
}

// TestReportComparesEachBuildWithItsBaseline: the summary has A's row and, beside b/a and
// B/a, the ratios A/a, B/A and C/A, with each round's B/A and C/A.
func TestReportComparesEachBuildWithItsBaseline(t *testing.T) {
	// result is a phase's round at rps requests/s over 10 s, us µs of Caddy CPU each.
	result := func(ph string, round int, rps float64, us int64) phaseResult {
		n := int64(10 * rps)
		return phaseResult{Phase: ph, Round: round, CaddyCPU: time.Duration(n*us) * time.Microsecond, GenCoreBusy: 0.5,
			Load: &wrk.Result{Requests: n, RPS: rps, Elapsed: 10 * time.Second, Status: map[int]int64{200: n},
				P50: time.Millisecond, P99: 2 * time.Millisecond}}
	}
	s := &suite{out: t.TempDir(), compareBin: "/tmp/caddy-nopgo", caddyBin: "/nonexistent/caddy", redisBin: "/nonexistent/redis",
		pool: [][]byte{[]byte("x.y.z")}, mix: defaultMix, cooldown: 2 * time.Second}
	for round, rps := range [][6]float64{{10000, 9000, 6000, 5000, 4000, 3500}, {12000, 10000, 7000, 6000, 5000, 4000}} {
		for i, ph := range []string{"a", "A", "b", "B", "c", "C"} {
			us := []int64{80, 90, 150, 180, 200, 225}[i]
			s.results = append(s.results, result(ph, round+1, rps[i], us))
		}
	}
	if err := s.report(); err != nil {
		t.Fatalf("report() error = %v", err)
	}
	data, err := os.ReadFile(filepath.Join(s.out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{
		"| A  a with the -compare build | 9500 | 1.00 ms | 2.00 ms | 0 | 90.0 | 50% |",
		"- b/a = 59.1%",
		"- B/a = 50.0% with the -compare build (caddy-nopgo), against b/a = 59.1%",
		"- A/a = 86.4%: reverse_proxy alone with the -compare build (caddy-nopgo) against this build (per round: 90.0%, 83.3%); this build answers +15.8% requests/s and spends -11.1% Caddy CPU per request",
		"- B/A = 57.9%, each build against its own baseline: the -compare build's gateway over its reverse_proxy alone (per round: 55.6%, 60.0%), against b/a = 59.1%; by Caddy CPU per request: 50.0% against 53.3%",
		"- C/A = 39.5%, each build against its own baseline: the -compare build's gateway over its reverse_proxy alone (per round: 38.9%, 40.0%), against c/a = 40.9%; by Caddy CPU per request: 40.0% against 40.0%",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "| A  ") < strings.Index(got, "| a  ") || strings.Index(got, "| A  ") > strings.Index(got, "| b  ") {
		t.Errorf("summary's A row is not between a's and b's:\n%s", got)
	}
}
