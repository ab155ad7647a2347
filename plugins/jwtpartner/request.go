package jwtpartner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/google/uuid"

	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/plugins/nonce"
	"github.com/partnergate/partnergate/problem"
)

// drainTimeout bounds how long net/http may spend reading an unread request body after a
// rejection, before it answers.
const drainTimeout = time.Second

// leaveBody prepares the answer to a rejected HTTP/1 request whose body is still on the
// wire. Before writing an answer, net/http reads up to 256 KiB of an unread body so that a
// client that writes its whole request before reading gets the answer, and closes the
// connection gently (a lingering close) when more remains. It does that through Caddy's
// body wrappers too, but with no deadline once the read timeout is lifted: a client that
// declares a huge body and sends none would hold the answer and the connection. So the read
// gets drainTimeout; and where nothing useful can come (a client waiting for 100 Continue,
// which must not be sent, or a body that already failed), the connection is closed at once.
func leaveBody(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, rej *rejection) {
	if rej.code == problem.CodeBodyUnreadable || strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		w.Header().Set("Connection", "close")
		return
	}
	if err := rc.SetReadDeadline(time.Now().Add(drainTimeout)); err != nil {
		w.Header().Set("Connection", "close")
	}
}

// request is what one request has learned so far, for the log line, the metrics and the
// rejection.
type request struct {
	start     time.Time
	requestID string
	partner   string        // set once the name is known to be configured
	ps        *partnerState // the partner's, with partner
	endpoint  string        // "url" or "payload" once the path is known to be one of them
	token     *linktoken.Token
	alg, kid  string
	bodyRead  bool         // the whole body was read (so the connection can be kept)
	forwarded bool         // the request passed and goes to the next handler
	errorCode problem.Code // the rejection's code
	header    http.Header  // the request's: the refusal page's language is its Accept-Language

	// After the next handler: the outcome when not accepted nor a rejection (upstream.go),
	// the upstream's status, the class of its failure and the error, for the log line.
	outcome        string
	forwardedAt    time.Time // when the next handler was called
	upstreamStatus int
	upstreamClass  string
	upstreamErr    error
	upstream       upstreamWriter // the next handler's writer, allocated with the request
}

// outcomeLabel is the outcome of a request that was not rejected.
func (rq *request) outcomeLabel() string {
	if rq.outcome == "" {
		return outcomeAccepted
	}
	return rq.outcome
}

func (rq *request) partnerLabel() string {
	if rq.partner == "" {
		return "unknown"
	}
	return rq.partner
}

func (rq *request) endpointLabel() string {
	if rq.endpoint == "" {
		return "unknown"
	}
	return rq.endpoint
}

// Endpoints.
const (
	endpointURL     = "url"
	endpointPayload = "payload"
)

