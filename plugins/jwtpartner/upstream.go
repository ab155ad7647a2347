package jwtpartner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"

	"github.com/partnergate/partnergate/problem"
)

// The outcomes of a forwarded request besides accepted (2xx and 3xx) and the code
// upstream_unavailable, which the gateway answers itself.
const (
	// outcomeUpstreamError is a 5xx the upstream answered in the gateway's shape (the app
	// service's 503 unavailable while its database is down), passed through untouched.
	outcomeUpstreamError = "upstream_error"
	// outcomeUpstreamRejected is a 4xx of the upstream (the app service's
	// gateway_assertion_invalid when the two disagree on the upstream secret).
	outcomeUpstreamRejected = "upstream_rejected"
	// outcomeClientClosed is a client that went away while the upstream was answering:
	// nobody is left to answer, and nothing failed on the gateway's side.
	outcomeClientClosed = "client_closed"
)

// upstreamDetail says what the partner's server (on /url) and the person at the browser
// (on /payload) do next: the nonce is spent, so the same token can only be replayed.
func upstreamDetail(endpoint string) string {
	if endpoint == endpointPayload {
		return "the service behind the gateway did not answer and this link is used up; open the link again from the partner's application in a few seconds"
	}
	return "the service behind the gateway did not answer; the token's nonce is spent, so send a freshly signed token, not this one, after Retry-After"
}

// serveNext hands a verified request to the next handler (reverse_proxy) and answers
// what it could not: an error before any response (upstream down, refused, timed out)
// and a 5xx whose body is not in the gateway's shape (a bare 502, a stack trace page)
// become upstream_unavailable, in the endpoint's shape with the request id. A 5xx in the
// gateway's shape, the app service's own, passes through untouched with its Retry-After.
// Every case is counted and logged under its own outcome, so a failing upstream never
// shows as accepted links.
func (h *Handler) serveNext(w http.ResponseWriter, r *http.Request, rq *request, next caddyhttp.Handler) error {
	// The writer lives in the request, allocated with it. The answer's headers so far (a
	// few: Server, and those of earlier handlers) are kept so that an upstream answer
	// replaced by ours leaves none of the upstream's headers behind.
	uw := &rq.upstream
	uw.ResponseWriterWrapper = caddyhttp.ResponseWriterWrapper{ResponseWriter: w}
	uw.endpoint = rq.endpoint
	uw.before.keep(w.Header())
	rq.forwardedAt = time.Now()
	err := next.ServeHTTP(uw, r)
	rq.upstreamStatus = uw.status

	switch {
	case err != nil && r.Context().Err() != nil:
		// The client is gone (reverse_proxy's 499): nobody reads an answer.
		rq.outcome = outcomeClientClosed
	case err != nil:
		rq.upstreamClass = upstreamClass(err)
		if he := (caddyhttp.HandlerError{}); errors.As(err, &he) {
			rq.upstreamStatus = he.StatusCode
		}
		if uw.status != 0 && !uw.replaced {
			// The upstream's answer has begun (a body cut off midway): it cannot be
			// replaced, and Caddy closes the connection.
			rq.outcome = string(problem.CodeUpstreamUnavailable)
			break
		}
		return h.writeUpstreamFailure(w, rq, uw, err)
	case uw.replaced:
		rq.upstreamClass = "status"
		return h.writeUpstreamFailure(w, rq, uw, fmt.Errorf("the upstream answered %d without a problem document", uw.status))
	case uw.status >= 500:
		rq.outcome = outcomeUpstreamError
	case uw.status >= 400:
		rq.outcome = outcomeUpstreamRejected
	}
	rq.upstreamErr = err
	h.logOutcome(rq, nil)
	if rq.ps != nil && rq.outcome == "" {
		h.metrics.accepted(&rq.ps.series, rq.partner, rq.endpoint)
	} else {
		h.metrics.request(rq.partnerLabel(), rq.endpointLabel(), rq.outcomeLabel())
	}
	return err
}

// writeUpstreamFailure answers upstream_unavailable in place of an upstream that gave
// none, or gave one not in the gateway's shape.
func (h *Handler) writeUpstreamFailure(w http.ResponseWriter, rq *request, uw *upstreamWriter, err error) error {
	uw.before.restore(w.Header())
	return h.writeRejection(w, rq, &rejection{code: problem.CodeUpstreamUnavailable, detail: upstreamDetail(rq.endpoint), err: err})
}

