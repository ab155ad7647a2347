// Package wrk drives the whole-gateway load benchmark's load with Debian's wrk and the
// request script partner.lua, and reads the result that script prints.
//
// wrk is a closed-loop HTTP/1.1 generator written in C: a fixed number of keep-alive
// connections, each sending its next request as soon as the previous answer has been
// read. partner.lua pre-formats one request per token when a thread starts, so that a
// request costs wrk a table lookup; the generator shares its core with the upstream and
// Redis, and every microsecond it spends is one they do not get.
package wrk

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Script is partner.lua, to be written to a file for wrk's -s flag.
//
//go:embed partner.lua
var Script []byte

// Lines partner.lua writes on standard output as they happen.
const (
	readyLine     = "partner.lua: ready"
	windowLine    = "partner.lua: window"
	exhaustedLine = "partner.lua: tokens used up"
)

// defaultTimeout is how long wrk waits for an answer before it counts a timeout.
const defaultTimeout = 10 * time.Second

// Config is one wrk run with partner.lua.
type Config struct {
	// Script is the path of partner.lua.
	Script string
	// URL is the gateway's URL with the request path, e.g.
	// http://127.0.0.1:8080/partner/acme/url.
	URL string
	// Tokens is the file of tokens, one per line; a line "PATH TOKEN" sends its token to
	// PATH instead of the URL's path.
	Tokens string
	// Repeat cycles through the tokens instead of sending each at most once.
	Repeat bool
	// Skip continues after a warmup run that sent Skip requests from the same file: a
	// fresh run leaves out the first Skip tokens, a repeat run starts its cycle after them.
	Skip int64
	// Gated makes wrk wait, once its requests are built, for a line on its standard
	// input; Read calls its onReady then.
	Gated bool
	// Conns is the number of connections (default 16).
	Conns int
	// Duration is the length of the run, rounded up to whole seconds: wrk's unit.
	Duration time.Duration
	// Timeout bounds one answer (default 10s).
	Timeout time.Duration
}

