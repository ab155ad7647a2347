// Package loadgen is the closed-loop HTTP/1.1 load generator of the whole-gateway benchmark:
// a fixed number of keep-alive connections, each sending its next request as soon as the
// previous answer has been read.
//
// It writes pre-built raw requests instead of going through net/http's client because the
// generator shares one core with the upstream while the gateway has the other: every
// microsecond the generator spends is one the upstream does not get, and the measurement is
// only sound while the gateway, not the generator, is the bottleneck. Each pre-built request
// is sent at most once unless Repeat is set, since every valid partner token carries a
// nonce that the gateway accepts once.
package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one load run.
type Config struct {
	// Addr is the host:port to connect to (loopback only in this project).
	Addr string
	// Requests are complete raw HTTP/1.1 requests, each with Content-Length and without
	// "Connection: close", taken in order by whichever connection is free.
	Requests [][]byte
	// Repeat cycles through Requests instead of stopping when they are used up; for the
	// baseline, where no nonce is checked, and for the unknown-kid flood.
	Repeat bool
	// Conns is the number of concurrent connections (default 1).
	Conns int
	// Warmup is how long answers are read but not counted, so that connection setup,
	// the upstream pool and the Go heap reach their steady state first.
	Warmup time.Duration
	// Duration is the measured window after Warmup; zero measures until Requests are used
	// up (which needs Repeat unset).
	Duration time.Duration
	// OnWindow, when set, is called as the measured window opens (after Warmup), so that
	// a caller can sample the CPU time of the processes under test at the same moment.
	OnWindow func()
	// Timeout bounds one request's round trip (default 10s); a request that exceeds it
	// counts as an error and its connection is replaced.
	Timeout time.Duration
}

// Result is what a run measured, over the measured window only.
type Result struct {
	// Requests is the number of answers read in the window.
	Requests int64 `json:"requests"`
	// Status counts answers by HTTP status code.
	Status map[int]int64 `json:"status"`
	// Errors counts requests that got no answer (connection refused, reset, timeout).
	Errors int64 `json:"errors"`
	// Elapsed is the length of the measured window.
	Elapsed time.Duration `json:"elapsed_ns"`
	// RPS is Requests per second of Elapsed.
	RPS float64 `json:"rps"`
	// P50, P99 and Max are latencies of the answers in the window, from the first byte
	// written to the last byte of the body read.
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
	// Exhausted reports that Requests ran out before Duration ended.
	Exhausted bool `json:"exhausted"`
	// Sent is the number of requests taken from Requests, warmup included.
	Sent int64 `json:"sent"`
}

// Non reports the number of answers whose status is not want, plus the errors.
func (r *Result) Non(want int) int64 {
	n := r.Errors
	for code, c := range r.Status {
		if code != want {
			n += c
		}
	}
	return n
}

type worker struct {
	until  time.Time // end of the measured window, zero when open-ended
	last   time.Time // when the last counted answer arrived
	lat    []time.Duration
	status map[int]int64
	errors int64
}

