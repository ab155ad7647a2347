package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	"strconv"
	"sync/atomic"
	"time"

	"github.com/partnergate/partnergate/bench/loadgen"
)

type suite struct {
	caddyBin, redisBin, self string
	gwCPU, genCPU            string
	warmup, duration         time.Duration
	rounds, conns            int
	floodConns               int
	cooldown                 time.Duration
	maxTokens                int
	profile                  time.Duration
	jwksMode                 string
	out                      string
	skip                     map[string]bool

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
}

// phaseResult is one measured phase.
type phaseResult struct {
	Phase       string          `json:"phase"`
	Round       int             `json:"round"`
	Load        *loadgen.Result `json:"load"`
	Flood       *loadgen.Result `json:"flood,omitempty"`
	CaddyCPU    time.Duration   `json:"caddy_cpu_ns"`  // in the measured window
	GenCoreBusy float64         `json:"gen_core_busy"` // generator + upstream + redis CPU / wall
	Fetches     int64           `json:"jwks_fetches"`  // key set fetches in the measured window
	Tokens      int             `json:"tokens_minted"` // 0 for the baseline
	MintSeconds float64         `json:"mint_seconds"`  // time to mint the batch
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
)

var phaseTitle = map[string]string{
	phaseBaseline: "a  reverse_proxy alone (baseline)",
	phaseMemory:   "b  jwt_partner + memory store",
	phaseRedis:    "c  jwt_partner + Redis store",
	phaseFlood:    "d  b under an unknown-kid flood",
}

