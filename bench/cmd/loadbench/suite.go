package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/partnergate/partnergate/bench/wrk"
	"github.com/partnergate/partnergate/internal/freeport"
)

// Request shape of every phase: the /url endpoint's, so that the baseline and the gateway
// read the same bytes. bench/wrk/partner.lua sends the same.
const (
	benchPath        = "/partner/acme/url"
	benchContentType = "text/plain"
)

type suite struct {
	caddyBin, redisBin, self string
	compareBin               string // another build, for phases A, B and C
	wrkBin, script           string
	gwCPU, genCPU            string
	warmup, duration         time.Duration
	rounds, conns            int
	procs                    int // wrk processes that share the valid load's connections
	operator                 bool
	floodConns               int
	cooldown                 time.Duration
	maxTokens                int
	profile                  time.Duration
	jwksMode                 string
	out                      string
	skip                     map[string]bool
	mix                      mix  // the gateway phases' algorithm and link kind
	partners                 int  // -partners: partners in the handler
	gomaxprocs               int  // -gomaxprocs: Caddy's GOMAXPROCS
	redisCluster             bool // -redis-cluster: phase c against a cluster
	redisCLI                 string

	partner   *partner
	jwksFile  string
	jwksURL   string
	caFile    string
	fetches   atomic.Int64
	upstream  string
	upProc    *proc
	redis     string
	redisProc *proc
	pool      [][]byte           // tokens for the baseline, sent again and again
	estRPS    float64            // the baseline's rate, to size each gateway phase's batch
	phaseRPS  map[string]float64 // each phase's best rate, to size the profile's batch
	results   []phaseResult

	others       []otherPartner // the -partners after the first
	cluster      []string       // the cluster's nodes, with -redis-cluster
	clusterProcs []*proc
}

// phaseResult is one measured phase.
type phaseResult struct {
	Phase       string        `json:"phase"`
	Round       int           `json:"round"`
	Load        *wrk.Result   `json:"load"`
	Flood       *wrk.Result   `json:"flood,omitempty"`
	CaddyCPU    time.Duration `json:"caddy_cpu_ns"`  // in the measured window
	GenCoreBusy float64       `json:"gen_core_busy"` // wrk + upstream + redis CPU / wall
	Fetches     int64         `json:"jwks_fetches"`  // key set fetches in the measured window
	Tokens      int           `json:"tokens_minted"` // 0 for the baseline
	MintSeconds float64       `json:"mint_seconds"`  // time to mint the batch
	// How Caddy came up and what it held (scale.go): from "caddy run" to the admin API's
	// first answer and to the probe's first 200; Caddy's own log from the config read to
	// serving it; VmRSS and Go heap in use after the measured window.
	AdminUp    time.Duration `json:"admin_up_ns"`
	FirstOK    time.Duration `json:"first_200_ns"`
	ConfigLoad time.Duration `json:"caddy_config_load_ns"`
	CaddyRSS   uint64        `json:"caddy_rss_bytes"`
	CaddyHeap  uint64        `json:"caddy_heap_inuse_bytes"`
	// RedisCPU is the Redis servers' CPU in the measured window (phases c and C).
	RedisCPU time.Duration `json:"redis_cpu_ns,omitempty"`
}

func (r phaseResult) usPerReq() float64 {
	n := r.Load.Requests
	if r.Flood != nil {
		n += r.Flood.Requests
	}
	if n == 0 {
		return 0
	}
	return float64(r.CaddyCPU.Microseconds()) / float64(n)
}

// Phase names, in the order of the issue.
const (
	phaseBaseline = "a"
	phaseMemory   = "b"
	phaseRedis    = "c"
	phaseFlood    = "d"
	// The unknown-kid flood alone, on d's configuration: what one refusal costs the
	// gateway, so that d can tell the flood's own share of the core from a cliff.
	phaseFloodAlone = "e"
	// The same flood on b's configuration, aimed at a route where Caddy answers a fixed
	// 401 without verifying anything (the floor: no gateway inside Caddy can refuse for
	// less), with the valid load (f) and alone (g). f tells what the flood takes from
	// valid tokens whatever the gateway does; d against f, what jwt_partner adds.
	phaseFloor      = "f"
	phaseFloorAlone = "g"
	// b and c again with the -compare build, in the same rounds: before and after a
	// change, side by side in one run.
	phaseMemoryCompare = "B"
	phaseRedisCompare  = "C"

	// a with the -compare build, right after a: the baseline's own change (a build
	// option such as PGO speeds up reverse_proxy too), and each build's own baseline.
	phaseBaselineCompare = "A"
)

