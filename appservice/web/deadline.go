package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/partnergate/partnergate/problem"
)

// DefaultDatabaseTimeout is Config.DatabaseTimeout's default: a third of the app service's
// 30 s write timeout, so a request that waited this long still has time to say why.
const DefaultDatabaseTimeout = 10 * time.Second

// timedOutDetail is the detail of a request whose database timeout passed.
const timedOutDetail = "The database did not answer in time. Try again in a few seconds."

// serveWithDeadline routes r with a context that ends after the database timeout, and
// answers 503 unavailable with Retry-After, in the shape of the route, when the route has
// not answered by then. The context alone is not enough: PostgreSQL's driver gives up a
// query when its context ends, but SQLite waits on another connection's lock for its whole
// busy timeout whatever the context says. So the route writes to a buffer and runs on;
// its answer is sent when it comes in time and dropped otherwise, as http.TimeoutHandler
// does. The answers are small pages, JSON and PDFs: buffering them costs little.
func (h *Handler) serveWithDeadline(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DatabaseTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	bw := &bufferedWriter{header: w.Header().Clone()}
	done := make(chan struct{})
	panicked := make(chan any, 1)
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		defer func() {
			if p := recover(); p != nil {
				panicked <- p
			}
		}()
		h.mux.ServeHTTP(bw, r)
		close(done)
	}()
	select {
	case p := <-panicked:
		panic(p) // net/http's own recovery and http.ErrAbortHandler, as without the buffer
	case <-done:
		bw.mu.Lock()
		defer bw.mu.Unlock()
		dst := w.Header()
		clear(dst)
		maps.Copy(dst, bw.header)
		if bw.status == 0 {
			bw.status = http.StatusOK // the route wrote nothing: net/http's answer
		}
		w.WriteHeader(bw.status)
		w.Write(bw.body.Bytes())
	case <-ctx.Done():
		bw.mu.Lock()
		defer bw.mu.Unlock()
		bw.timedOut = true
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return // the client went away; nobody is left to answer
		}
		h.log.Error("request timed out waiting for the database", "outcome", problem.CodeUnavailable, "method", r.Method,
			"timeout_ms", h.cfg.DatabaseTimeout.Milliseconds())
		h.answerTimeout(w, r)
	}
}

// answerTimeout answers 503 unavailable as the route would have: problem+json for the API
// and a link's /url, with the gateway's request id on a link, the problem page elsewhere.
func (h *Handler) answerTimeout(w http.ResponseWriter, r *http.Request) {
	p := problem.New(problem.CodeUnavailable, timedOutDetail)
	w.Header().Set("Retry-After", retryAfter)
	if rest, ok := strings.CutPrefix(r.URL.Path, "/partner/"); ok {
		_, endpoint, _ := strings.Cut(rest, "/")
		p.RequestID = h.readForwarded(r).requestID
		h.failLink(w, endpoint, p)
		return
	}
	if strings.HasPrefix(r.URL.Path, apiPrefix) {
		writeProblem(w, p)
		return
	}
	h.fail(w, p)
}

// Drain waits until the routes still running after their requests timed out have ended
// (SQLite's busy wait outlives the deadline), or until ctx ends. Call it once the server
// takes no more requests (http.Server.Shutdown returned nil), before closing the store.
func (h *Handler) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		h.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("routes still waiting on the database: %w", ctx.Err())
	}
}

// bufferedWriter keeps a route's answer until serveWithDeadline sends or drops it.
type bufferedWriter struct {
	mu       sync.Mutex
	header   http.Header
	status   int
	body     bytes.Buffer
	timedOut bool
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(status int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.status == 0 && !b.timedOut {
		b.status = status
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