// handle runs every check in order, cheapest first, and claims the nonce last.
func (h *Handler) handle(r *http.Request, rq *request) *rejection {
	name, endpoint, ok := splitPartnerPath(r.URL.EscapedPath())
	if !ok {
		return reject(problem.CodeNotFound, "no partner link endpoint at this path")
	}
	// The endpoint is known before the partner, so that a person whose form posted to a
	// wrong partner name still gets a page rather than JSON.
	knownEndpoint := endpoint == endpointURL || endpoint == endpointPayload
	if knownEndpoint {
		rq.endpoint = endpoint
	}
	ps, ok := h.partners[name]
	if !ok {
		return reject(problem.CodePartnerUnknown, "no partner of that name is configured")
	}
	rq.partner, rq.ps = name, ps
	if !knownEndpoint {
		return reject(problem.CodeNotFound, "the partner endpoints are /url and /payload")
	}

	if r.Method != http.MethodPost {
		return reject(problem.CodeMethodNotAllowed, "partner links are sent with POST")
	}
	// Before the body is read: a form from another site's page is refused whatever its
	// token, which stays unspent (origins.go).
	if endpoint == endpointPayload {
		if rej := ps.origins.checkOrigin(r); rej != nil {
			return rej
		}
	}

	var body *bytes.Buffer
	defer func() { releaseBody(body) }()
	token, rej := h.readToken(r, endpoint, &rq.bodyRead, &body)
	if rej != nil {
		return rej
	}

	vstart := time.Now()
	tok, err := ps.verifier.Verify(r.Context(), token, ps.keys)
	h.metrics.verifyDurationOf(&ps.series, name, time.Since(vstart))
	if err != nil {
		if linktoken.CodeOf(err) == problem.CodeKeyUnknown {
			h.noteUnknownKid(ps)
		}
		return rejectToken(err)
	}
	rq.token, rq.alg, rq.kid = tok, tok.Alg, tok.KeyID

	// The nonce is claimed last (docs/architecture.md, step 4): a token refused for any other
	// reason must not use up its nonce, or a partner's retry of a fixed token would be a
	// replay. The partner's own leeway: the verifier accepted the token from nbf - leeway
	// until exp + leeway, and the store needs both ends (the clean-start guard the first).
	leeway := ps.verifier.Leeway()
	nstart := time.Now()
	fresh, err := h.store.Claim(r.Context(), nonce.Entry{
		Partner:        name,
		Nonce:          tok.Nonce,
		AcceptableFrom: tok.NotBefore.Add(-leeway),
		Until:          tok.Expiry.Add(leeway),
	})
	h.metrics.nonceDuration(time.Since(nstart), err)
	switch {
	case errors.Is(err, nonce.ErrFull):
		return &rejection{code: problem.CodeNonceStoreFull, detail: "the gateway cannot record more links right now; try again shortly", err: err}
	case errors.Is(err, nonce.ErrTooOld):
		return &rejection{code: problem.CodeTokenBeforeStoreStart, detail: "the replay store lost its memory after this token became valid, so its use cannot be checked; send a freshly signed token", err: err}
	case err != nil:
		return &rejection{code: problem.CodeNonceStoreUnavailable, detail: "the replay store is unavailable; try again shortly", err: err}
	case !fresh:
		return reject(problem.CodeTokenReplayed, replayedDetail)
	}
	return nil
}

// replayedDetail answers a nonce claimed before. It is the nonce that was used, whatever
// else the token carries, so the fix is a new nonce: one random value per link.
const replayedDetail = "a token with this nonce was used before: sign a new token for every link, " +
	"each with a new random nonce (crypto.randomUUID() in Node.js, secrets.token_urlsafe(32) in Python); never send a token twice"

// splitPartnerPath splits the escaped path "/partner/{name}/{endpoint}". It works on the
// escaped form because an encoded slash is data, not a delimiter (RFC 3986 §2.2): the
// upstream routes on the escaped path, where "/partner%2Facme%2Furl" is one segment, so the
// gateway must not read three. Each segment is unescaped on its own (so "%61cme" is
// "acme"), and a segment that unescapes to something holding a slash is no name.
func splitPartnerPath(escaped string) (name, endpoint string, ok bool) {
	rest, ok := strings.CutPrefix(escaped, "/partner/")
	if !ok {
		return "", "", false
	}
	rawName, rawEndpoint, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(rawEndpoint, "/") {
		return "", "", false
	}
	name, err1 := url.PathUnescape(rawName)
	endpoint, err2 := url.PathUnescape(rawEndpoint)
	if err1 != nil || err2 != nil || name == "" || strings.Contains(name, "/") || strings.Contains(endpoint, "/") {
		return "", "", false
	}
	return name, endpoint, true
}

