package wrk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder stands in for the gateway: it records every body in the order it arrives and
// answers 409 to a body it has seen (a replayed nonce), 418 to a token ending in -teapot,
// 400 to any other request shape than the benchmark's, and 200 otherwise.
type recorder struct {
	mu     sync.Mutex
	bodies []string
	seen   map[string]bool
	status map[int]int64
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	code := http.StatusOK
	switch b := string(body); {
	case r.Method != http.MethodPost || r.URL.Path != "/partner/acme/url" || r.Header.Get("Content-Type") != "text/plain" || b == "":
		code = http.StatusBadRequest
	case rec.seen[b]:
		code = http.StatusConflict
	case strings.HasSuffix(b, "-teapot"):
		code = http.StatusTeapot
	}
	if len(body) > 0 {
		rec.bodies = append(rec.bodies, string(body))
		rec.seen[string(body)] = true
	}
	rec.status[code]++
	w.WriteHeader(code)
}

func newRecorder(t *testing.T) (*recorder, string) {
	rec := &recorder{seen: map[string]bool{}, status: map[int]int64{}}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

// writeTokens writes n tokens tok-000001, tok-000002, …, every tenth ending in -teapot.
func writeTokens(t *testing.T, n int) (string, []string) {
	tokens := make([]string, n)
	var b strings.Builder
	for i := range tokens {
		tokens[i] = fmt.Sprintf("tok-%06d", i+1)
		if (i+1)%10 == 0 {
			tokens[i] += "-teapot"
		}
		b.WriteString(tokens[i] + "\n")
	}
	path := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, tokens
}

// run runs the real wrk with partner.lua for cfg, opening a gated run when it is ready. It
// also returns the time from the moment wrk may send (the gate opened, or wrk started) to
// its exit, which wrk's and Read's windows must fit in, and the duration wrk reported.
func run(t *testing.T, cfg Config) (res *Result, outside, reported time.Duration) {
	t.Helper()
	bin, err := exec.LookPath("wrk")
	if err != nil {
		t.Fatalf("wrk is not installed (scripts/test-deps.sh installs it): %v", err)
	}
	cfg.Script = filepath.Join(t.TempDir(), "partner.lua")
	if err := os.WriteFile(cfg.Script, Script, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, cfg.Args()...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	gate, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	readies := 0
	var stdout bytes.Buffer
	res, rest, readErr := Read(io.TeeReader(out, &stdout), func() {
		readies++
		opened = time.Now()
		io.WriteString(gate, "go\n")
	})
	gate.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wrk %s: %v\n%s%s", strings.Join(cfg.Args(), " "), err, rest, stderr.String())
	}
	outside = time.Since(opened)
	if readErr != nil {
		t.Fatalf("Read(wrk output) error = %v\n%s%s", readErr, rest, stderr.String())
	}
	if want := map[bool]int{true: 1}[cfg.Gated]; readies != want {
		t.Errorf("Read called onReady %d times, want %d", readies, want)
	}
	for line := range strings.Lines(stdout.String()) {
		var rep struct {
			DurationUS int64 `json:"duration_us"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rep) == nil {
			reported = time.Duration(rep.DurationUS) * time.Microsecond
		}
	}
	if reported <= 0 {
		t.Fatalf("wrk reported no duration in %q", stdout.String())
	}
	return res, outside, reported
}

// checkRate fails the test unless res.RPS is res.Requests per second of res.Elapsed.
func checkRate(t *testing.T, res *Result) {
	t.Helper()
	want := float64(res.Requests) / res.Elapsed.Seconds()
	if res.RPS <= 0 || math.Abs(res.RPS-want) > 1e-9*want {
		t.Errorf("RPS = %v, want Requests/Elapsed = %v", res.RPS, want)
	}
}

func TestFreshTokensAreSentOnceInOrder(t *testing.T) {
	for _, conns := range []int{1, 4} {
		t.Run(fmt.Sprintf("conns=%d", conns), func(t *testing.T) {
			t.Parallel()
			rec, url := newRecorder(t)
			file, tokens := writeTokens(t, 200000)
			res, outside, reported := run(t, Config{URL: url + "/partner/acme/url", Tokens: file, Conns: conns, Duration: time.Second, Gated: true})
			rec.mu.Lock()
			defer rec.mu.Unlock()

			if res.Exhausted || res.Requests == 0 || res.Sent < res.Requests || res.Sent > int64(len(tokens)) {
				t.Fatalf("result = %+v, want answers, not exhausted, Sent between Requests and %d", res, len(tokens))
			}
			// The server got each token once, the first one first (wrk's syntax check did
			// not spend it), and all it got were among the tokens wrk says it sent. Only the
			// last requests, in flight when wrk stopped, may be missing.
			if rec.status[http.StatusConflict] != 0 || rec.status[http.StatusBadRequest] != 0 {
				t.Errorf("server answered %v, want no replay (409) and no malformed request (400)", rec.status)
			}
			if int64(len(rec.bodies)) < res.Sent-int64(conns) || int64(len(rec.bodies)) > res.Sent {
				t.Errorf("server got %d tokens, want between Sent-%d and Sent = %d", len(rec.bodies), conns, res.Sent)
			}
			// At most one request a connection was in flight when wrk stopped, and that one
			// is its connection's last, not necessarily among the last handed out: a
			// connection whose answer was slow holds an earlier token while the others go on.
			got := map[string]bool{}
			for _, b := range rec.bodies {
				got[b] = true
			}
			var missing []int
			for i, tok := range tokens[:res.Sent] {
				if !got[tok] {
					missing = append(missing, i+1)
				}
			}
			if len(missing) > conns {
				t.Fatalf("tokens %v never arrived, want at most %d missing (one in flight a connection)", missing, conns)
			}
			if conns == 1 {
				for i, b := range rec.bodies {
					if b != tokens[i] {
						t.Fatalf("request %d carried %q, want %q: one connection sends the tokens in order", i+1, b, tokens[i])
					}
				}
			}
			// wrk reads at most the answers the server wrote; the last in flight are lost.
			for _, code := range []int{http.StatusOK, http.StatusTeapot} {
				if n := res.Status[code]; n > rec.status[code] || n < rec.status[code]-int64(conns) || n == 0 {
					t.Errorf("Status[%d] = %d, want the server's %d (less at most %d in flight)", code, n, rec.status[code], conns)
				}
			}
			if len(res.Status) != 2 || res.Non(http.StatusOK) != res.Status[http.StatusTeapot] {
				t.Errorf("Status = %v, Non(200) = %d, want only 200 and 418, Non counting the 418s", res.Status, res.Non(http.StatusOK))
			}
			// A run that did not run out of tokens is wrk's whole window: it sends for all of
			// -d1s (a loaded machine makes it longer, never shorter), and it is inside the
			// time from the gate's opening to wrk's exit, so the wait for the gate is not in it.
			if res.Elapsed != reported || res.Elapsed < time.Second || res.Elapsed > outside {
				t.Errorf("Elapsed = %v, want wrk's window %v: at least the 1s of -d1s, at most the %v from the gate's opening to wrk's exit", res.Elapsed, reported, outside)
			}
			checkRate(t, res)
			if !(res.P50 > 0 && res.P50 <= res.P90 && res.P90 <= res.P99 && res.P99 <= res.Max) {
				t.Errorf("latencies %v %v %v %v, want 0 < p50 <= p90 <= p99 <= max", res.P50, res.P90, res.P99, res.Max)
			}
		})
	}
}

func TestFreshRunStopsWhenTokensRunOut(t *testing.T) {
	t.Parallel()
	rec, url := newRecorder(t)
	file, tokens := writeTokens(t, 30)
	res, outside, reported := run(t, Config{URL: url + "/partner/acme/url", Tokens: file, Conns: 4, Duration: time.Second, Gated: true})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !res.Exhausted || res.Sent != int64(len(tokens)) {
		t.Errorf("Exhausted, Sent = %v, %d, want true, %d", res.Exhausted, res.Sent, len(tokens))
	}
	// The window is Read's, from the window line to the tokens-used-up line, not wrk's
	// -d1s: both lines come after the gate opened and before wrk exited.
	if res.Elapsed == reported || res.Elapsed <= 0 || res.Elapsed > outside {
		t.Errorf("Elapsed = %v, want the window cut short at the last token: not wrk's %v, within the %v from the gate's opening to wrk's exit", res.Elapsed, reported, outside)
	}
	checkRate(t, res)
	if res.Status[http.StatusConflict] != 0 {
		t.Errorf("Status = %v, want no replay", res.Status)
	}
	count := map[string]int{}
	for _, b := range rec.bodies {
		count[b]++
	}
	for _, tok := range tokens {
		if count[tok] > 1 {
			t.Errorf("token %q arrived %d times, want at most once", tok, count[tok])
		}
	}
	if rec.status[http.StatusConflict] != 0 {
		t.Errorf("server answered %v, want no replay (409)", rec.status)
	}
}

func TestRepeatCyclesFromSkip(t *testing.T) {
	t.Parallel()
	rec, url := newRecorder(t)
	file, tokens := writeTokens(t, 5)
	// Not gated: as someone runs the script by hand.
	res, _, _ := run(t, Config{URL: url + "/partner/acme/url", Tokens: file, Repeat: true, Skip: 7, Conns: 1, Duration: time.Second})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bodies) < 10 {
		t.Fatalf("server got %d requests, want a second's worth", len(rec.bodies))
	}
	for i, b := range rec.bodies {
		if want := tokens[(7+i)%5]; b != want {
			t.Fatalf("request %d carried %q, want %q: all 5 tokens cycled, starting after 7 sent", i+1, b, want)
		}
	}
	if res.Exhausted || res.Status[http.StatusOK] != 5 || res.Status[http.StatusConflict] != res.Requests-5 {
		t.Errorf("Exhausted, Status = %v, %v, want false, 5 first sights (200) and the rest replays (409)", res.Exhausted, res.Status)
	}
}

func TestRead(t *testing.T) {
	const result = `{"requests":%d,"duration_us":2000000,"sent":%d,"exhausted":%d,"status":{"200":90,"401":10},` +
		`"errors":{"connect":1,"read":2,"write":0,"timeout":4,"status":10},"latency_us":{"p50":1500,"p90":2500,"p99":4000,"max":9000,"mean":1600.5}}`
	tests := []struct {
		name    string
		out     string
		want    Result
		wantErr string
	}{
		{name: "full window", out: "partner.lua: ready\npartner.lua: window\nRunning 2s test\n" + fmt.Sprintf(result, 100, 116, 0) + "\n",
			want: Result{Requests: 100, Status: map[int]int64{200: 90, 401: 10}, Errors: 3, Timeouts: 4, Elapsed: 2 * time.Second, RPS: 50,
				P50: 1500 * time.Microsecond, P90: 2500 * time.Microsecond, P99: 4 * time.Millisecond, Max: 9 * time.Millisecond, Sent: 116}},
		{name: "answers lost", out: "partner.lua: window\n" + fmt.Sprintf(result, 101, 116, 0) + "\n", wantErr: "counted 100 answers by status, wrk 101"},
		{name: "no result", out: "partner.lua: window\nRunning 2s test\n", wantErr: "no result line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := Read(strings.NewReader(tt.out), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Read(%q) error = %v, want %q", tt.out, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read(%q) error = %v", tt.out, err)
			}
			if fmt.Sprint(*got) != fmt.Sprint(tt.want) {
				t.Errorf("Read(%q) = %+v, want %+v", tt.out, *got, tt.want)
			}
		})
	}
}

func TestReadShortensAnExhaustedWindow(t *testing.T) {
	r, w := io.Pipe()
	go func() {
		io.WriteString(w, "partner.lua: window\n")
		time.Sleep(10 * time.Millisecond) // the lines come at different moments
		io.WriteString(w, "partner.lua: tokens used up\n")
		fmt.Fprintln(w, `{"requests":10,"duration_us":5000000,"sent":10,"exhausted":3,"status":{"200":10},"errors":{},"latency_us":{}}`)
		w.Close()
	}()
	start := time.Now()
	got, _, err := Read(r, nil)
	outside := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// Read saw both lines while it ran, and wrk's 5s is not the window
	if !got.Exhausted || got.Elapsed <= 0 || got.Elapsed > outside || got.Elapsed == 5*time.Second {
		t.Errorf("Read() = %+v, want Exhausted with the window from the window line to the exhausted line, within the %v Read ran", *got, outside)
	}
	checkRate(t, got)
}

func TestArgs(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Script: "p.lua", URL: "http://h/x", Tokens: "t.txt", Duration: 10 * time.Second},
			"-t1 -c16 -d10s --timeout 10s -s p.lua http://h/x -- t.txt fresh 0"},
		{Config{Script: "p.lua", URL: "http://h/x", Tokens: "t.txt", Repeat: true, Skip: 7, Conns: 4, Duration: 2500 * time.Millisecond, Timeout: time.Millisecond},
			"-t1 -c4 -d3s --timeout 1s -s p.lua http://h/x -- t.txt repeat 7"},
		{Config{Script: "p.lua", URL: "http://h/x", Tokens: "t.txt", Gated: true, Duration: time.Nanosecond},
			"-t1 -c16 -d1s --timeout 10s -s p.lua http://h/x -- t.txt fresh 0 gated"},
	}
	for _, tt := range tests {
		if got := strings.Join(tt.cfg.Args(), " "); got != tt.want {
			t.Errorf("%+v.Args() = %q, want %q", tt.cfg, got, tt.want)
		}
	}
}

// TestSum: one load split over two wrk processes reads as one: counts and rates add up,
// the latencies are the worse of the two, and one process out of tokens marks the whole.
func TestSum(t *testing.T) {
	a := &Result{Requests: 100, Status: map[int]int64{200: 99, 503: 1}, Errors: 1, RPS: 10, Elapsed: 10 * time.Second,
		P50: 1 * time.Millisecond, P90: 2 * time.Millisecond, P99: 5 * time.Millisecond, Max: 9 * time.Millisecond, Sent: 101}
	b := &Result{Requests: 120, Status: map[int]int64{200: 120}, RPS: 12, Elapsed: 9 * time.Second, Exhausted: true,
		P50: 2 * time.Millisecond, P90: 3 * time.Millisecond, P99: 4 * time.Millisecond, Max: 8 * time.Millisecond, Sent: 120}
	got := Sum([]*Result{a, b})
	want := &Result{Requests: 220, Status: map[int]int64{200: 219, 503: 1}, Errors: 1, RPS: 22, Elapsed: 10 * time.Second, Exhausted: true,
		P50: 2 * time.Millisecond, P90: 3 * time.Millisecond, P99: 5 * time.Millisecond, Max: 9 * time.Millisecond, Sent: 221}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sum() = %+v, want %+v", got, want)
	}
	if one := Sum([]*Result{a}); one != a {
		t.Errorf("Sum of one result = %+v, want it unchanged", one)
	}
}

// TestTokenLinesCarryTheirPath checks the "PATH TOKEN" lines of loadbench -partners: each
// token goes to its own line's path, a plain line to the URL's, and the path is not part of
// the body.
func TestTokenLinesCarryTheirPath(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // body → path
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if len(body) == 0 {
			return // the tokenless request written as the run stops
		}
		mu.Lock()
		got[string(body)] = r.URL.Path
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	want := map[string]string{}
	var b strings.Builder
	for i := range 30 {
		tok := fmt.Sprintf("tok-%03d", i)
		path := "/partner/acme/url"
		if i%3 != 0 {
			path = fmt.Sprintf("/partner/p%04d/url", i%3)
			b.WriteString(path + " ")
		}
		b.WriteString(tok + "\n")
		want[tok] = path
	}
	file := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _, _ := run(t, Config{URL: srv.URL + "/partner/acme/url", Tokens: file, Conns: 1, Duration: time.Second})
	mu.Lock()
	defer mu.Unlock()
	if !res.Exhausted || res.Sent != 30 {
		t.Errorf("result = %+v, want all 30 tokens sent", res)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("server got body → path %v, want %v", got, want)
	}
}