// Run drives cfg.Addr until the window ends, ctx is done or the requests are used up.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Requests) == 0 {
		return nil, errors.New("no requests to send")
	}
	if cfg.Duration <= 0 && cfg.Repeat {
		return nil, errors.New("repeating requests needs a duration")
	}
	if cfg.Conns <= 0 {
		cfg.Conns = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	if cfg.OnWindow != nil {
		t := time.AfterFunc(cfg.Warmup, cfg.OnWindow)
		defer t.Stop()
	}
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = measureFrom.Add(cfg.Duration)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}

	var next atomic.Int64
	var exhaustedAt atomic.Int64 // unix nanos of the first take past the end, 0 if none
	take := func() ([]byte, bool) {
		i := next.Add(1) - 1
		if i >= int64(len(cfg.Requests)) {
			if !cfg.Repeat {
				exhaustedAt.CompareAndSwap(0, time.Now().UnixNano())
				return nil, false
			}
			i %= int64(len(cfg.Requests))
		}
		return cfg.Requests[i], true
	}

	workers := make([]*worker, cfg.Conns)
	var wg sync.WaitGroup
	for n := range workers {
		w := &worker{status: map[int]int64{}, until: deadline}
		workers[n] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx, cfg, take, measureFrom)
		}()
	}
	wg.Wait()

	end := time.Now()
	res := &Result{Status: map[int]int64{}, Sent: min(next.Load(), int64(len(cfg.Requests)))}
	if cfg.Repeat {
		res.Sent = next.Load()
	}
	if exhaustedAt.Load() != 0 {
		// The window closes with the last answer: the connections that found no request
		// left stop one by one, and idle time after the last answer is not throughput.
		res.Exhausted = true
		end = measureFrom
		for _, w := range workers {
			if w.last.After(end) {
				end = w.last
			}
		}
	} else if !deadline.IsZero() && end.After(deadline) {
		end = deadline
	}
	if end.Before(measureFrom) {
		return nil, fmt.Errorf("run ended %v into the %v warmup: nothing measured", end.Sub(start).Round(time.Millisecond), cfg.Warmup)
	}
	res.Elapsed = end.Sub(measureFrom)
	var lat []time.Duration
	for _, w := range workers {
		lat = append(lat, w.lat...)
		res.Errors += w.errors
		for code, c := range w.status {
			res.Status[code] += c
			res.Requests += c
		}
	}
	if res.Requests == 0 && res.Errors == 0 {
		return nil, errors.New("no answer inside the measured window")
	}
	if res.Elapsed > 0 {
		res.RPS = float64(res.Requests) / res.Elapsed.Seconds()
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50 = lat[len(lat)*50/100]
		res.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
		res.Max = lat[len(lat)-1]
	}
	return res, nil
}

// run is one connection's closed loop. A failed request is counted once and the
// connection replaced; a request is never retried, since its nonce may already be spent.
func (w *worker) run(ctx context.Context, cfg Config, take func() ([]byte, bool), measureFrom time.Time) {
	var mu sync.Mutex // guards conn against the cancellation callback
	var conn net.Conn
	setConn := func(c net.Conn) {
		mu.Lock()
		conn = c
		mu.Unlock()
	}
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	// A cancelled run must not leave a connection blocked in a read.
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if conn != nil {
			conn.SetDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	var br *bufio.Reader
	dialer := net.Dialer{Timeout: cfg.Timeout}
	for ctx.Err() == nil {
		req, ok := take()
		if !ok {
			return
		}
		t0 := time.Now()
		if conn == nil {
			c, err := dialer.DialContext(ctx, "tcp", cfg.Addr)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				w.count(measureFrom, time.Now(), 0, 0)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			setConn(c)
			br = bufio.NewReaderSize(c, 16<<10)
			if ctx.Err() != nil {
				return
			}
		}
		conn.SetDeadline(t0.Add(cfg.Timeout))
		status, keep, err := roundTrip(conn, br, req)
		t1 := time.Now()
		if err != nil && ctx.Err() != nil {
			return // cut off by the end of the run, not a failure of the server
		}
		w.count(measureFrom, t1, status, t1.Sub(t0))
		if err != nil || !keep {
			conn.Close()
			setConn(nil)
		}
	}
}

// count records one outcome if it finished inside the measured window; status 0 is an
// error.
func (w *worker) count(measureFrom, at time.Time, status int, d time.Duration) {
	if at.Before(measureFrom) || (!w.until.IsZero() && at.After(w.until)) {
		return
	}
	w.last = at
	if status == 0 {
		w.errors++
		return
	}
	w.status[status]++
	w.lat = append(w.lat, d)
}

func roundTrip(conn net.Conn, br *bufio.Reader, req []byte) (status int, keep bool, err error) {
	if _, err := conn.Write(req); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, false, err
	}
	return resp.StatusCode, !resp.Close, nil
}

// BuildRequest returns a raw HTTP/1.1 POST of body to path with the given content type,
// the form every request of the benchmark takes.
func BuildRequest(host, path, contentType string, body []byte) []byte {
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		path, host, contentType, len(body))
	return append([]byte(head), body...)
}