// readToken reads the token from the body of an /url or /payload request, with the media
// type, size and count rules of the endpoint. It sets *bodyRead once the body has been read
// to its end. The token it returns lives in *held, a pooled buffer the caller hands back
// with releaseBody once it is done with the token.
func (h *Handler) readToken(r *http.Request, endpoint string, bodyRead *bool, held **bytes.Buffer) ([]byte, *rejection) {
	want := "text/plain"
	if endpoint == endpointPayload {
		want = "application/x-www-form-urlencoded"
	}
	// The media type exactly as wanted, without parameters, is what partners send: it
	// needs no parse (and no parameter map on every request).
	if ct := r.Header.Get("Content-Type"); ct != want {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || mt != want || !onlyCharset(params) {
			return nil, reject(problem.CodeUnsupportedMediaType, mediaTypeDetail(endpoint, mt))
		}
	}
	// A token in the URL ends up in access logs, browser history and Referer headers: it
	// is refused on both endpoints, so a partner finds the mistake on its first try.
	if tokenInQuery(r.URL.RawQuery) {
		return nil, reject(problem.CodeTokenInQuery, "the token belongs in the request body, never in the URL")
	}

	if r.ContentLength > h.MaxBodySize {
		// Declared too large: refuse without reading a byte of it.
		return nil, reject(problem.CodeBodyTooLarge, fmt.Sprintf("the body is larger than %d bytes", h.MaxBodySize))
	}
	buf := bodyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	*held = buf
	// One byte over the limit tells a body that is too large from one that just fits.
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, h.MaxBodySize+1)); err != nil {
		return nil, &rejection{code: problem.CodeBodyUnreadable, detail: "the request body could not be read", err: err}
	}
	if int64(buf.Len()) > h.MaxBodySize {
		return nil, reject(problem.CodeBodyTooLarge, fmt.Sprintf("the body is larger than %d bytes", h.MaxBodySize))
	}
	*bodyRead = true
	body := buf.Bytes()

	if endpoint != endpointPayload { // /url, and a dry run's /check
		tok := bytes.TrimSpace(body)
		if len(tok) == 0 {
			return nil, reject(problem.CodeTokenMissing, "the body must be the token")
		}
		return tok, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, reject(problem.CodeTokenMalformed, "the form body is not valid application/x-www-form-urlencoded")
	}
	vals := form["payload"]
	switch {
	case len(vals) > 1:
		return nil, reject(problem.CodeTokenDuplicated, "the form carries more than one payload field")
	case len(vals) == 0 || strings.TrimSpace(vals[0]) == "":
		return nil, reject(problem.CodeTokenMissing, "the form must carry one payload field holding the token")
	}
	return []byte(strings.TrimSpace(vals[0])), nil
}

// mediaTypeDetail says what the endpoint takes, and where a body of the media type mt
// belongs instead when it fits the other endpoint or is JSON.
func mediaTypeDetail(endpoint, mt string) string {
	if endpoint != endpointPayload { // url, and the dry run's check, which reads the same body
		d := "the " + endpoint + " endpoint takes Content-Type text/plain, the body being the compact token: three base64url parts separated by dots"
		switch mt {
		case "application/x-www-form-urlencoded":
			d += "; a form with the field payload goes to the payload endpoint"
		case "application/json":
			d += "; not JSON: send the token itself, not an object holding it"
		}
		return d
	}
	d := "the payload endpoint takes Content-Type application/x-www-form-urlencoded, one form field payload holding the token"
	switch mt {
	case "text/plain":
		d += "; a body that is the token itself goes to the url endpoint"
	case "application/json":
		d += "; not JSON: a page posts it with an HTML form"
	}
	return d
}

// tokenInQuery reports whether the raw query has a parameter named payload or token, in
// any case and percent-encoded or not. It reads the query itself rather than through
// url.ParseQuery, which silently drops every pair that holds a ';' (so "?a;payload=…" would
// pass) and compares names exactly (so "?PAYLOAD=…" would): many other stacks split on ';'
// or fold case, and a token in the URL is in the access log whichever way it is read.
func tokenInQuery(rawQuery string) bool {
	for rawQuery != "" {
		var pair string
		if i := strings.IndexAny(rawQuery, "&;"); i >= 0 {
			pair, rawQuery = rawQuery[:i], rawQuery[i+1:]
		} else {
			pair, rawQuery = rawQuery, ""
		}
		name, _, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		name = strings.TrimSpace(name)
		if strings.EqualFold(name, "payload") || strings.EqualFold(name, "token") {
			return true
		}
	}
	return false
}

// bodyBuffers hold request bodies while their token is verified: nothing of the body
// outlives the request (the verified token's values are copies), and a body is read on
// every request.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// releaseBody returns a body buffer to the pool; buffers grown by an oversized body are
// left to the garbage collector.
func releaseBody(b *bytes.Buffer) {
	if b != nil && b.Cap() <= 64<<10 {
		bodyBuffers.Put(b)
	}
}

// onlyCharset reports whether params has no parameter other than charset; the token is
// ASCII, so any ASCII-compatible charset reads the same.
func onlyCharset(params map[string]string) bool {
	for k := range params {
		if k != "charset" {
			return false
		}
	}
	return true
}

// requestID returns Caddy's request UUID ({http.request.uuid}, which the access log can
// carry too), or a new UUID where the server did not set up its placeholders.
func requestID(repl *caddy.Replacer) string {
	if v, ok := repl.GetString("http.request.uuid"); ok && v != "" {
		return v
	}
	return uuid.NewString()
}
