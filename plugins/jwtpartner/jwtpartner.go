// Package jwtpartner is the Caddy HTTP handler http.handlers.jwt_partner: it verifies partner
// link tokens posted to /partner/{name}/url and /partner/{name}/payload, claims their nonce,
// and hands the request to the next handler (normally reverse_proxy) with the verified
// identity in X-Partner-* headers and the token removed.
package jwtpartner

import (
	"bytes"
	"encoding/json"
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
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/google/uuid"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/plugins/nonce"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Defaults of the handler's configuration.
const (
	// DefaultMaxBodySize is the largest request body read, in bytes, and the most
	// max_body_size may be: the longest token the verifier reads (linktoken.MaxTokenLength),
	// so that no body is read only for its token to be refused. A token with every payload
	// field at its length bound stays far below it.
	DefaultMaxBodySize = linktoken.MaxTokenLength

	// DefaultReadTimeout is the default ReadTimeout.
	DefaultReadTimeout = 10 * time.Second
	// retryAfterSeconds is what a 503 tells the client to wait: long enough for a key URL
	// or a nonce store to come back from a blip, short enough for a person at a browser.
	retryAfterSeconds = "5"
)

// Error modes.
const (
	// ErrorsRespond makes the handler write its own rejection: problem+json on /url, an
	// HTML page on /payload.
	ErrorsRespond = "respond"
	// ErrorsHandle makes the handler return a caddyhttp.Error so that the site's
	// handle_errors routes answer; the code is in {http.jwt_partner.error_code}.
	ErrorsHandle = "handle_errors"
)

// Handler verifies partner link tokens and forwards the verified identity.
//
// It serves POST /partner/{name}/url (Content-Type text/plain, the body is the compact token)
// and POST /partner/{name}/payload (application/x-www-form-urlencoded, exactly one field
// payload holding the token). A token that passes every rule of its partner and whose nonce is
// fresh goes to the next handler as a POST to the same path with an empty body and no
// Content-Type: the token itself is never forwarded. Every incoming header whose name starts
// with HeaderPrefix is deleted first; then the headers of the upstream contract in linkspec
// are set (see headers.go). A rejected request never reaches the next handler.
//
// Placeholders set on success (values raw, not percent-encoded):
//
//	{http.jwt_partner.partner}     the partner's name from the path
//	{http.jwt_partner.endpoint}    url or payload
//	{http.jwt_partner.kind}        main or go
//	{http.jwt_partner.issuer}      the verified iss claim
//	{http.jwt_partner.kid}         the kid of the verifying key
//	{http.jwt_partner.alg}         the token's alg (RS256, PS256 or ES256)
//	{http.jwt_partner.request_id}  the request id (also in error responses and the log line)
//	{http.jwt_partner.claims}      the verified claim set, base64url JSON as signed (less
//	                               any optional field dropped as malformed)
//	{http.jwt_partner.<field>}     one per non-empty payload field, by its JSON path:
//	                               employeeId, employeeUsername, employeeFirstname,
//	                               employeeLastname, employeeEmail, organizationName,
//	                               organizationId, contact.id, contact.birthdate,
//	                               contact.ssn, contact.gender, contact.firstname,
//	                               contact.middlename, contact.lastname, contact.mobile,
//	                               contact.email, contact.diagnosis, caseId
//
// Placeholders set on rejection:
//
//	{http.jwt_partner.error_code}  the rejection's stable code (token_expired, …)
//	{http.jwt_partner.partner}, {http.jwt_partner.endpoint}, {http.jwt_partner.request_id}
//	                               when known
//
// Payload placeholders carry personal data (contact.ssn is a national identity number): an
// operator who puts them in a log format or a response takes that on.
type Handler struct {
	// Partners maps a partner's name, the {name} path segment, to its rules and keys.
	// Names are 1..64 characters of a-z, 0-9, '-' and '_'. Required.
	Partners map[string]*Partner `json:"partners,omitempty"`

	// Leeway is the clock skew allowed around nbf and exp for every partner that does not
	// set its own. Default 30s; a negative value (the Caddyfile's "leeway 0" writes -1)
	// means none, since zero means the default. At most 5m. It never widens max_lifetime.
	Leeway caddy.Duration `json:"leeway,omitempty"`

	// MaxLifetime is the longest exp - nbf accepted for every partner that does not set its
	// own. Default 5m, the interface's limit; it cannot be raised above 5m.
	MaxLifetime caddy.Duration `json:"max_lifetime,omitempty"`

	// MaxBodySize is the largest request body accepted, in bytes; a larger one is answered
	// 413. Default and maximum 16384 (16 KiB), the longest token the verifier reads: it can
	// be lowered, not raised.
	MaxBodySize int64 `json:"max_body_size,omitempty"`

	// ReadTimeout bounds the time from the start of the request to the last byte of its
	// body. A token is a few KiB, so a client that needs longer is holding a connection
	// open on purpose (slowloris); it is answered 400 body_unreadable. Caddy's own
	// read_body timeout, where set, still applies. Default 10s; a negative value disables it.
	ReadTimeout caddy.Duration `json:"read_timeout,omitempty"`

	// HeaderPrefix is the namespace of the forwarded headers. Every incoming header whose
	// name starts with it (case-insensitive, '_' read as '-') is deleted before the
	// verified values are set. Default "X-Partner-".
	HeaderPrefix string `json:"header_prefix,omitempty"`

	// NonceStoreRaw is the nonce store, a module in the http.jwt_partner.nonce_stores
	// namespace named by its "store" key. Default {"store": "memory"}.
	NonceStoreRaw json.RawMessage `json:"nonce_store,omitempty" caddy:"namespace=http.jwt_partner.nonce_stores inline_key=store"`

	// UpstreamSecret, when set, makes the handler add the <prefix>Assertion header
	// (linkspec.SignAssertion), an HMAC over the forwarded values with this secret shared
	// with the app service, which proves the headers came from the gateway. Placeholders
	// such as {env.PARTNERGATE_UPSTREAM_SECRET} are expanded at provisioning; the expanded
	// value must be at least 32 bytes. Default unset (no assertion).
	UpstreamSecret string `json:"upstream_secret,omitempty"`

	// Errors selects how rejections are answered: "respond" (default) writes
	// application/problem+json on /url and an HTML page on /payload; "handle_errors" returns
	// an error to the site's handle_errors routes with the code in
	// {http.jwt_partner.error_code}.
	Errors string `json:"errors,omitempty"`

	partners map[string]*partnerState
	store    nonce.Store
	secret   []byte
	prefix   string
	names    headerNames
	logger   *zap.Logger
	metrics  *metrics
	now      func() time.Time
}

// Partner is one partner's rules and key set.
type Partner struct {
	// Issuer is the exact iss claim the partner's tokens carry. Required.
	Issuer string `json:"issuer,omitempty"`

	// Audience is the value the aud claim (a string or an array) must contain. Required.
	Audience string `json:"audience,omitempty"`

	// Algorithms lists the accepted alg values, a subset of RS256, PS256 and ES256.
	// Symmetric algorithms and "none" are refused at provisioning. Default all three.
	Algorithms []string `json:"algorithms,omitempty"`

	// JWKSFile is the path of the partner's jwks.json, read and checked at provisioning.
	// Exactly one of jwks_file and jwks_url is required.
	JWKSFile string `json:"jwks_file,omitempty"`

	// JWKSURL is where the partner publishes its jwks.json: HTTPS, or http on a loopback
	// address. It is fetched in the background from start (Caddy starts while it is
	// down; requests are answered 503 keys_unavailable until a set has loaded), refreshed
	// as its Cache-Control allows within refresh_min..refresh_max, and refetched on an
	// unknown kid at most once per refresh_cooldown.
	JWKSURL string `json:"jwks_url,omitempty"`

	// RefreshMin is the shortest time between two scheduled fetches of jwks_url, whatever
	// its Cache-Control max-age or Expires asks for. Default 1m.
	RefreshMin caddy.Duration `json:"refresh_min,omitempty"`

	// RefreshMax is the longest time a fetched key set is used before it is refetched; a
	// response without Cache-Control or Expires is refetched after it. Default 1h.
	RefreshMax caddy.Duration `json:"refresh_max,omitempty"`

	// RefreshCooldown is the shortest time between two fetches caused by an unknown kid,
	// so that a flood of made-up kids costs one fetch. Default 30s.
	RefreshCooldown caddy.Duration `json:"refresh_cooldown,omitempty"`

	// MaxStale bounds how long the last good key set is used after the last successful
	// fetch while jwks_url fails; after it, requests are answered 503 keys_unavailable.
	// Default 24h.
	MaxStale caddy.Duration `json:"max_stale,omitempty"`

	// Kinds limits the link kinds accepted: "main", "go" or both. Default both.
	Kinds []string `json:"kinds,omitempty"`

	// MaxLifetime overrides the handler's max_lifetime for this partner. At most 5m.
	MaxLifetime caddy.Duration `json:"max_lifetime,omitempty"`

	// Leeway overrides the handler's leeway for this partner; a negative value means none.
	Leeway caddy.Duration `json:"leeway,omitempty"`

	// NonceMinLength is the shortest nonce accepted, in bytes. Default 16.
	NonceMinLength int `json:"nonce_min_length,omitempty"`

	// NonceMaxLength is the longest nonce accepted, in bytes. Default 256.
	NonceMaxLength int `json:"nonce_max_length,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.jwt_partner",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision sets defaults, expands the upstream secret, loads the nonce store and starts a
// key source per partner with ctx. The handler needs no Cleanup: the URL fetchers stop when
// ctx is cancelled (on unload, and after a failed Provision), and the nonce store is a guest
// module that Caddy cleans up itself.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.now == nil {
		h.now = time.Now
	}
	if h.MaxBodySize == 0 {
		h.MaxBodySize = DefaultMaxBodySize
	}
	if h.ReadTimeout == 0 {
		h.ReadTimeout = caddy.Duration(DefaultReadTimeout)
	}
	h.prefix = h.HeaderPrefix
	if h.prefix == "" {
		h.prefix = linkspec.DefaultHeaderPrefix
	}
	h.names = newHeaderNames(h.prefix)
	if h.Errors == "" {
		h.Errors = ErrorsRespond
	}
	if h.UpstreamSecret != "" {
		h.secret = []byte(caddy.NewReplacer().ReplaceKnown(h.UpstreamSecret, ""))
	}

	h.metrics = newMetrics(ctx.GetMetricsRegistry())
	h.warnIfProxyLogsHeaders(ctx)

	if h.store == nil {
		if h.NonceStoreRaw == nil {
			h.NonceStoreRaw = json.RawMessage(`{"store":"memory"}`)
		}
		mod, err := ctx.LoadModule(h, "NonceStoreRaw")
		if err != nil {
			return fmt.Errorf("loading nonce store: %v", err)
		}
		store, ok := mod.(nonce.Store)
		if !ok {
			return fmt.Errorf("nonce store module %T is not a nonce.Store", mod)
		}
		h.store = store
	}

	// The handler's defaults meet the partner options' rules here, before a verifier
	// refuses them in its own words.
	if err := checkMaxLifetime(h.MaxLifetime); err != nil {
		return fmt.Errorf("max_lifetime %s: %v", time.Duration(h.MaxLifetime), err)
	}
	if err := checkLeeway(h.Leeway); err != nil {
		return fmt.Errorf("leeway %s: %v", time.Duration(h.Leeway), err)
	}
	for name, p := range h.Partners {
		if p == nil {
			return fmt.Errorf("partner %s: no configuration", name)
		}
		if other := sharedIssuerAudience(h.Partners, name, p); other != "" && other < name {
			return errors.New(sharedIssuerAudienceError(other, name, p))
		}
	}
	h.partners = make(map[string]*partnerState, len(h.Partners))
	for name, p := range h.Partners {
		ps, err := h.provisionPartner(ctx, name, p)
		if err != nil {
			return fmt.Errorf("partner %s: %v", name, err)
		}
		h.partners[name] = ps
	}
	return nil
}

// maxBodySizeLimit says why max_body_size cannot be raised.
var maxBodySizeLimit = fmt.Sprintf("at most %d bytes (16 KiB), the longest token the verifier reads; a larger body could only carry a token that is refused", linktoken.MaxTokenLength)

// reverseProxyModule is the module whose debug line "upstream roundtrip" logs every header
// of the request it sends upstream: after this handler, the verified identity.
const reverseProxyModule = "http.handlers.reverse_proxy"

// warnIfProxyLogsHeaders warns, once per configuration load, when the logging
// configuration lets reverse_proxy write debug lines: they carry the X-Partner-* headers,
// personal data included, and this handler cannot redact another module's log. It asks the
// logger reverse_proxy itself gets (ctx.Logger for that module: the same logs, include and
// exclude filters and levels) whether a debug entry would be written; the probe's message
// is its own, so that no sampling counter of a real message is touched.
func (h *Handler) warnIfProxyLogsHeaders(ctx caddy.Context) {
	info, err := caddy.GetModule(reverseProxyModule)
	if err != nil {
		return // not in this build, so not logging
	}
	if ctx.Logger(info.New()).Check(zapcore.DebugLevel, "jwt_partner debug probe") == nil {
		return
	}
	h.logger.Warn("reverse_proxy logs at debug level: its upstream roundtrip lines carry every forwarded header, the verified identity and personal data included; log reverse_proxy at info or above",
		zap.String("module", reverseProxyModule),
		zap.String("header_prefix", h.prefix))
}

// Validate checks the configuration after Provision.
func (h *Handler) Validate() error {
	if len(h.Partners) == 0 {
		return errors.New("no partners configured")
	}
	for name := range h.Partners {
		if err := checkPartnerName(name); err != nil {
			return err
		}
	}
	if h.MaxBodySize < 0 {
		return fmt.Errorf("max_body_size %d: must be positive", h.MaxBodySize)
	}
	if h.MaxBodySize > linktoken.MaxTokenLength {
		return fmt.Errorf("max_body_size %d: %s", h.MaxBodySize, maxBodySizeLimit)
	}
	if h.Errors != ErrorsRespond && h.Errors != ErrorsHandle {
		return fmt.Errorf("errors %q: want %q or %q", h.Errors, ErrorsRespond, ErrorsHandle)
	}
	if !validHeaderPrefix(h.prefix) {
		return fmt.Errorf("header_prefix %q: want a header name prefix of letters, digits and '-', such as X-Partner-", h.prefix)
	}
	if h.UpstreamSecret != "" && len(h.secret) < 32 {
		return errors.New("upstream_secret: shorter than 32 bytes after expansion (is the environment variable set?)")
	}
	return nil
}

// ServeHTTP verifies the link token of a partner request and passes the request on, or
// rejects it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// The duration in the log line is wall time, not the verification clock.
	start := time.Now()
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	rq := &request{start: start, requestID: requestID(repl)}
	repl.Map(rq.placeholder)

	// Caddy sets no read_body timeout by default, and max_body_size bounds bytes, not
	// time: without a deadline a body sent one byte a minute holds the connection for
	// days. The deadline is lifted once the token is read, so a slow upstream is not cut
	// off by it. Protocols without per-request deadlines (HTTP/2, HTTP/3) answer an error
	// here and keep Caddy's own timeouts.
	rc := http.NewResponseController(w)
	deadline := h.ReadTimeout > 0 && rc.SetReadDeadline(time.Now().Add(time.Duration(h.ReadTimeout))) == nil
	rej := h.handle(r, rq)
	if deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if rej != nil {
		if !rq.bodyRead && r.ContentLength != 0 && r.ProtoMajor == 1 {
			leaveBody(w, r, rc, rej)
		}
		return h.writeRejection(w, rq, rej)
	}
	h.forward(r, rq)
	h.logOutcome(rq, nil)
	h.metrics.request(rq.partnerLabel(), rq.endpointLabel(), outcomeAccepted)
	return next.ServeHTTP(w, r)
}

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
	if rej.code == CodeBodyUnreadable || strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
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
	partner   string // set once the name is known to be configured
	endpoint  string // "url" or "payload" once the path is known to be one of them
	token     *linktoken.Token
	alg, kid  string
	bodyRead  bool // the whole body was read (so the connection can be kept)
	forwarded bool // the request passed and goes to the next handler
	errorCode Code // the rejection's code
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
		return reject(CodeNotFound, "no partner link endpoint at this path")
	}
	// The endpoint is known before the partner, so that a person whose form posted to a
	// wrong partner name still gets a page rather than JSON.
	knownEndpoint := endpoint == endpointURL || endpoint == endpointPayload
	if knownEndpoint {
		rq.endpoint = endpoint
	}
	ps, ok := h.partners[name]
	if !ok {
		return reject(CodePartnerUnknown, "no partner of that name is configured")
	}
	rq.partner = name
	if !knownEndpoint {
		return reject(CodeNotFound, "the partner endpoints are /url and /payload")
	}

	if r.Method != http.MethodPost {
		return reject(CodeMethodNotAllowed, "partner links are sent with POST")
	}

	var body *bytes.Buffer
	defer func() { releaseBody(body) }()
	token, rej := h.readToken(r, endpoint, &rq.bodyRead, &body)
	if rej != nil {
		return rej
	}

	vstart := time.Now()
	tok, err := ps.verifier.Verify(r.Context(), token, ps.keys)
	h.metrics.verifyDuration(name, time.Since(vstart))
	if err != nil {
		return rejectToken(err)
	}
	rq.token, rq.alg, rq.kid = tok, tok.Alg, tok.KeyID

	// The nonce is claimed last (docs/architecture.md, step 4): a token refused for any other
	// reason must not use up its nonce, or a partner's retry of a fixed token would be a
	// replay. The partner's own leeway: the verifier accepted the token from nbf - leeway
	// until exp + leeway, and the store needs both ends (the clean-start guard the first).
	leeway := ps.verifier.Rules().Leeway
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
		return &rejection{code: CodeNonceStoreFull, detail: "the gateway cannot record more links right now; try again shortly", err: err}
	case errors.Is(err, nonce.ErrTooOld):
		return &rejection{code: CodeTokenBeforeStoreStart, detail: "the replay store lost its memory after this token became valid, so its use cannot be checked; send a freshly signed token", err: err}
	case err != nil:
		return &rejection{code: CodeNonceStoreUnavailable, detail: "the replay store is unavailable; try again shortly", err: err}
	case !fresh:
		return reject(CodeTokenReplayed, "this token was used before; every link needs a new token with a new nonce")
	}
	return nil
}

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
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	want := "text/plain"
	if endpoint == endpointPayload {
		want = "application/x-www-form-urlencoded"
	}
	if err != nil || mt != want || !onlyCharset(params) {
		return nil, reject(CodeUnsupportedMediaType, "the "+endpoint+" endpoint takes Content-Type "+want)
	}
	// A token in the URL ends up in access logs, browser history and Referer headers: it
	// is refused on both endpoints, so a partner finds the mistake on its first try.
	if tokenInQuery(r.URL.RawQuery) {
		return nil, reject(CodeTokenInQuery, "the token belongs in the request body, never in the URL")
	}

	if r.ContentLength > h.MaxBodySize {
		// Declared too large: refuse without reading a byte of it.
		return nil, reject(CodeBodyTooLarge, fmt.Sprintf("the body is larger than %d bytes", h.MaxBodySize))
	}
	buf := bodyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	*held = buf
	// One byte over the limit tells a body that is too large from one that just fits.
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, h.MaxBodySize+1)); err != nil {
		return nil, &rejection{code: CodeBodyUnreadable, detail: "the request body could not be read", err: err}
	}
	if int64(buf.Len()) > h.MaxBodySize {
		return nil, reject(CodeBodyTooLarge, fmt.Sprintf("the body is larger than %d bytes", h.MaxBodySize))
	}
	*bodyRead = true
	body := buf.Bytes()

	if endpoint == endpointURL {
		tok := bytes.TrimSpace(body)
		if len(tok) == 0 {
			return nil, reject(CodeTokenMissing, "the body must be the token")
		}
		return tok, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, reject(linktoken.CodeTokenMalformed, "the form body is not valid application/x-www-form-urlencoded")
	}
	vals := form["payload"]
	switch {
	case len(vals) > 1:
		return nil, reject(CodeTokenDuplicated, "the form carries more than one payload field")
	case len(vals) == 0 || strings.TrimSpace(vals[0]) == "":
		return nil, reject(CodeTokenMissing, "the form must carry one payload field holding the token")
	}
	return []byte(strings.TrimSpace(vals[0])), nil
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

// logOutcome writes the request's one log line: debug for accepted links and a client's
// bad token, info for a replay or a token the replay store cannot vouch for (security
// signals), error for a broken dependency. It never carries the token, the nonce or a
// payload value.
func (h *Handler) logOutcome(rq *request, rej *rejection) {
	lvl, outcome := zapcore.DebugLevel, outcomeAccepted
	if rej != nil {
		outcome = string(rej.code)
		switch {
		case dependency(rej.code):
			lvl = zapcore.ErrorLevel
		case rej.code == CodeTokenReplayed, rej.code == CodeTokenBeforeStoreStart:
			lvl = zapcore.InfoLevel
		}
	}
	c := h.logger.Check(lvl, "partner link")
	if c == nil {
		return
	}
	fields := []zap.Field{
		zap.String("partner", rq.partner),
		zap.String("endpoint", rq.endpoint),
		zap.String("outcome", outcome),
		zap.String("alg", rq.alg),
		zap.String("kid", rq.kid),
		zap.Duration("duration", time.Since(rq.start)),
		zap.String("request_id", rq.requestID),
	}
	if rq.token != nil {
		// The link kind, main or go: an outcome of the payload's shape, not a value from it.
		fields = append(fields, zap.String("kind", string(rq.token.Kind)))
	}
	if rej != nil && rej.err != nil {
		// Errors from linktoken and the stores never carry a value (their contract).
		fields = append(fields, zap.Error(rej.err))
	}
	c.Write(fields...)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
