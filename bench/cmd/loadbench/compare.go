package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// withCompare adds the -compare build's phases to a round's phases: A right after a, so
// that the two baselines run seconds apart, and B and C at the end.
func withCompare(phases []string) []string {
	out := make([]string, 0, len(phases)+3)
	for _, ph := range phases {
		out = append(out, ph)
		if ph == phaseBaseline {
			out = append(out, phaseBaselineCompare)
		}
	}
	return append(out, phaseMemoryCompare, phaseRedisCompare)
}

// compareReport gives the ratios that phase A makes possible: A/a, what the -compare build
// changes in reverse_proxy alone (a build option such as PGO speeds up the baseline too),
// and B/A and C/A, each gateway phase against its own build's baseline, beside b/a and c/a.
// The lines B/a and C/a of report still say what the change does to the gateway itself.
func (s *suite) compareReport(sums map[string]summary) string {
	a, okA := sums[phaseBaseline]
	x, okX := sums[phaseBaselineCompare]
	if !okA || !okX {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- A/a = %.1f%%: reverse_proxy alone with the -compare build (%s) against this build%s; this build answers %+.1f%% requests/s and spends %+.1f%% Caddy CPU per request\n",
		100*x.RPS/a.RPS, filepath.Base(s.compareBin), s.perRoundOver(phaseBaselineCompare, phaseBaseline), 100*(a.RPS/x.RPS-1), 100*(a.CaddyUS/x.CaddyUS-1))
	for _, ph := range []string{phaseMemoryCompare, phaseRedisCompare} {
		g, ok := sums[ph]
		y, okY := sums[config(ph)]
		if !ok || !okY {
			continue
		}
		fmt.Fprintf(&b, "- %s/A = %.1f%%, each build against its own baseline: the -compare build's gateway over its reverse_proxy alone%s, against %s/a = %.1f%%; by Caddy CPU per request: %.1f%% against %.1f%%\n",
			ph, 100*g.RPS/x.RPS, s.perRoundOver(ph, phaseBaselineCompare), config(ph), 100*y.RPS/a.RPS, 100*x.CaddyUS/g.CaddyUS, 100*a.CaddyUS/y.CaddyUS)
	}
	return b.String()
}

// perRoundOver lists the ratio of ph to base in each round where both ran, to show the
// spread; "" for fewer than two rounds.
func (s *suite) perRoundOver(ph, base string) string {
	parts := s.roundRatios(ph, base)
	if len(parts) < 2 {
		return ""
	}
	return " (per round: " + strings.Join(parts, ", ") + ")"
}

// roundRatios is ph's requests/s over base's in each round where both ran, as percentages.
func (s *suite) roundRatios(ph, base string) []string {
	rps := map[int]float64{}
	for _, r := range s.results {
		if r.Phase == base {
			rps[r.Round] = r.Load.RPS
		}
	}
	var parts []string
	for _, r := range s.results {
		if r.Phase == ph && rps[r.Round] > 0 {
			parts = append(parts, fmt.Sprintf("%.1f%%", 100*r.Load.RPS/rps[r.Round]))
		}
	}
	return parts
}