// compared maps a phase of the -compare build to the same configuration's phase.
var compared = map[string]string{phaseBaselineCompare: phaseBaseline, phaseMemoryCompare: phaseMemory, phaseRedisCompare: phaseRedis}

// config returns the phase whose configuration ph runs: a for A, b for B, c for C, ph
// otherwise.
func config(ph string) string {
	if c, ok := compared[ph]; ok {
		return c
	}
	return ph
}

var phaseTitle = map[string]string{
	phaseBaseline:      "a  reverse_proxy alone (baseline)",
	phaseMemory:        "b  jwt_partner + memory store",
	phaseRedis:         "c  jwt_partner + Redis store",
	phaseFlood:         "d  b under an unknown-kid flood",
	phaseFloodAlone:    "e  the unknown-kid flood alone",
	phaseFloor:         "f  b under the flood, fixed 401",
	phaseFloorAlone:    "g  the flood alone, fixed 401",
	phaseMemoryCompare: "B  b with the -compare build",
	phaseRedisCompare:  "C  c with the -compare build",

	phaseBaselineCompare: "A  a with the -compare build",
}

func suiteMain(args []string) error {
	s := &suite{skip: map[string]bool{}, phaseRPS: map[string]float64{}}
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.StringVar(&s.caddyBin, "caddy", "./caddy", "Caddy binary built with partnergate's modules")
	fs.StringVar(&s.compareBin, "compare", "", "another such binary (e.g. built before a change): adds phases A, B and C, a, b and c with it, to every round")
	fs.StringVar(&s.redisBin, "redis-server", "redis-server", "redis-server binary")
	fs.StringVar(&s.wrkBin, "wrk", "wrk", "wrk binary (Debian package wrk)")
	fs.StringVar(&s.gwCPU, "gateway-cpu", "1", "CPU(s) that Caddy is pinned to, a taskset list such as 1 or 0,1")
	fs.StringVar(&s.genCPU, "generator-cpu", "0", "CPU that wrk, the upstream and Redis are pinned to")
	fs.DurationVar(&s.warmup, "warmup", 2*time.Second, "warmup of each phase: a wrk run of its own before the measured one, not counted (whole seconds; 0: none)")
	fs.DurationVar(&s.duration, "duration", 10*time.Second, "measured window of each phase (whole seconds, wrk's unit)")
	fs.IntVar(&s.rounds, "rounds", 3, "rounds of a, b, c (the table gives each round and the medians)")
	fs.IntVar(&s.conns, "conns", 16, "connections of wrk")
	fs.IntVar(&s.procs, "procs", 1, "wrk processes sharing the valid load's connections, each with its own tokens (wrk's threads cannot share fresh tokens)")
	fs.BoolVar(&s.operator, "operator", false, "the issue's outside configuration: phases a and b only (A and B with -compare), key set from jwks_file, "+
		"one wrk with 32 connections, the lean upstream (drains the body, answers 35 bytes of text), tokens with ten short payload fields")
	fs.IntVar(&s.floodConns, "flood-conns", 4, "connections of the unknown-kid flood's wrk (closed loop, full rate)")
	fs.DurationVar(&s.cooldown, "cooldown", 2*time.Second, "refresh_cooldown of the key set in phase d")
	fs.IntVar(&s.maxTokens, "max-tokens", 300000, "most tokens minted for one phase")
	fs.DurationVar(&s.profile, "profile", 10*time.Second, "CPU profile length of a, b, c, d, e and f after the measured rounds (0: none); an allocation profile of the same run is kept beside it")
	fs.StringVar(&s.jwksMode, "jwks", "url", "key set source of b and c: url (as d) or file")
	fs.StringVar(&s.out, "out", "", "folder for results, logs and profiles (default: a new temporary folder)")
	fs.IntVar(&niceness, "nice", 0, "nice value of Caddy, wrk, the upstream and Redis (negative needs root; for a shared machine)")
	skip := fs.String("skip", "", "phases to leave out, e.g. cd")
	alg := fs.String("alg", string(defaultMix.alg), "the partner's key and the gateway phases' token algorithm: RS256, PS256 (both RSA 2048) or ES256 (P-256)")
	link := fs.String("link", string(defaultMix.kind), "the link kind the tokens carry: main (a main-client link) or go (a Go link)")
	fs.IntVar(&s.partners, "partners", 1, "partners in the gateway's handler, each with its own RSA key set (the first follows -alg, the others sign RS256) (jwks_file; keys cached in ~/.cache/partnergate/loadbench); the valid tokens are dealt over them in turn")
	fs.IntVar(&s.gomaxprocs, "gomaxprocs", 1, "Caddy's GOMAXPROCS: at most the number of CPUs in -gateway-cpu (a taskset list such as 0,1)")
	fs.BoolVar(&s.redisCluster, "redis-cluster", false, "phases c and C against a Redis Cluster of three masters started by the suite, instead of one redis-server")
	fs.StringVar(&s.redisCLI, "redis-cli", "redis-cli", "redis-cli binary, to create the -redis-cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if s.operator {
		// What an operator would first try (issue 19): flags given explicitly still win.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["conns"] {
			s.conns = 32
		}
		if !set["jwks"] {
			s.jwksMode = "file"
		}
		if !set["skip"] {
			*skip = "cdefg"
		}
	}
	if s.procs < 1 || s.conns < s.procs {
		return fmt.Errorf("-procs %d with -conns %d: want at least one process and one connection each", s.procs, s.conns)
	}
	if err := s.checkScale(); err != nil {
		return err
	}
	for _, c := range *skip {
		s.skip[string(c)] = true
	}
	// wrk counts in whole seconds; the table and the batch sizes use what it will run.
	s.duration = time.Duration(wrk.Seconds(s.duration)) * time.Second
	if s.warmup > 0 {
		s.warmup = time.Duration(wrk.Seconds(s.warmup)) * time.Second
	}
	var err error
	if s.mix, err = parseMix(*alg, *link); err != nil {
		return err
	}
	if s.self, err = os.Executable(); err != nil {
		return err
	}
	if s.caddyBin, err = filepath.Abs(s.caddyBin); err != nil {
		return err
	}
	// d to g run right after b, in every round: the flood's ratios compare phases of one
	// round, a minute or two apart, which the VM's drift between rounds would otherwise swamp.
	phases := []string{phaseBaseline, phaseMemory, phaseFlood, phaseFloodAlone, phaseFloor, phaseFloorAlone, phaseRedis}
	if s.compareBin != "" {
		if s.compareBin, err = filepath.Abs(s.compareBin); err != nil {
			return err
		}
		phases = withCompare(phases)
	}
	if s.out == "" {
		if s.out, err = os.MkdirTemp("", "loadbench-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(s.out, "logs"), 0o755); err != nil {
		return err
	}
	defer s.teardown()
	if err := s.setup(); err != nil {
		return err
	}
	s.printMachine(os.Stdout)
	for round := 1; round <= s.rounds; round++ {
		for _, ph := range phases {
			if s.skip[ph] || s.skip[config(ph)] {
				continue
			}
			r, err := s.runPhase(ph, round)
			if err != nil {
				return fmt.Errorf("phase %s, round %d: %v", ph, round, err)
			}
			s.results = append(s.results, r)
			s.printRow(os.Stdout, r)
		}
	}
	if err := s.report(); err != nil {
		return err
	}
	if s.profile > 0 {
		for _, ph := range []string{phaseBaseline, phaseMemory, phaseRedis, phaseFlood, phaseFloodAlone, phaseFloor} {
			if s.skip[ph] {
				continue
			}
			if err := s.profilePhase(ph); err != nil {
				return fmt.Errorf("profiling phase %s: %v", ph, err)
			}
		}
	}
	fmt.Printf("\nresults, logs and profiles: %s\n", s.out)
	return nil
}

