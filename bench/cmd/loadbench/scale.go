package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
)

// How the cost grows (issue 29, goal 4): -partners puts N partners, each with its own key
// set, in the gateway's handler and spreads the valid load's tokens over them; -gomaxprocs
// and a -gateway-cpu list give Caddy more than one core; -redis-cluster (cluster.go) runs
// phase c against three masters. Each gateway phase also reports how long Caddy took to
// come up and how much memory it holds, so that a curve over N shows what grows with it.

// benchPartnerConfig is one of the other partners in the Caddyfile.
type benchPartnerConfig struct {
	Name, Issuer, JWKSFile string
}

// otherPartner is one of the other partners: its signing side and its configuration.
type otherPartner struct {
	*partner
	benchPartnerConfig
	path string // its request path, /partner/<name>/url
}

// otherPartnerName is the name of the i-th other partner (from 1): the first partner keeps
// benchPartner, so that the baseline, the probe and the floods are those of a run without
// -partners.
func otherPartnerName(i int) string { return fmt.Sprintf("p%04d", i) }

// keyCacheDir is where the other partners' keys are kept between runs: RSA-2048
// generation takes 50-100 ms a key, a minute for a thousand partners on one core.
func keyCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "partnergate", "loadbench", "keys"), nil
}

// loadPartnerKeys returns n RSA keys, the i-th from dir/partner-<i>.pem when it is there,
// else generated on every core and written there.
func loadPartnerKeys(dir string, n int) ([]*rsa.PrivateKey, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	keys := make([]*rsa.PrivateKey, n)
	err := onEveryCore(n, func(i int) (err error) {
		keys[i], err = cachedKey(filepath.Join(dir, fmt.Sprintf("partner-%04d.pem", i+1)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("loading partner keys: %v", err)
	}
	return keys, nil
}

func cachedKey(file string) (*rsa.PrivateKey, error) {
	if data, err := os.ReadFile(file); err == nil {
		if b, _ := pem.Decode(data); b != nil {
			if key, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil && key.N.BitLen() == benchRSABits {
				return key, nil
			}
		}
		// A damaged file is made again below.
	}
	key, err := rsa.GenerateKey(rand.Reader, benchRSABits)
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	// Written aside and renamed, so that two runs at once never read half a key.
	tmp := fmt.Sprintf("%s.%d.tmp", file, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return nil, err
	}
	return key, os.Rename(tmp, file)
}

// setupPartners makes the -partners beyond the first, each with its key set in its own
// jwks_file in the -out folder.
func (s *suite) setupPartners() error {
	if s.partners <= 1 {
		return nil
	}
	dir, err := keyCacheDir()
	if err != nil {
		return err
	}
	t0 := time.Now()
	keys, err := loadPartnerKeys(dir, s.partners-1)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "loadbench: %d more partners' keys from %s in %v\n", len(keys), dir, time.Since(t0).Round(time.Millisecond))
	s.others = make([]otherPartner, len(keys))
	for i, key := range keys {
		// RS256 whatever -alg says: the cached keys are RSA; the link kind follows -link.
		p, err := partnerFor(key, mix{alg: jwa.RS256, kind: s.mix.kind})
		if err != nil {
			return err
		}
		name := otherPartnerName(i + 1)
		p.issuer = "https://" + name + ".partner.bench.example"
		p.short = s.operator
		o := otherPartner{partner: p, path: "/partner/" + name + "/url",
			benchPartnerConfig: benchPartnerConfig{Name: name, Issuer: p.issuer, JWKSFile: filepath.Join(s.out, "jwks-"+name+".json")}}
		if err := os.WriteFile(o.JWKSFile, p.jwks, 0o644); err != nil {
			return err
		}
		s.others[i] = o
	}
	return nil
}

// partnerConfigs is the other partners for the Caddyfile.
func (s *suite) partnerConfigs() []benchPartnerConfig {
	out := make([]benchPartnerConfig, len(s.others))
	for i, o := range s.others {
		out[i] = o.benchPartnerConfig
	}
	return out
}

// mintValid mints n fresh tokens dealt out over every partner in turn: the i-th is
// partner i mod N's. The first partner's are plain lines, sent to the wrk URL's path
// (benchPath); the others' are "PATH TOKEN" lines (see bench/wrk/partner.lua), so the
// first token, the probe's and the floods' template, is always the first partner's.
func (s *suite) mintValid(n int) ([][]byte, error) {
	if len(s.others) == 0 {
		return s.partner.mint(n)
	}
	k := len(s.others) + 1
	share := func(j int) int { return (n - j + k - 1) / k } // how many i < n have i mod k == j
	first, err := s.partner.mint(share(0))
	if err != nil {
		return nil, err
	}
	per := make([][][]byte, k)
	per[0] = first
	for j, o := range s.others {
		m := share(j + 1)
		if m == 0 {
			continue
		}
		if per[j+1], err = o.mint(m); err != nil {
			return nil, err
		}
	}
	out := make([][]byte, n)
	for i := range out {
		j := i % k
		out[i] = per[j][i/k]
		if j > 0 {
			out[i] = withPath(s.others[j-1].path, out[i])
		}
	}
	return out, nil
}

// withPath is a token line that partner.lua sends to path.
func withPath(path string, token []byte) []byte {
	return append([]byte(path+" "), token...)
}

// cpuList parses taskset's CPU list (e.g. "1", "0,1", "0-3") and returns how many CPUs
// it names.
func cpuList(s string) (int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("CPU list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("CPU list %q: %q is not a range", s, part)
			}
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	return len(seen), nil
}

// checkScale checks the values of -partners, -gomaxprocs and -gateway-cpu: Caddy's Go
// runtime must not have more Ps than the CPUs it is pinned to, or it would schedule for
// cores it may not use.
func (s *suite) checkScale() error {
	if s.partners < 1 {
		return fmt.Errorf("-partners %d: want at least 1", s.partners)
	}
	if s.gomaxprocs < 1 {
		return fmt.Errorf("-gomaxprocs %d: want at least 1", s.gomaxprocs)
	}
	n, err := cpuList(s.gwCPU)
	if err != nil {
		return fmt.Errorf("-gateway-cpu: %v", err)
	}
	if s.gomaxprocs > n {
		return fmt.Errorf("-gomaxprocs %d with -gateway-cpu %s: want at most one P per CPU Caddy is pinned to (%d)", s.gomaxprocs, s.gwCPU, n)
	}
	return nil
}

// vmRSS is the resident set of process pid, from /proc/<pid>/status.
func vmRSS(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmRSS(data)
}

func parseVmRSS(status []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading VmRSS %q: %v", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// heapInuse is Caddy's Go heap in use (runtime.MemStats.HeapInuse), from the admin API's
// expvar page.
func heapInuse(admin string) (uint64, error) {
	resp, err := http.Get("http://" + admin + "/debug/vars")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/debug/vars answered %d", resp.StatusCode)
	}
	var vars struct {
		Memstats struct {
			HeapInuse uint64
		} `json:"memstats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		return 0, fmt.Errorf("reading /debug/vars: %v", err)
	}
	return vars.Memstats.HeapInuse, nil
}

// caddyLoadTime is the time between the first and the last line of Caddy's own start-up
// log that brackets its configuration load: from "using config from file" (the
// Caddyfile read, before it is adapted) to "serving initial configuration" (adapted,
// every module provisioned, the servers started). It is 0 when either line is missing.
func caddyLoadTime(log []byte) time.Duration {
	var from, to float64
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			TS  float64 `json:"ts"`
			Msg string  `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch line.Msg {
		case "using config from file":
			from = line.TS
		case "serving initial configuration":
			to = line.TS
		}
	}
	if from == 0 || to < from {
		return 0
	}
	return time.Duration((to - from) * float64(time.Second))
}

// measureCaddy fills r's memory and Caddy's own configuration load time from a running
// phase's Caddy; what cannot be read stays 0 and is said on standard error.
func (s *suite) measureCaddy(r *phaseResult, p *proc, admin string) {
	var err error
	if r.CaddyRSS, err = vmRSS(p.cmd.Process.Pid); err != nil {
		fmt.Fprintf(os.Stderr, "loadbench: phase %s: Caddy's VmRSS: %v\n", r.Phase, err)
	}
	if r.CaddyHeap, err = heapInuse(admin); err != nil {
		fmt.Fprintf(os.Stderr, "loadbench: phase %s: Caddy's heap: %v\n", r.Phase, err)
	}
	log, _ := os.ReadFile(filepath.Join(s.out, "logs", p.name+".log"))
	r.ConfigLoad = caddyLoadTime(log)
}

// redisCPU is the CPU time of every Redis server the suite runs: one, or the cluster's.
func (s *suite) redisCPU() time.Duration {
	var sum time.Duration
	for _, p := range append([]*proc{s.redisProc}, s.clusterProcs...) {
		if p != nil {
			c, _ := p.cpuTime()
			sum += c
		}
	}
	return sum
}

// redisUSPerReq is the Redis servers' CPU per valid request in the measured window.
func (r phaseResult) redisUSPerReq() float64 {
	if r.Load == nil || r.Load.Requests == 0 {
		return 0
	}
	return float64(r.RedisCPU.Microseconds()) / float64(r.Load.Requests)
}

// scaleLine is the machine header's line on partners and the Redis topology.
func (s *suite) scaleLine() string {
	redis := "one redis-server"
	if len(s.cluster) > 0 {
		redis = fmt.Sprintf("a Redis Cluster of %d masters (%s), no replicas", len(s.cluster), strings.Join(s.cluster, " "))
	}
	return fmt.Sprintf("scale: %d partner(s) in the handler, each with its own RSA-%d key set, the valid tokens dealt over them in turn; phase c against %s", s.partners, benchRSABits, redis)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// printScaleRow is the second line of a gateway phase's row: how long Caddy took to come
// up, the memory it held after the phase and, for c, Redis's CPU per request.
func (s *suite) printScaleRow(w io.Writer, r phaseResult) {
	fmt.Fprintf(w, "%-36s %5s provisioning: admin up %s, first 200 %s, Caddy's config load %s; after: VmRSS %.1f MiB, heap in use %.1f MiB",
		"   scale", "", ms(r.AdminUp), ms(r.FirstOK), ms(r.ConfigLoad), mib(r.CaddyRSS), mib(r.CaddyHeap))
	if config(r.Phase) == phaseRedis {
		fmt.Fprintf(w, "; Redis CPU %.1f µs/req", r.redisUSPerReq())
	}
	fmt.Fprintln(w)
}

// scaleReport is the summary's table of provisioning, memory and Redis CPU, medians over
// the rounds, for the curves of docs/performance.md.
func (s *suite) scaleReport(sums map[string]summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d partner(s), GOMAXPROCS=%d on CPU %s", s.partners, s.gomaxprocs, s.gwCPU)
	if len(s.cluster) > 0 {
		fmt.Fprintf(&b, ", phase c on a %d-master Redis Cluster", len(s.cluster))
	}
	fmt.Fprintf(&b, ":\n\n| phase | req/s | Caddy CPU µs/req | admin up | first 200 | Caddy's config load | VmRSS | heap in use | Redis CPU µs/req |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, ph := range []string{phaseBaseline, phaseMemory, phaseRedis, phaseFlood, phaseFloodAlone, phaseFloor, phaseFloorAlone, phaseMemoryCompare, phaseRedisCompare} {
		sum, ok := sums[ph]
		if !ok {
			continue
		}
		redis := "-"
		if config(ph) == phaseRedis {
			redis = fmt.Sprintf("%.1f", sum.RedisUS)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.1f | %.0f ms | %.0f ms | %.0f ms | %.1f MiB | %.1f MiB | %s |\n", phaseTitle[ph], sum.RPS, sum.CaddyUS,
			sum.AdminUpMS, sum.FirstOKMS, sum.ConfigLoadMS, sum.RSSMiB, sum.HeapMiB, redis)
	}
	return b.String()
}

// summariseScale adds the medians of the scale measures of ph to sum.
func (s *suite) summariseScale(ph string, sum *summary) {
	var up, ok, load, rss, heap, redis []float64
	for _, r := range s.results {
		if r.Phase != ph {
			continue
		}
		up = append(up, float64(r.AdminUp)/1e6)
		ok = append(ok, float64(r.FirstOK)/1e6)
		load = append(load, float64(r.ConfigLoad)/1e6)
		rss = append(rss, mib(r.CaddyRSS))
		heap = append(heap, mib(r.CaddyHeap))
		redis = append(redis, r.redisUSPerReq())
	}
	if len(up) == 0 {
		return
	}
	sum.AdminUpMS, sum.FirstOKMS, sum.ConfigLoadMS = median(up), median(ok), median(load)
	sum.RSSMiB, sum.HeapMiB = median(rss), median(heap)
	if config(ph) == phaseRedis {
		sum.RedisUS = median(redis)
	}
}