// Args returns wrk's arguments for c. The run has one thread: a fresh run must (threads
// would not share their position in the tokens), and the generator has one core.
func (c Config) Args() []string {
	mode := "fresh"
	if c.Repeat {
		mode = "repeat"
	}
	conns := c.Conns
	if conns <= 0 {
		conns = 16
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	args := []string{"-t1", "-c" + strconv.Itoa(conns), "-d" + strconv.FormatInt(Seconds(c.Duration), 10) + "s",
		"--timeout", strconv.FormatInt(Seconds(timeout), 10) + "s", "-s", c.Script, c.URL,
		"--", c.Tokens, mode, strconv.FormatInt(c.Skip, 10)}
	if c.Gated {
		args = append(args, "gated")
	}
	return args
}

// Seconds is d in wrk's unit: whole seconds, rounded up, at least one.
func Seconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// Result is what one wrk run measured.
type Result struct {
	// Requests is the number of answers read.
	Requests int64 `json:"requests"`
	// Status counts the answers by HTTP status code.
	Status map[int]int64 `json:"status"`
	// Errors counts socket errors: failed connects, reads and writes, each of which
	// costs a request its answer.
	Errors int64 `json:"errors"`
	// Timeouts counts answers that took longer than the timeout; they are in Status too.
	Timeouts int64 `json:"timeouts"`
	// Elapsed is the length of the run: wrk's, or up to the moment the tokens ran out.
	Elapsed time.Duration `json:"elapsed_ns"`
	// RPS is Requests per second of Elapsed.
	RPS float64 `json:"rps"`
	// P50 to Max are wrk's latencies, from the first byte of the request written to the
	// last byte of the answer read.
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
	// Sent is the number of requests built; in a fresh run, the tokens spent.
	Sent int64 `json:"sent"`
	// Exhausted reports that a fresh run ran out of tokens and stopped early.
	Exhausted bool `json:"exhausted"`
}

// Non reports the number of answers whose status is not want, plus the socket errors.
func (r *Result) Non(want int) int64 {
	n := r.Errors
	for code, c := range r.Status {
		if code != want {
			n += c
		}
	}
	return n
}

// Sum adds up the results of wrk runs opened at the same moment against the same server
// (one load split over several processes): requests, statuses and errors add up, and so
// do the rates, each over its own run; the latencies are the highest of the runs', which
// see the same server and differ by little.
func Sum(parts []*Result) *Result {
	if len(parts) == 1 {
		return parts[0]
	}
	sum := &Result{Status: map[int]int64{}}
	for _, p := range parts {
		sum.Requests += p.Requests
		sum.Errors += p.Errors
		sum.Timeouts += p.Timeouts
		sum.Sent += p.Sent
		sum.RPS += p.RPS
		sum.Exhausted = sum.Exhausted || p.Exhausted
		sum.Elapsed = max(sum.Elapsed, p.Elapsed)
		sum.P50, sum.P90 = max(sum.P50, p.P50), max(sum.P90, p.P90)
		sum.P99, sum.Max = max(sum.P99, p.P99), max(sum.Max, p.Max)
		for code, n := range p.Status {
			sum.Status[code] += n
		}
	}
	return sum
}

// report is the JSON line partner.lua's done() prints.
type report struct {
	Requests   int64            `json:"requests"`
	DurationUS int64            `json:"duration_us"`
	Sent       int64            `json:"sent"`
	Exhausted  int64            `json:"exhausted"`
	Status     map[string]int64 `json:"status"`
	Errors     struct {
		Connect int64 `json:"connect"`
		Read    int64 `json:"read"`
		Write   int64 `json:"write"`
		Timeout int64 `json:"timeout"`
	} `json:"errors"`
	LatencyUS struct {
		P50 int64 `json:"p50"`
		P90 int64 `json:"p90"`
		P99 int64 `json:"p99"`
		Max int64 `json:"max"`
	} `json:"latency_us"`
}

// Read reads a running wrk's standard output to its end. In a gated run it calls onReady
// when wrk has built its requests and waits for its standard input. It returns the result
// and the rest of the output (wrk's own summary), for a log.
//
// wrk measures its run from the start of its thread to the end of -d. A fresh run whose
// tokens ran out stopped sending then, so its window ends when the script said so.
func Read(r io.Reader, onReady func()) (*Result, []byte, error) {
	var rest bytes.Buffer
	var windowAt, exhaustedAt time.Time
	var line []byte
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		switch text := sc.Bytes(); {
		case string(text) == readyLine:
			if onReady != nil {
				onReady()
			}
		case string(text) == windowLine:
			windowAt = time.Now()
		case string(text) == exhaustedLine:
			exhaustedAt = time.Now()
		case bytes.HasPrefix(text, []byte("{")):
			line = bytes.Clone(text)
		default:
			rest.Write(text)
			rest.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, rest.Bytes(), err
	}
	if line == nil {
		return nil, rest.Bytes(), errors.New("wrk printed no result line (is partner.lua its script?)")
	}
	res, err := parse(line)
	if err != nil {
		return nil, rest.Bytes(), err
	}
	if res.Exhausted && !windowAt.IsZero() && exhaustedAt.After(windowAt) {
		res.Elapsed = exhaustedAt.Sub(windowAt)
		res.RPS = float64(res.Requests) / res.Elapsed.Seconds()
	}
	return res, rest.Bytes(), nil
}

func parse(line []byte) (*Result, error) {
	var rep report
	if err := json.Unmarshal(line, &rep); err != nil {
		return nil, fmt.Errorf("decoding partner.lua's result: %v", err)
	}
	res := &Result{
		Requests:  rep.Requests,
		Status:    make(map[int]int64, len(rep.Status)),
		Errors:    rep.Errors.Connect + rep.Errors.Read + rep.Errors.Write,
		Timeouts:  rep.Errors.Timeout,
		Elapsed:   time.Duration(rep.DurationUS) * time.Microsecond,
		P50:       time.Duration(rep.LatencyUS.P50) * time.Microsecond,
		P90:       time.Duration(rep.LatencyUS.P90) * time.Microsecond,
		P99:       time.Duration(rep.LatencyUS.P99) * time.Microsecond,
		Max:       time.Duration(rep.LatencyUS.Max) * time.Microsecond,
		Sent:      rep.Sent,
		Exhausted: rep.Exhausted > 0,
	}
	var answers int64
	for code, n := range rep.Status {
		c, err := strconv.Atoi(code)
		if err != nil {
			return nil, fmt.Errorf("decoding partner.lua's result: status %q", code)
		}
		res.Status[c] = n
		answers += n
	}
	// Both count in wrk's response_complete; a difference means the script lost answers.
	if answers != res.Requests {
		return nil, fmt.Errorf("partner.lua counted %d answers by status, wrk %d", answers, res.Requests)
	}
	if res.Elapsed > 0 {
		res.RPS = float64(res.Requests) / res.Elapsed.Seconds()
	}
	return res, nil
}