func (s *suite) setup() error {
	var err error
	if s.wrkBin, err = exec.LookPath(s.wrkBin); err != nil {
		return fmt.Errorf("finding wrk: %v (install Debian's wrk package; scripts/test-deps.sh does)", err)
	}
	s.script = filepath.Join(s.out, "partner.lua")
	if err := os.WriteFile(s.script, wrk.Script, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "loadbench: generating the partner's %s key\n", s.mix.keyName())
	if s.partner, err = newPartner(s.mix); err != nil {
		return err
	}
	s.partner.short = s.operator
	s.jwksFile = filepath.Join(s.out, "jwks.json")
	if err := os.WriteFile(s.jwksFile, s.partner.jwks, 0o644); err != nil {
		return err
	}
	// The key set over HTTPS on loopback, as a partner would publish it, counting fetches.
	// Caddy trusts its certificate through SSL_CERT_FILE, which Go reads on Linux.
	jwksSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Write(s.partner.jwks)
	}))
	s.jwksURL = jwksSrv.URL + "/.well-known/jwks.json"
	s.caFile = filepath.Join(s.out, "jwks-ca.pem")
	if err := os.WriteFile(s.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: jwksSrv.Certificate().Raw}), 0o644); err != nil {
		return err
	}
	logs := filepath.Join(s.out, "logs")
	var upArgs []string
	if s.operator {
		upArgs = append(upArgs, "-lean")
	}
	if s.upProc, s.upstream, err = startUpstream(s.self, s.genCPU, logs, upArgs...); err != nil {
		return err
	}
	if !s.skip[phaseRedis] && s.redisCluster {
		if s.clusterProcs, s.cluster, err = startRedisCluster(s.redisBin, s.redisCLI, s.genCPU, logs); err != nil {
			return err
		}
	} else if !s.skip[phaseRedis] {
		if s.redisProc, s.redis, err = startRedis(s.redisBin, s.genCPU, logs); err != nil {
			return err
		}
	}
	if err := s.setupPartners(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "loadbench: minting the baseline's token pool\n")
	if s.pool, err = s.partner.mint(5000); err != nil {
		return err
	}
	return nil
}