// upstreamClass names the kind of an upstream failure for the log line and the on-call
// engineer: whether the service could not be reached at all, so the request never got
// there (dial: down, refused, unroutable), hung (timeout), cut the connection (reset),
// had no upstream to send to (no_upstream, reverse_proxy's 503) or failed otherwise. The
// log line's error has reverse_proxy's own words.
func upstreamClass(err error) string {
	var ne net.Error
	var he caddyhttp.HandlerError
	switch {
	// reverse_proxy's DialError does not unwrap: the dial's cause is in its text only.
	case errors.As(err, new(reverseproxy.DialError)), errors.Is(err, syscall.ECONNREFUSED):
		return "dial"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "reset"
	case errors.As(err, &he) && he.StatusCode == http.StatusGatewayTimeout:
		return "timeout"
	case errors.As(err, &he) && he.StatusCode == http.StatusServiceUnavailable:
		return "no_upstream"
	}
	return "error"
}

// upstreamWriter watches the status the next handler writes, without buffering: a
// success streams through as before. Only a 5xx whose Content-Type is not the gateway's
// shape for the endpoint is held back (its header and body dropped), for serveNext to
// answer in its place.
type upstreamWriter struct {
	caddyhttp.ResponseWriterWrapper // by value: one allocation for both
	endpoint                        string
	before                          headerSnapshot
	status                          int  // the final status written, 0 until then
	replaced                        bool // the upstream's answer is dropped
}

func (uw *upstreamWriter) WriteHeader(code int) {
	if uw.status != 0 {
		if !uw.replaced {
			uw.ResponseWriterWrapper.WriteHeader(code) // superfluous: net/http logs it
		}
		return
	}
	if code < 200 { // 1xx informational: the final status is still to come
		uw.ResponseWriterWrapper.WriteHeader(code)
		return
	}
	uw.status = code
	if code >= 500 && !inOurShape(uw.endpoint, uw.Header().Get("Content-Type")) {
		uw.replaced = true
		return
	}
	uw.ResponseWriterWrapper.WriteHeader(code)
}

func (uw *upstreamWriter) Write(p []byte) (int, error) {
	if uw.status == 0 {
		uw.WriteHeader(http.StatusOK)
	}
	if uw.replaced {
		return len(p), nil
	}
	return uw.ResponseWriterWrapper.Write(p)
}

// ReadFrom keeps io.Copy's fast path without going round WriteHeader.
func (uw *upstreamWriter) ReadFrom(r io.Reader) (int64, error) {
	if uw.status == 0 {
		uw.WriteHeader(http.StatusOK)
	}
	if uw.replaced {
		return io.Copy(io.Discard, r)
	}
	return uw.ResponseWriterWrapper.ReadFrom(r)
}

// FlushError is what http.ResponseController calls: a flush of a held-back answer would
// send its header.
func (uw *upstreamWriter) FlushError() error {
	if uw.replaced {
		return nil
	}
	return http.NewResponseController(uw.ResponseWriter).Flush()
}

// Flush is http.Flusher, for handlers that assert it rather than use a ResponseController.
func (uw *upstreamWriter) Flush() { _ = uw.FlushError() }

// headerSnapshot keeps an answer's headers as they were, to put back later, as
// Header.Clone would. The few headers an answer has before reverse_proxy (Caddy's Server,
// an earlier handler's), one value each, are kept by value in the array, so a forwarded
// request copies nothing onto the heap; anything larger is cloned.
type headerSnapshot struct {
	n      int
	keys   [4]string
	values [4]string
	more   http.Header // a clone, when the array would not do
}

func (s *headerSnapshot) keep(h http.Header) {
	if len(h) > len(s.keys) {
		s.more = h.Clone()
		return
	}
	for k, v := range h {
		if len(v) != 1 {
			s.n, s.more = 0, h.Clone()
			return
		}
		s.keys[s.n], s.values[s.n] = k, v[0]
		s.n++
	}
}

// restore makes h what it was when kept.
func (s *headerSnapshot) restore(h http.Header) {
	clear(h)
	if s.more != nil {
		maps.Copy(h, s.more)
		return
	}
	for i := range s.n {
		h[s.keys[i]] = []string{s.values[i]}
	}
}

// inOurShape reports whether an upstream answer of media type contentType is in the
// gateway's shape for the endpoint, as the app service answers: a problem document on
// either endpoint, or the problem page (HTML) on /payload, whose reader is a person.
func inOurShape(endpoint, contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/problem+json" || (endpoint == endpointPayload && mt == "text/html")
}

// Interface guards
var (
	_ http.ResponseWriter = (*upstreamWriter)(nil)
	_ http.Flusher        = (*upstreamWriter)(nil)
	_ io.ReaderFrom       = (*upstreamWriter)(nil)
)