func suiteMain(args []string) error {
	s := &suite{skip: map[string]bool{}, phaseRPS: map[string]float64{}}
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.StringVar(&s.caddyBin, "caddy", "./caddy", "Caddy binary built with partnergate's modules")
	fs.StringVar(&s.redisBin, "redis-server", "redis-server", "redis-server binary")
	fs.StringVar(&s.gwCPU, "gateway-cpu", "1", "CPU that Caddy is pinned to")
	fs.StringVar(&s.genCPU, "generator-cpu", "0", "CPU that the load generator, the upstream and Redis are pinned to")
	fs.DurationVar(&s.warmup, "warmup", 2*time.Second, "warmup of each phase, not counted")
	fs.DurationVar(&s.duration, "duration", 10*time.Second, "measured window of each phase")
	fs.IntVar(&s.rounds, "rounds", 3, "rounds of a, b, c (the table gives each round and the medians)")
	fs.IntVar(&s.conns, "conns", 16, "connections of the load generator")
	fs.IntVar(&s.floodConns, "flood-conns", 4, "connections of the unknown-kid flood (closed loop, full rate)")
	fs.DurationVar(&s.cooldown, "cooldown", 2*time.Second, "refresh_cooldown of the key set in phase d")
	fs.IntVar(&s.maxTokens, "max-tokens", 300000, "most tokens minted for one phase")
	fs.DurationVar(&s.profile, "profile", 10*time.Second, "CPU profile length of b and c after the measured rounds (0: none)")
	fs.StringVar(&s.jwksMode, "jwks", "url", "key set source of b and c: url (as d) or file")
	fs.StringVar(&s.out, "out", "", "folder for results, logs and profiles (default: a new temporary folder)")
	fs.IntVar(&niceness, "nice", 0, "nice value of Caddy, the generator, the upstream and Redis (negative needs root; for a shared machine)")
	skip := fs.String("skip", "", "phases to leave out, e.g. cd")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, c := range *skip {
		s.skip[string(c)] = true
	}
	var err error
	if s.self, err = os.Executable(); err != nil {
		return err
	}
	if s.caddyBin, err = filepath.Abs(s.caddyBin); err != nil {
		return err
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
		for _, ph := range []string{phaseBaseline, phaseMemory, phaseRedis} {
			if s.skip[ph] {
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
	if !s.skip[phaseFlood] {
		r, err := s.runPhase(phaseFlood, 1)
		if err != nil {
			return fmt.Errorf("phase d: %v", err)
		}
		s.results = append(s.results, r)
		s.printRow(os.Stdout, r)
	}
	if err := s.report(); err != nil {
		return err
	}
	if s.profile > 0 {
		for _, ph := range []string{phaseMemory, phaseRedis} {
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
	fmt.Fprintf(os.Stderr, "loadbench: generating the partner's RSA-%d key\n", benchRSABits)
	if s.partner, err = newPartner(); err != nil {
		return err
	}
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
	if s.upProc, s.upstream, err = startUpstream(s.self, s.genCPU, logs); err != nil {
		return err
	}
	if !s.skip[phaseRedis] {
		if s.redisProc, s.redis, err = startRedis(s.redisBin, s.genCPU, logs); err != nil {
			return err
		}
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
}

// startCaddy writes the phase's Caddyfile and runs Caddy pinned to the gateway CPU.
func (s *suite) startCaddy(ph string) (*proc, string, string, error) {
	listenPort, err := freePort()
	if err != nil {
		return nil, "", "", err
	}
	adminPort, err := freePort()
	if err != nil {
		return nil, "", "", err
	}
	cfg := caddyConfig{
		Admin:    net.JoinHostPort("127.0.0.1", strconv.Itoa(adminPort)),
		Listen:   net.JoinHostPort("127.0.0.1", strconv.Itoa(listenPort)),
		Upstream: s.upstream,
		Gateway:  ph != phaseBaseline,
		Partner:  benchPartner, Issuer: benchIssuer, Audience: benchAudience,
	}
	if cfg.Gateway {
		if s.jwksMode == "url" || ph == phaseFlood {
			cfg.JWKSURL, cfg.Cooldown = s.jwksURL, s.cooldown.String()
		} else {
			cfg.JWKSFile = s.jwksFile
		}
		if ph == phaseRedis {
			cfg.Redis = s.redis
		}
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
	env := []string{"SSL_CERT_FILE=" + s.caFile, "XDG_DATA_HOME=" + home, "XDG_CONFIG_HOME=" + home}
	p, err := startPinned("caddy-"+ph, s.gwCPU, filepath.Join(s.out, "logs"), env, nil,
		s.caddyBin, "run", "--config", file, "--adapter", "caddyfile")
	if err != nil {
		return nil, "", "", err
	}
	if err := waitHTTP(context.Background(), p, "http://"+cfg.Admin+"/config/"); err != nil {
		p.stop()
		return nil, "", "", fmt.Errorf("%v (see %s)", err, filepath.Join(s.out, "logs", "caddy-"+ph+".log"))
	}
	return p, cfg.Listen, cfg.Admin, nil
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
	path := filepath.Join(s.out, "tokens-"+name+".txt")
	var b bytes.Buffer
	for _, t := range tokens {
		b.Write(t)
		b.WriteByte('\n')
	}
	return path, os.WriteFile(path, b.Bytes(), 0o600)
}

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
	if ph == phaseFlood {
		seen = s.phaseRPS[phaseMemory] // the same configuration without the flood
	}
	rate := s.estRPS
	if seen > 0 && (rate == 0 || 1.4*seen < rate) {
		rate = 1.4 * seen
	}
	if rate == 0 {
		return s.maxTokens
	}
	return min(int(rate*(s.warmup+s.duration).Seconds())+s.conns, s.maxTokens)
}

// driver is a running "loadbench drive".
type driver struct {
	p      *proc
	window chan time.Duration // the driver's CPU time when its window opened
	out    bytes.Buffer
	read   chan struct{}
}

// startDrive runs "loadbench drive" pinned to the generator CPU; onWindow runs when its
// measured window opens.
func (s *suite) startDrive(name, addr, tokens string, conns int, repeat bool, onWindow func()) (*driver, error) {
	args := []string{s.self, "drive", "-addr", addr, "-tokens", tokens, "-conns", strconv.Itoa(conns),
		"-warmup", s.warmup.String(), "-duration", s.duration.String()}
	if repeat {
		args = append(args, "-repeat")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p, err := startPinned(name, s.genCPU, filepath.Join(s.out, "logs"), nil, w, args...)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	d := &driver{p: p, window: make(chan time.Duration, 1), read: make(chan struct{})}
	go func() {
		defer close(d.read)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if sc.Text() == windowLine {
				cpu, _ := p.cpuTime()
				d.window <- cpu
				if onWindow != nil {
					onWindow()
				}
				continue
			}
			d.out.Write(sc.Bytes())
		}
	}()
	return d, nil
}

// wait returns the driver's result and its CPU time within the measured window.
func (d *driver) wait() (*loadgen.Result, time.Duration, error) {
	<-d.p.done
	<-d.read
	if d.p.err != nil {
		return nil, 0, fmt.Errorf("%s: %v (see its log)", d.p.name, d.p.err)
	}
	var res loadgen.Result
	if err := json.Unmarshal(d.out.Bytes(), &res); err != nil {
		return nil, 0, fmt.Errorf("%s: decoding result: %v", d.p.name, err)
	}
	total := d.p.cmd.ProcessState.UserTime() + d.p.cmd.ProcessState.SystemTime()
	var atWindow time.Duration
	select {
	case atWindow = <-d.window:
	default:
	}
	return &res, total - atWindow, nil
}

func (s *suite) runPhase(ph string, round int) (phaseResult, error) {
	r := phaseResult{Phase: ph, Round: round}
	tokens := s.pool
	if ph != phaseBaseline {
		n := s.batchSize(ph)
		fmt.Fprintf(os.Stderr, "loadbench: phase %s round %d: minting %d tokens on %d cores\n", ph, round, n, runtime.NumCPU())
		t0 := time.Now()
		var err error
		if tokens, err = s.partner.mint(n + 1); err != nil {
			return r, err
		}
		r.Tokens, r.MintSeconds = n, time.Since(t0).Seconds()
	}
	probeToken, tokens := tokens[0], tokens[1:]
	file, err := s.writeTokens(ph, tokens)
	if err != nil {
		return r, err
	}
	defer os.Remove(file)
	var floodFile string
	if ph == phaseFlood {
		flood, err := floodTokens(probeToken, 100000)
		if err != nil {
			return r, err
		}
		if floodFile, err = s.writeTokens("flood", flood); err != nil {
			return r, err
		}
		defer os.Remove(floodFile)
	}

	caddy, addr, _, err := s.startCaddy(ph)
	if err != nil {
		return r, err
	}
	defer caddy.stop()
	if err := probe(addr, probeToken); err != nil {
		return r, fmt.Errorf("phase %s: %v", ph, err)
	}

	// Caddy's, the upstream's and Redis's CPU are read when the main driver's measured
	// window opens and when it has ended; the drivers report their own for the window.
	type sample struct{ caddy, up, redis time.Duration }
	read := func() (x sample) {
		x.caddy, _ = caddy.cpuTime()
		x.up, _ = s.upProc.cpuTime()
		if s.redisProc != nil {
			x.redis, _ = s.redisProc.cpuTime()
		}
		return x
	}
	var before sample
	var fetchesBefore int64
	var flood *driver
	if ph == phaseFlood {
		if flood, err = s.startDrive("drive-flood", addr, floodFile, s.floodConns, true, nil); err != nil {
			return r, err
		}
		defer flood.p.stop()
	}
	main, err := s.startDrive("drive-"+ph, addr, file, s.conns, ph == phaseBaseline, func() {
		before, fetchesBefore = read(), s.fetches.Load()
	})
	if err != nil {
		return r, err
	}
	defer main.p.stop()
	res, driveCPU, err := main.wait()
	after, fetchesAfter := read(), s.fetches.Load()
	if err != nil {
		return r, err
	}
	var floodCPU time.Duration
	if flood != nil {
		if r.Flood, floodCPU, err = flood.wait(); err != nil {
			return r, err
		}
	}
	r.Load = res
	r.CaddyCPU = after.caddy - before.caddy
	r.Fetches = fetchesAfter - fetchesBefore
	gen := driveCPU + floodCPU + (after.up - before.up) + (after.redis - before.redis)
	r.GenCoreBusy = gen.Seconds() / res.Elapsed.Seconds()
	s.phaseRPS[ph] = max(s.phaseRPS[ph], res.RPS)
	if ph == phaseBaseline {
		est := res.RPS
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
	fmt.Fprintf(os.Stderr, "loadbench: profile of phase %s: minting %d tokens\n", ph, n)
	tokens, err := s.partner.mint(n + 1)
	if err != nil {
		return err
	}
	probeToken, tokens := tokens[0], tokens[1:]
	file, err := s.writeTokens("profile-"+ph, tokens)
	if err != nil {
		return err
	}
	defer os.Remove(file)
	caddy, addr, admin, err := s.startCaddy(ph)
	if err != nil {
		return err
	}
	defer caddy.stop()
	if err := probe(addr, probeToken); err != nil {
		return err
	}
	args := []string{s.self, "drive", "-addr", addr, "-tokens", file, "-conns", strconv.Itoa(s.conns),
		"-warmup", s.warmup.String(), "-duration", (s.profile + time.Second).String()}
	driver, err := startPinned("drive-profile-"+ph, s.genCPU, filepath.Join(s.out, "logs"), nil, io.Discard, args...)
	if err != nil {
		return err
	}
	defer driver.stop()
	time.Sleep(s.warmup)
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", admin, int(s.profile.Seconds()))
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	prof := filepath.Join(s.out, "profile-"+ph+".pb.gz")
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := os.WriteFile(prof, data, 0o644); err != nil {
		return err
	}
	<-driver.done
	for _, view := range []struct{ name, flag string }{{"flat", "-top"}, {"cum", "-top"}} {
		args := []string{"tool", "pprof", view.flag, "-nodecount=45"}
		if view.name == "cum" {
			args = append(args, "-cum")
		}
		out, err := exec.Command("go", append(args, s.caddyBin, prof)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go tool pprof: %v: %s", err, out)
		}
		top := filepath.Join(s.out, "profile-"+ph+"."+view.name+".txt")
		if err := os.WriteFile(top, out, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("profile of %s: %s (top functions in profile-%s.flat.txt and .cum.txt)\n", phaseTitle[ph], prof, ph)
	return nil
}