func (s *suite) teardown() {
	s.upProc.stop()
	s.redisProc.stop()
	for _, p := range s.clusterProcs {
		p.stop()
	}
}

// startCaddy writes the phase's Caddyfile and runs Caddy pinned to the gateway CPU.
func (s *suite) startCaddy(ph string) (*proc, string, string, error) {
	listenPort, err := freeport.Port()
	if err != nil {
		return nil, "", "", err
	}
	adminPort, err := freeport.Port()
	if err != nil {
		return nil, "", "", err
	}
	bin := s.caddyBin
	if _, ok := compared[ph]; ok {
		bin = s.compareBin
	}
	cfg := caddyConfig{
		Admin:    net.JoinHostPort("127.0.0.1", strconv.Itoa(adminPort)),
		Listen:   net.JoinHostPort("127.0.0.1", strconv.Itoa(listenPort)),
		Upstream: s.upstream,
		Gateway:  config(ph) != phaseBaseline,
		Floor:    atFloor(ph),
		Partner:  benchPartner, Issuer: benchIssuer, Audience: benchAudience, Algorithm: string(s.mix.alg),
	}
	if cfg.Gateway {
		if s.jwksMode == "url" || flooded(ph) {
			cfg.JWKSURL, cfg.Cooldown = s.jwksURL, s.cooldown.String()
		} else {
			cfg.JWKSFile = s.jwksFile
		}
		if config(ph) == phaseRedis {
			cfg.Redis, cfg.RedisCluster = s.redis, s.cluster
		}
		cfg.Partners = s.partnerConfigs()
	}
	text, err := cfg.render()
	if err != nil {
		return nil, "", "", err
	}
	file := filepath.Join(s.out, "Caddyfile."+ph)
	if err := os.WriteFile(file, text, 0o644); err != nil {
		return nil, "", "", err
	}
	home := filepath.Join(s.out, "caddy-home")
	env := []string{"SSL_CERT_FILE=" + s.caFile, "XDG_DATA_HOME=" + home, "XDG_CONFIG_HOME=" + home,
		"GOMAXPROCS=" + strconv.Itoa(s.gomaxprocs)} // after startPinned's GOMAXPROCS=1, so it wins
	p, err := startPinned("caddy-"+ph, s.gwCPU, filepath.Join(s.out, "logs"), env, nil, nil,
		bin, "run", "--config", file, "--adapter", "caddyfile")
	if err != nil {
		return nil, "", "", err
	}
	if err := waitHTTP(context.Background(), p, "http://"+cfg.Admin+"/config/"); err != nil {
		p.stop()
		return nil, "", "", fmt.Errorf("%v (see %s)", err, filepath.Join(s.out, "logs", "caddy-"+ph+".log"))
	}
	return p, cfg.Listen, cfg.Admin, nil
}

// probeFloor wants the floor's route to answer floorBody with 401, so that a route that
// does not match (a cheaper 404) cannot pass for the floor.
func probeFloor(addr string) error {
	resp, err := http.Post("http://"+addr+floorPath, benchContentType, strings.NewReader("x.y.z"))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusUnauthorized || string(body) != floorBody {
		return fmt.Errorf("the floor's route answered %d %q, want 401 %q", resp.StatusCode, body, floorBody)
	}
	return nil
}

