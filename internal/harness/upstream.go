package harness

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Recorded is one request as the upstream received it.
type Recorded struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// Upstream is a recording HTTP server standing in for the app service: it records every
// request and answers 200 "upstream ok" (or what Handler answers, when set).
type Upstream struct {
	*httptest.Server
	// Handler, when set before requests arrive, answers instead of the default.
	Handler http.Handler

	mu   sync.Mutex
	reqs []Recorded
}

// NewUpstream starts a recording upstream on 127.0.0.1, closed in t.Cleanup.
func NewUpstream(t testing.TB) *Upstream {
	t.Helper()
	u := &Upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, Recorded{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		h := u.Handler
		u.mu.Unlock()
		if h != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "upstream ok")
	}))
	t.Cleanup(u.Close)
	return u
}

// Addr returns the upstream's host:port, for reverse_proxy.
func (u *Upstream) Addr() string { return strings.TrimPrefix(u.URL, "http://") }

// Requests returns a copy of the requests recorded so far.
func (u *Upstream) Requests() []Recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Recorded(nil), u.reqs...)
}

// Reset forgets the recorded requests.
func (u *Upstream) Reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reqs = nil
}

// Last returns the last recorded request, failing the test when there is none.
func (u *Upstream) Last(t testing.TB) Recorded {
	t.Helper()
	reqs := u.Requests()
	if len(reqs) == 0 {
		t.Fatal("the upstream received no request")
	}
	return reqs[len(reqs)-1]
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
