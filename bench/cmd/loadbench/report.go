package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// saturated is the generator core's busy share above which a phase's rate says more
// about the load generator than about the gateway.
const saturated = 0.95

// Goals of issue 7, as ratios of requests per second in the same run.
const (
	goalMemory = 0.60 // b / a
	goalRedis  = 0.50 // c / a
	goalFlood  = 0.90 // d (valid tokens) / b
)

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func (s *suite) machine() []string {
	caddyVersion, _ := exec.Command(s.caddyBin, "version").Output()
	redisVersion, _ := exec.Command(s.redisBin, "--version").Output()
	// wrk -v prints its version, then its usage, and exits 1.
	wrkVersion, _ := exec.Command(s.wrkBin, "-v").Output()
	wrkName, _, _ := strings.Cut(firstLine(wrkVersion), " Copyright")
	load, _ := os.ReadFile("/proc/loadavg")
	return []string{
		fmt.Sprintf("machine: %d CPUs (%s), %s, %s/%s", runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH),
		fmt.Sprintf("caddy: %s; %s", firstLine(caddyVersion), firstLine(redisVersion)),
		fmt.Sprintf("pinning: Caddy on CPU %s (GOMAXPROCS=%d); wrk, upstream and Redis on CPU %s (the upstream with GOMAXPROCS=1); nice %d", s.gwCPU, s.gomaxprocs, s.genCPU, niceness),
		s.scaleLine(),
		fmt.Sprintf("load: %s with bench/wrk/partner.lua, %d process(es) of 1 thread, %d connections in all, closed loop; per phase a %v warmup run, then a %v measured run; %d rounds; unknown-kid flood: a second wrk with %d connections, key set refresh_cooldown %v",
			strings.TrimSpace(wrkName), s.procs, s.conns, s.warmup, s.duration, s.rounds, s.floodConns, s.cooldown),
		fmt.Sprintf("requests: POST %s, Content-Type %s, body a %d-byte token, %s; the baseline sends the same tokens; key set from jwks_%s", benchPath, benchContentType, len(s.pool[0]), s.mix, s.jwksMode),
		fmt.Sprintf("upstream: %s", s.upstreamShape()),
		fmt.Sprintf("load average at start: %s", firstLine(load)),
	}
}

func (s *suite) upstreamShape() string {
	if s.operator {
		return fmt.Sprintf("Go net/http, drains the body, answers 200 with a %d-byte text body (-operator)", len(leanBody))
	}
	return fmt.Sprintf("Go net/http, answers 200 with a %d-byte JSON body without reading the body (net/http discards it)", len(upstreamBody))
}

func (s *suite) printMachine(w io.Writer) {
	for _, l := range s.machine() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "\n%-36s %5s %9s %9s %9s %8s %11s %9s %7s\n", "phase", "round", "req/s", "p50", "p99", "non-200", "caddy µs/req", "gen core", "fetches")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func (s *suite) printRow(w io.Writer, r phaseResult) {
	mark := ""
	if r.Load.Exhausted {
		mark = " (tokens used up early; window shortened)"
	}
	if r.Phase == phaseFloodAlone || r.Phase == phaseFloorAlone {
		mark += " (refusals are the point: none may be 200)"
	}
	if r.GenCoreBusy >= saturated {
		mark += " (generator core saturated: this phase measured the load, not the gateway)"
	}
	fmt.Fprintf(w, "%-36s %5d %9.0f %9s %9s %8d %11.1f %8.0f%% %7s%s\n", phaseTitle[r.Phase], r.Round, r.Load.RPS,
		ms(r.Load.P50), ms(r.Load.P99), r.Load.Non(200), r.usPerReq(), 100*r.GenCoreBusy, fetchCol(r), mark)
	s.printScaleRow(w, r)
	if r.Flood != nil {
		title := "   flood (random kids)"
		if r.Phase == phaseFloor {
			title = "   flood (random kids), fixed 401"
		}
		fmt.Fprintf(w, "%-36s %5s %9.0f %9s %9s %8d  (rejections are the point: none may be 200)\n", title, "",
			r.Flood.RPS, ms(r.Flood.P50), ms(r.Flood.P99), r.Flood.Non(200))
	}
}

func fetchCol(r phaseResult) string {
	if config(r.Phase) == phaseBaseline {
		return "-"
	}
	return fmt.Sprint(r.Fetches)
}