// loadSpecs returns the wrk runs of phase ph, named with prefix: the valid load from files
// (one per wrk process) and the flood from floodFile, as the phase has them.
func (s *suite) loadSpecs(ph, prefix string, files []string, floodFile string) []loadSpec {
	valid := loadSpec{name: prefix + ph, tokens: files, conns: s.conns, repeat: config(ph) == phaseBaseline}
	flood := loadSpec{name: prefix + "flood-" + ph, tokens: []string{floodFile}, conns: s.floodConns, repeat: true}
	if atFloor(ph) {
		flood.path = floorPath
	}
	switch ph {
	case phaseFlood, phaseFloor:
		return []loadSpec{valid, flood}
	case phaseFloodAlone, phaseFloorAlone:
		return []loadSpec{flood}
	}
	return []loadSpec{valid}
}

// atFloor reports whether phase ph sends the flood to the floor's fixed 401.
func atFloor(ph string) bool { return ph == phaseFloor || ph == phaseFloorAlone }

// flooded reports whether phase ph runs the unknown-kid flood.
func flooded(ph string) bool {
	switch ph {
	case phaseFlood, phaseFloodAlone, phaseFloor, phaseFloorAlone:
		return true
	}
	return false
}

// probe sends one request and wants a 200: a phase whose first valid token is refused
// is misconfigured, and its throughput would measure rejections. It retries for a while,
// since the listener and a jwks_url key set come up a moment after the admin API (the
// token is only spent once it is accepted).
func probe(addr string, token []byte) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+benchPath, bytes.NewReader(token))
		req.Header.Set("Content-Type", benchContentType)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("probe answered %d: %s", resp.StatusCode, body)
			if resp.StatusCode != http.StatusServiceUnavailable {
				return err
			}
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *suite) writeTokens(name string, tokens [][]byte) (string, error) {
	paths, err := s.writeTokenParts(name, tokens, 1)
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// writeTokenParts deals tokens out to n files, one per wrk process, in turn.
func (s *suite) writeTokenParts(name string, tokens [][]byte, n int) ([]string, error) {
	paths := make([]string, n)
	for p := range paths {
		paths[p] = filepath.Join(s.out, "tokens-"+name+".txt")
		if n > 1 {
			paths[p] = filepath.Join(s.out, fmt.Sprintf("tokens-%s.%d.txt", name, p))
		}
		var b bytes.Buffer
		for i := p; i < len(tokens); i += n {
			b.Write(tokens[i])
			b.WriteByte('\n')
		}
		if err := os.WriteFile(paths[p], b.Bytes(), 0o600); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

func removeAll(paths []string) {
	for _, p := range paths {
		os.Remove(p)
	}
}

// gatewayCeilingRPS is more links per second than jwt_partner answers on one core: each
// costs one signature check and Caddy's proxying, over 100 µs of CPU on the machines we
// measure on (docs/performance.md). Should a gateway outrun it, the phase ends early.
const gatewayCeilingRPS = 10000

// batchSize is how many tokens a gateway phase needs: what the baseline would answer on a
// whole core (from its CPU time per request, so that a baseline slowed by other work on the
// machine does not starve the next phase), since the gateway cannot outrun reverse_proxy
// alone. Should it anyway, the run ends when they are used up and the window is shortened,
// not the rate.
//
// From the second round on, the phase's own best rate with 40% to spare is enough, which
// halves the minting (an RSA signature per token) of the later rounds.
func (s *suite) batchSize(ph string) int {
	seen := s.phaseRPS[ph]
	if ph == phaseFlood || ph == phaseFloor {
		seen = s.phaseRPS[phaseMemory] // the same configuration without the flood
	}
	rate := s.estRPS
	if seen > 0 && (rate == 0 || 1.4*seen < rate) {
		rate = 1.4 * seen
	}
	if rate == 0 {
		// No baseline ran yet (-skip a): no gateway phase answers faster than
		// gatewayCeilingRPS per core. Minting -max-tokens instead would take minutes, long
		// enough for the first tokens to expire before the phase starts.
		rate = gatewayCeilingRPS * float64(max(s.gomaxprocs, 1))
	}
	// Each wrk run stops up to 0.1 s after its -d, and the requests in flight when the
	// warmup stops are spent without an answer.
	return min(int(rate*(s.warmup+s.duration+200*time.Millisecond).Seconds())+2*s.conns, s.maxTokens)
}

// loadSpec is one load of a stage: a wrk run per tokens file, opened together, whose
// results are added up. Several processes stand in for wrk's threads, which cannot share
// the fresh tokens nor wait at one gate (wrk runs each thread's init before the next
// thread's, and starts each thread right after its init).
type loadSpec struct {
	name   string   // of its log files
	path   string   // the request path; benchPath when ""
	tokens []string // the tokens file of each wrk process
	conns  int      // in all, shared out among the processes
	repeat bool     // cycle through the tokens (baseline, flood) instead of sending each once
	skip   []int64  // per process, requests a warmup sent from the same file
}

// load is a running wrk with partner.lua, pinned to the generator CPU. It is gated: it
// builds its requests, says it is ready and waits for a line on its standard input.
type load struct {
	p       *proc
	gate    *os.File      // wrk's standard input
	ready   chan struct{} // closed when wrk waits at its gate
	openCPU time.Duration // wrk's CPU time when it was opened
	res     *wrk.Result
	err     error
	read    chan struct{} // closed when wrk's output has been read to its end
}

func (s *suite) startLoad(addr string, d time.Duration, sp loadSpec, part int) (*load, error) {
	path := sp.path
	if path == "" {
		path = benchPath
	}
	n := len(sp.tokens)
	conns := sp.conns / n
	if part < sp.conns%n {
		conns++
	}
	var skip int64
	if part < len(sp.skip) {
		skip = sp.skip[part]
	}
	name := sp.name
	if n > 1 {
		name = fmt.Sprintf("%s.%d", sp.name, part)
	}
	cfg := wrk.Config{Script: s.script, URL: "http://" + addr + path, Tokens: sp.tokens[part],
		Repeat: sp.repeat, Skip: skip, Conns: conns, Duration: d, Gated: true}
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		gateR.Close()
		gateW.Close()
		return nil, err
	}
	logs := filepath.Join(s.out, "logs")
	p, err := startPinned(name, s.genCPU, logs, nil, gateR, outW, append([]string{s.wrkBin}, cfg.Args()...)...)
	gateR.Close()
	outW.Close()
	if err != nil {
		gateW.Close()
		outR.Close()
		return nil, err
	}
	l := &load{p: p, gate: gateW, ready: make(chan struct{}), read: make(chan struct{})}
	go func() {
		defer close(l.read)
		defer outR.Close()
		var rest []byte
		l.res, rest, l.err = wrk.Read(outR, func() { close(l.ready) })
		io.Copy(io.Discard, outR)
		// wrk's own summary, next to the log of its standard error.
		os.WriteFile(filepath.Join(logs, name+".out"), rest, 0o644)
	}()
	return l, nil
}

// wait returns wrk's result and its CPU time since it was opened.
func (l *load) wait() (*wrk.Result, time.Duration, error) {
	<-l.p.done
	<-l.read
	if l.p.err != nil {
		return nil, 0, fmt.Errorf("%s: %v (see its log)", l.p.name, l.p.err)
	}
	if l.err != nil {
		return nil, 0, fmt.Errorf("%s: %v", l.p.name, l.err)
	}
	total := l.p.cmd.ProcessState.UserTime() + l.p.cmd.ProcessState.SystemTime()
	return l.res, total - l.openCPU, nil
}

// readyTimeout bounds how long wrk may take to build its requests from the tokens file.
const readyTimeout = 2 * time.Minute

// runLoads runs one stage: the wrk runs of every spec for d, all opened at the same moment
// once each has built its requests, so that their windows coincide (the valid load and the
// flood of phase d) and CPU times sampled by before, right before that moment, cover the
// window and not the building. It returns each spec's result (its processes' added up),
// the requests each of its processes sent, and its CPU time in the window.
func (s *suite) runLoads(addr string, d time.Duration, specs []loadSpec, before func()) ([]*wrk.Result, [][]int64, []time.Duration, error) {
	loads := make([]*load, 0, len(specs))
	owner := make([]int, 0, len(specs)) // the spec of each load
	defer func() {
		for _, l := range loads {
			l.gate.Close()
			l.p.stop()
		}
	}()
	for i, sp := range specs {
		for part := range sp.tokens {
			l, err := s.startLoad(addr, d, sp, part)
			if err != nil {
				return nil, nil, nil, err
			}
			loads = append(loads, l)
			owner = append(owner, i)
		}
	}
	deadline := time.After(readyTimeout)
	for _, l := range loads {
		select {
		case <-l.ready:
		case <-l.p.done:
			return nil, nil, nil, fmt.Errorf("%s exited before it was ready: %v (see %s)", l.p.name, l.p.err,
				filepath.Join(s.out, "logs", l.p.name+".log"))
		case <-deadline:
			return nil, nil, nil, fmt.Errorf("%s was not ready after %v", l.p.name, readyTimeout)
		}
	}
	if before != nil {
		before()
	}
	for _, l := range loads {
		l.openCPU, _ = l.p.cpuTime()
		if _, err := l.gate.Write([]byte("\n")); err != nil {
			return nil, nil, nil, fmt.Errorf("opening %s: %v", l.p.name, err)
		}
	}
	parts := make([][]*wrk.Result, len(specs))
	sent := make([][]int64, len(specs))
	cpu := make([]time.Duration, len(specs))
	for i, l := range loads {
		res, c, err := l.wait()
		if err != nil {
			return nil, nil, nil, err
		}
		o := owner[i]
		parts[o] = append(parts[o], res)
		sent[o] = append(sent[o], res.Sent)
		cpu[o] += c
	}
	results := make([]*wrk.Result, len(specs))
	for i := range parts {
		results[i] = wrk.Sum(parts[i])
	}
	return results, sent, cpu, nil
}

func (s *suite) runPhase(ph string, round int) (phaseResult, error) {
	r := phaseResult{Phase: ph, Round: round}
	tokens := s.pool
	switch config(ph) {
	case phaseBaseline:
	case phaseFloodAlone, phaseFloorAlone:
		// One valid token, for the probe and as the flood's template: the baseline's pool
		// may be older than a token's lifetime by now.
		var err error
		if tokens, err = s.partner.mint(1); err != nil {
			return r, err
		}
	default:
		n := s.batchSize(ph)
		fmt.Fprintf(os.Stderr, "loadbench: phase %s round %d: minting %d tokens on %d cores\n", ph, round, n, runtime.NumCPU())
		t0 := time.Now()
		var err error
		if tokens, err = s.mintValid(n + 1); err != nil {
			return r, err
		}
		r.Tokens, r.MintSeconds = n, time.Since(t0).Seconds()
	}
	probeToken, tokens := tokens[0], tokens[1:]
	files, err := s.writeTokenParts(ph, tokens, s.procs)
	if err != nil {
		return r, err
	}
	defer removeAll(files)
	var floodFile string
	if flooded(ph) {
		flood, err := floodTokens(probeToken, 100000)
		if err != nil {
			return r, err
		}
		if floodFile, err = s.writeTokens("flood", flood); err != nil {
			return r, err
		}
		defer os.Remove(floodFile)
	}

	started := time.Now()
	caddy, addr, admin, err := s.startCaddy(ph)
	if err != nil {
		return r, err
	}
	defer caddy.stop()
	r.AdminUp = time.Since(started)
	if err := probe(addr, probeToken); err != nil {
		return r, fmt.Errorf("phase %s: %v", ph, err)
	}
	r.FirstOK = time.Since(started)
	if atFloor(ph) {
		if err := probeFloor(addr); err != nil {
			return r, fmt.Errorf("phase %s: %v", ph, err)
		}
	}

	specs := s.loadSpecs(ph, "wrk-", files, floodFile)
	// The warmup is a wrk run of its own, since wrk's statistics cover a whole run; the
	// measured run continues in the same tokens where the warmup stopped.
	if s.warmup > 0 {
		warm := slices.Clone(specs)
		for i := range warm {
			warm[i].name += "-warmup"
		}
		res, sent, _, err := s.runLoads(addr, s.warmup, warm, nil)
		if err != nil {
			return r, fmt.Errorf("warmup: %v", err)
		}
		if res[0].Exhausted {
			return r, fmt.Errorf("the warmup used up all %d tokens (raise -max-tokens)", len(tokens))
		}
		for i := range specs {
			specs[i].skip = sent[i]
		}
	}

	// Caddy's, the upstream's and Redis's CPU are read right before the measured runs open
	// and after they have ended; wrk's own comes with each run.
	type sample struct {
		at               time.Time
		caddy, up, redis time.Duration
	}
	read := func() (x sample) {
		x.at = time.Now()
		x.caddy, _ = caddy.cpuTime()
		x.up, _ = s.upProc.cpuTime()
		x.redis = s.redisCPU()
		return x
	}
	var before sample
	var fetchesBefore int64
	res, _, wrkCPU, err := s.runLoads(addr, s.duration, specs, func() { before, fetchesBefore = read(), s.fetches.Load() })
	after, fetchesAfter := read(), s.fetches.Load()
	if err != nil {
		return r, err
	}
	r.Load = res[0]
	if len(res) > 1 {
		r.Flood = res[1]
	}
	r.CaddyCPU = after.caddy - before.caddy
	r.Fetches = fetchesAfter - fetchesBefore
	if config(ph) == phaseRedis {
		r.RedisCPU = after.redis - before.redis
	}
	s.measureCaddy(&r, caddy, admin)
	gen := (after.up - before.up) + (after.redis - before.redis)
	for _, c := range wrkCPU {
		gen += c
	}
	r.GenCoreBusy = gen.Seconds() / after.at.Sub(before.at).Seconds()
	s.phaseRPS[ph] = max(s.phaseRPS[ph], r.Load.RPS)
	if ph == phaseBaseline {
		est := r.Load.RPS
		if us := r.usPerReq(); us > 0 {
			est = max(est, 1e6/us)
		}
		s.estRPS = max(s.estRPS, est)
	}
	return r, nil
}

// profilePhase runs a phase again while taking a CPU profile from Caddy's admin API, and
// renders its top functions with go tool pprof. It is a separate run so that the
// profiler's own cost stays out of the measured numbers.
func (s *suite) profilePhase(ph string) error {
	rate := s.estRPS
	if r := s.phaseRPS[ph]; r > 0 {
		rate = 1.3 * r // what the phase reached, with room for a quieter machine
	}
	n := min(s.maxTokens, int(rate*(s.warmup+s.profile+time.Second).Seconds())+s.conns)
	switch ph {
	case phaseBaseline:
		n = 1000 // sent again and again, as in the measured phase
	case phaseFloodAlone, phaseFloorAlone:
		n = 1 // the probe, and the flood's template
	}
	fmt.Fprintf(os.Stderr, "loadbench: profile of phase %s: minting %d tokens\n", ph, n)
	mint := s.mintValid
	if ph == phaseBaseline {
		mint = s.partner.mint // the baseline stays on the first partner's path
	}
	tokens, err := mint(n + 1)
	if err != nil {
		return err
	}
	probeToken, tokens := tokens[0], tokens[1:]
	files, err := s.writeTokenParts("profile-"+ph, tokens, s.procs)
	if err != nil {
		return err
	}
	defer removeAll(files)
	var floodFile string
	if flooded(ph) {
		flood, err := floodTokens(probeToken, 100000)
		if err != nil {
			return err
		}
		if floodFile, err = s.writeTokens("profile-flood", flood); err != nil {
			return err
		}
		defer os.Remove(floodFile)
	}
	caddy, addr, admin, err := s.startCaddy(ph)
	if err != nil {
		return err
	}
	defer caddy.stop()
	if err := probe(addr, probeToken); err != nil {
		return err
	}
	// One wrk run per load: the warmup, then the profile, with a second to spare.
	opened := make(chan struct{})
	loaded := make(chan error, 1)
	go func() {
		specs := s.loadSpecs(ph, "wrk-profile-", files, floodFile)
		_, _, _, err := s.runLoads(addr, s.warmup+s.profile+time.Second, specs, func() { close(opened) })
		loaded <- err
	}()
	select {
	case <-opened:
	case err := <-loaded:
		return fmt.Errorf("load for the profile: %v", err)
	}
	time.Sleep(s.warmup)
	// The CPU profile and, over the same seconds, the allocations (a delta profile), so
	// that what the garbage collector costs can be traced to where the bytes come from.
	secs := int(s.profile.Seconds())
	var allocs []byte
	var allocErr error
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		allocs, allocErr = fetchProfile(fmt.Sprintf("http://%s/debug/pprof/allocs?seconds=%d", admin, secs))
	}()
	data, err := fetchProfile(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", admin, secs))
	<-fetched
	if err == nil {
		err = allocErr
	}
	if lerr := <-loaded; err == nil && lerr != nil {
		err = fmt.Errorf("load for the profile: %v", lerr)
	}
	if err != nil {
		return err
	}
	prof := filepath.Join(s.out, "profile-"+ph+".pb.gz")
	allocProf := filepath.Join(s.out, "allocs-"+ph+".pb.gz")
	for file, b := range map[string][]byte{prof: data, allocProf: allocs} {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			return err
		}
	}
	for _, view := range []struct{ name, file string }{
		{"flat", prof}, {"cum", prof}, {"allocs", allocProf},
	} {
		args := []string{"tool", "pprof", "-top", "-nodecount=45"}
		switch view.name {
		case "cum":
			args = append(args, "-cum")
		case "allocs":
			args = append(args, "-sample_index=alloc_space")
		}
		out, err := exec.Command("go", append(args, s.caddyBin, view.file)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go tool pprof: %v: %s", err, out)
		}
		top := filepath.Join(s.out, "profile-"+ph+"."+view.name+".txt")
		if err := os.WriteFile(top, out, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("profile of %s: %s (top functions in profile-%s.flat.txt and .cum.txt, allocations in .allocs.txt)\n", phaseTitle[ph], prof, ph)
	return nil
}

func fetchProfile(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}
