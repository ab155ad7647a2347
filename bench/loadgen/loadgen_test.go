package loadgen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server answers 200 to a body starting with "ok", 401 to "no", closes the connection
// after answering "close", and hangs up without an answer on "drop".
func server(t *testing.T, seen *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen.Add(1)
		switch {
		case strings.HasPrefix(string(body), "ok"):
			io.WriteString(w, "fine")
		case strings.HasPrefix(string(body), "close"):
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		case strings.HasPrefix(string(body), "drop"):
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			http.Error(w, "no", http.StatusUnauthorized)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func requests(host string, bodies ...string) [][]byte {
	var out [][]byte
	for _, b := range bodies {
		out = append(out, BuildRequest(host, "/partner/acme/url", "text/plain", []byte(b)))
	}
	return out
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestRunCountsEveryRequestOnce(t *testing.T) {
	tests := []struct {
		name       string
		bodies     []string
		conns      int
		want200    int64
		want401    int64
		wantErrors int64
	}{
		{name: "all ok", bodies: repeat("ok", 300), conns: 4, want200: 300},
		{name: "mixed statuses", bodies: append(repeat("ok", 200), repeat("no", 100)...), conns: 8, want200: 200, want401: 100},
		{name: "server closes connections", bodies: append(repeat("ok", 150), repeat("close", 50)...), conns: 3, want200: 200},
		{name: "server drops requests", bodies: append(repeat("ok", 290), repeat("drop", 10)...), conns: 2, want200: 290, wantErrors: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen atomic.Int64
			srv := server(t, &seen)
			addr := strings.TrimPrefix(srv.URL, "http://")
			res, err := Run(context.Background(), Config{Addr: addr, Requests: requests(addr, tt.bodies...), Conns: tt.conns})
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if got := res.Status[200]; got != tt.want200 {
				t.Errorf("Run() Status[200] = %d, want %d", got, tt.want200)
			}
			if got := res.Status[401]; got != tt.want401 {
				t.Errorf("Run() Status[401] = %d, want %d", got, tt.want401)
			}
			if res.Errors != tt.wantErrors {
				t.Errorf("Run() Errors = %d, want %d", res.Errors, tt.wantErrors)
			}
			if want := int64(len(tt.bodies)); res.Sent != want || seen.Load() != want {
				t.Errorf("Run() Sent = %d and server saw %d, want %d each", res.Sent, seen.Load(), want)
			}
			if want := tt.want200 + tt.want401; res.Requests != want {
				t.Errorf("Run() Requests = %d, want %d", res.Requests, want)
			}
			if got := res.Non(200); got != tt.want401+tt.wantErrors {
				t.Errorf("Run() Non(200) = %d, want %d", got, tt.want401+tt.wantErrors)
			}
			if !res.Exhausted {
				t.Errorf("Run() Exhausted = false, want true once every request is sent")
			}
			if res.RPS <= 0 || res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 {
				t.Errorf("Run() RPS, P50, P99, Max = %v, %v, %v, %v; want positive and ordered", res.RPS, res.P50, res.P99, res.Max)
			}
		})
	}
}

func TestRunRepeatStopsAtDuration(t *testing.T) {
	var seen atomic.Int64
	srv := server(t, &seen)
	addr := strings.TrimPrefix(srv.URL, "http://")
	res, err := Run(context.Background(), Config{
		Addr: addr, Requests: requests(addr, "ok", "ok", "ok"), Repeat: true,
		Conns: 2, Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if res.Exhausted {
		t.Errorf("Run() Exhausted = true, want false when repeating")
	}
	if res.Requests <= 3 || res.Status[200] != res.Requests || res.Errors != 0 {
		t.Errorf("Run() Requests, Status[200], Errors = %d, %d, %d; want more than 3, all 200, no error", res.Requests, res.Status[200], res.Errors)
	}
	if res.Elapsed != 200*time.Millisecond {
		t.Errorf("Run() Elapsed = %v, want the 200ms window", res.Elapsed)
	}
	if res.Sent < res.Requests || seen.Load() < res.Requests {
		t.Errorf("Run() Sent = %d, server saw %d; want at least the %d counted", res.Sent, seen.Load(), res.Requests)
	}
}

func TestRunRefusesNothingToDo(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "no requests", cfg: Config{Addr: "127.0.0.1:1"}},
		{name: "repeat without duration", cfg: Config{Addr: "127.0.0.1:1", Requests: [][]byte{[]byte("x")}, Repeat: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tt.cfg); err == nil {
				t.Errorf("Run(%+v) error = nil, want an error", tt.cfg)
			}
		})
	}
}

func TestBuildRequest(t *testing.T) {
	got := string(BuildRequest("127.0.0.1:8080", "/partner/acme/url", "text/plain", []byte("abc")))
	want := "POST /partner/acme/url HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc"
	if got != want {
		t.Errorf("BuildRequest() = %q, want %q", got, want)
	}
}