// summary is the median of each phase over the rounds.
type summary struct {
	Phase       string  `json:"phase"`
	RPS         float64 `json:"rps"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	Non200      int64   `json:"non_200"`
	CaddyUS     float64 `json:"caddy_us_per_request"`
	GenCoreBusy float64 `json:"gen_core_busy"`
	Rounds      int     `json:"rounds"`
	// Medians of the scale measures (scale.go).
	AdminUpMS    float64 `json:"admin_up_ms"`
	FirstOKMS    float64 `json:"first_200_ms"`
	ConfigLoadMS float64 `json:"caddy_config_load_ms"`
	RSSMiB       float64 `json:"caddy_rss_mib"`
	HeapMiB      float64 `json:"caddy_heap_inuse_mib"`
	RedisUS      float64 `json:"redis_cpu_us_per_request,omitempty"`
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func (s *suite) summarise(ph string) (summary, bool) {
	var rps, p50, p99, us, busy []float64
	sum := summary{Phase: ph}
	for _, r := range s.results {
		if r.Phase != ph {
			continue
		}
		rps = append(rps, r.Load.RPS)
		p50 = append(p50, float64(r.Load.P50)/1e6)
		p99 = append(p99, float64(r.Load.P99)/1e6)
		us = append(us, r.usPerReq())
		busy = append(busy, r.GenCoreBusy)
		sum.Non200 += r.Load.Non(200)
		sum.Rounds++
	}
	if sum.Rounds == 0 {
		return sum, false
	}
	sum.RPS, sum.P50ms, sum.P99ms, sum.CaddyUS, sum.GenCoreBusy = median(rps), median(p50), median(p99), median(us), median(busy)
	s.summariseScale(ph, &sum)
	return sum, true
}

func verdict(ratio, goal float64) string {
	if ratio >= goal {
		return fmt.Sprintf("meets the goal of %.0f%%", 100*goal)
	}
	return fmt.Sprintf("MISSES the goal of %.0f%%", 100*goal)
}

func (s *suite) report() error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n## Summary (medians over the rounds)\n\n")
	for _, l := range s.machine() {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	fmt.Fprintf(&b, "\n| phase | req/s | p50 | p99 | non-200 | Caddy CPU µs/req | generator core busy |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	sums := map[string]summary{}
	for _, ph := range []string{phaseBaseline, phaseBaselineCompare, phaseMemory, phaseRedis, phaseFlood, phaseFloodAlone, phaseFloor, phaseFloorAlone, phaseMemoryCompare, phaseRedisCompare} {
		sum, ok := s.summarise(ph)
		if !ok {
			continue
		}
		sums[ph] = sum
		warn := ""
		if sum.GenCoreBusy >= saturated {
			warn = " (saturated: not a measure of the gateway)"
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.2f ms | %.2f ms | %d | %.1f | %.0f%%%s |\n", phaseTitle[ph], sum.RPS, sum.P50ms, sum.P99ms, sum.Non200, sum.CaddyUS, 100*sum.GenCoreBusy, warn)
	}
	fmt.Fprintln(&b)
	a, okA := sums[phaseBaseline]
	// The CPU view divides Caddy's CPU time per request instead of the rates: on a core
	// that other work on the machine also wants, it is the steadier of the two.
	if m, ok := sums[phaseMemory]; ok && okA {
		fmt.Fprintf(&b, "- b/a = %.1f%% (%s)%s; by Caddy CPU per request: %.1f%%\n", 100*m.RPS/a.RPS, verdict(m.RPS/a.RPS, goalMemory), s.perRound(phaseMemory), 100*a.CaddyUS/m.CaddyUS)
	}
	if c, ok := sums[phaseRedis]; ok && okA {
		fmt.Fprintf(&b, "- c/a = %.1f%% (%s)%s; by Caddy CPU per request: %.1f%%\n", 100*c.RPS/a.RPS, verdict(c.RPS/a.RPS, goalRedis), s.perRound(phaseRedis), 100*a.CaddyUS/c.CaddyUS)
	}
	for _, ph := range []string{phaseMemoryCompare, phaseRedisCompare} {
		x, ok := sums[ph]
		y, okY := sums[config(ph)]
		if !ok || !okY || !okA {
			continue
		}
		fmt.Fprintf(&b, "- %s/a = %.1f%% with the -compare build (%s), against %s/a = %.1f%%: this build answers %+.1f%% requests/s and spends %+.1f%% Caddy CPU per request\n",
			ph, 100*x.RPS/a.RPS, filepath.Base(s.compareBin), config(ph), 100*y.RPS/a.RPS, 100*(y.RPS/x.RPS-1), 100*(y.CaddyUS/x.CaddyUS-1))
	}
	b.WriteString(s.compareReport(sums))
	b.WriteString(s.floodReport())
	b.WriteString(s.scaleReport(sums))
	fmt.Print(b.String())
	if err := os.WriteFile(filepath.Join(s.out, "summary.md"), b.Bytes(), 0o644); err != nil {
		return err
	}
	data, err := json.MarshalIndent(struct {
		Machine []string           `json:"machine"`
		Phases  []phaseResult      `json:"phases"`
		Summary map[string]summary `json:"summary"`
	}{s.machine(), s.results, sums}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.out, "results.json"), data, 0o644)
}

// perRound lists the ratio of ph to the baseline of the same round, to show the spread.
func (s *suite) perRound(ph string) string {
	parts := s.roundRatios(ph, phaseBaseline)
	if len(parts) < 2 {
		return ""
	}
	return "; per round: " + strings.Join(parts, ", ")
}

// floodReport compares each round's d with the same round's b, e, f and g (a few minutes
// apart, so that the VM's drift between rounds cancels) and gives the medians over the
// rounds.
func (s *suite) floodReport() string {
	byRound := func(ph string) map[int]phaseResult {
		m := map[int]phaseResult{}
		for _, r := range s.results {
			if r.Phase == ph {
				m[r.Round] = r
			}
		}
		return m
	}
	bs, es, fs, gs := byRound(phaseMemory), byRound(phaseFloodAlone), byRound(phaseFloor), byRound(phaseFloorAlone)
	// ratio is one ratio's value in every round, for its median and its spread.
	type ratio struct {
		vals   []float64
		rounds []string
	}
	add := func(r *ratio, v float64) {
		r.vals = append(r.vals, v)
		r.rounds = append(r.rounds, fmt.Sprintf("%.1f%%", 100*v))
	}
	var raw, floor, overFloor ratio
	var floodRPS, floorRPS, share, validB, validD, validF, refusalE, refusalG []float64
	var fetchRounds []string
	none200 := true
	for _, d := range s.results {
		if d.Phase != phaseFlood || d.Flood == nil {
			continue
		}
		allowed := int(math.Ceil(d.Load.Elapsed.Seconds()/s.cooldown.Seconds())) + 1
		fetchRounds = append(fetchRounds, fmt.Sprintf("%d of %d allowed", d.Fetches, allowed))
		none200 = none200 && d.Flood.Status[200] == 0
		floodRPS = append(floodRPS, d.Flood.RPS)
		b, ok := bs[d.Round]
		if !ok {
			continue
		}
		add(&raw, d.Load.RPS/b.Load.RPS)
		// validUS is what a valid token cost in a flooded phase: its Caddy CPU less the
		// flood's answers at what each costs alone (e or g, same round). A cliff (a fetch
		// per unknown kid, a lock held by the flood) would make d's dearer than f's.
		validUS := func(x, alone phaseResult) float64 {
			return (float64(x.CaddyCPU.Microseconds()) - float64(x.Flood.Requests)*alone.usPerReq()) / float64(x.Load.Requests)
		}
		e, okE := es[d.Round]
		if okE && d.Load.Requests > 0 {
			validB, validD = append(validB, b.usPerReq()), append(validD, validUS(d, e))
			share = append(share, d.Flood.RPS*e.usPerReq()/1e6)
			refusalE = append(refusalE, e.usPerReq())
		}
		f, okF := fs[d.Round]
		if !okF || f.Flood == nil {
			continue
		}
		// The same flood answered at the floor: what any refusal inside Caddy takes from
		// valid tokens, and what jwt_partner's take beyond it.
		none200 = none200 && f.Flood.Status[200] == 0
		floorRPS = append(floorRPS, f.Flood.RPS)
		add(&floor, f.Load.RPS/b.Load.RPS)
		add(&overFloor, d.Load.RPS/f.Load.RPS)
		if g, ok := gs[d.Round]; ok && okE && f.Load.Requests > 0 {
			validF = append(validF, validUS(f, g))
			refusalG = append(refusalG, g.usPerReq())
		}
	}
	if len(fetchRounds) == 0 {
		return ""
	}
	var b strings.Builder
	if len(raw.vals) > 0 {
		fmt.Fprintf(&b, "- d/b = %.1f%% valid-token throughput under the flood, each round's d over the same round's b (%s); per round: %s; the flood ran at %.0f req/s, none answered 200: %v\n",
			100*median(raw.vals), verdict(median(raw.vals), goalFlood), strings.Join(raw.rounds, ", "), median(floodRPS), none200)
	}
	if len(floor.vals) > 0 {
		fmt.Fprintf(&b, "- the floor: f/b = %.1f%% valid-token throughput under the same flood sent to a route where Caddy answers a fixed 401 and verifies nothing (per round: %s; the flood ran at %.0f req/s there): what a flood of this size takes whatever the gateway does\n",
			100*median(floor.vals), strings.Join(floor.rounds, ", "), median(floorRPS))
		fmt.Fprintf(&b, "- d/f = %.1f%% valid-token throughput under the unknown-kid flood over that under the floor's (%s); per round: %s\n",
			100*median(overFloor.vals), verdict(median(overFloor.vals), goalFlood), strings.Join(overFloor.rounds, ", "))
	}
	if len(refusalE) > 0 {
		fmt.Fprintf(&b, "- one refusal costs Caddy %.1f µs of CPU in jwt_partner (e)", median(refusalE))
		if len(refusalG) > 0 {
			fmt.Fprintf(&b, " and %.1f µs at the floor (g)", median(refusalG))
		}
		fmt.Fprintf(&b, "; the flood's refusals took %.0f%% of the gateway's core in d\n", 100*median(share))
		fmt.Fprintf(&b, "- a valid token's Caddy CPU, the flood's refusals taken out at their cost alone: %.1f µs in b, %.1f µs under the unknown-kid flood (d)", median(validB), median(validD))
		if len(validF) > 0 {
			fmt.Fprintf(&b, ", %.1f µs under the floor's (f)", median(validF))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "- key set fetches in each flood window (refresh_cooldown %v: at most one per cooldown): %s\n", s.cooldown, strings.Join(fetchRounds, ", "))
	return b.String()
}
