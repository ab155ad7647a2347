// Package jwtpartner is the Caddy HTTP handler http.handlers.jwt_partner: it verifies partner
// link tokens posted to /partner/{name}/url and /partner/{name}/payload, claims their nonce,
// and hands the request to the next handler (normally reverse_proxy) with the verified
// identity in X-Partner-* headers and the token removed.
package jwtpartner

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
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
	// upstream_unavailable's 502 says the same for an app service restart.
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
// are set (see headers.go): the fixed ones and the claims always, a payload field's own
// header only when FieldHeaders names the field. A rejected request never reaches the next
// handler. When the next handler fails (an error, or a 5xx not in the gateway's shape), the
// handler answers upstream_unavailable itself; a 5xx in its shape passes through
// (upstream.go). For a partner with DryRun it also answers POST /partner/{name}/check itself
// (dryrun.go), never calling the next handler.
//
// Placeholders set on success (values raw, not percent-encoded):
//
//	{http.jwt_partner.partner}     the partner's name from the path
//	{http.jwt_partner.endpoint}    url or payload (check for a dry run's rejection)
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
//	                               contact.email, contact.diagnosis, caseId; set
//	                               whatever FieldHeaders says (a placeholder costs
//	                               nothing until it is used), so that header_up can
//	                               forward a field that FieldHeaders does not (raw, not
//	                               percent-encoded)
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

	// FieldHeaders lists the payload fields that are also forwarded as headers of their
	// own, <prefix><Field> (X-Partner-Contact-Id, …), by JSON path as in linkspec.Fields:
	// employeeId, contact.id, contact.ssn, caseId, …; or it is ["all"], every field. The
	// claims header carries every field anyway, bound by the assertion, and each header
	// more costs every request again in reverse_proxy; a plain header also puts personal
	// data (contact.ssn is a national identity number) where an upstream's access log may
	// record it. So the default is none: an upstream that wants a field as a header names
	// it here, or sets it with reverse_proxy's header_up from its placeholder. A path that
	// is not a payload field, or all next to paths, fails the configuration.
	FieldHeaders []string `json:"field_headers,omitempty"`

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
	// afterFunc runs f after d and returns what stops it: time.AfterFunc's, replaced in
	// tests as now is.
	afterFunc func(d time.Duration, f func()) (stop func() bool)

	// fieldHeaders says, per linkspec.Fields index, whether the field is forwarded as a
	// header of its own (FieldHeaders resolved).
	fieldHeaders [len(linkspec.Fields)]bool

	// cacheKeys are this configuration's references in keyCaches, released by Cleanup.
	cacheKeys []string

	// secretVars names the environment variables UpstreamSecret reads, for Validate's
	// message when one is missing.
	secretVars []string
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

	// JWKSCAFile is a PEM file of the certificate authorities trusted for jwks_url's
	// HTTPS connections, redirects included, for a partner whose key server uses a private
	// CA. It replaces the system's pool for this partner (it is not added to it): no other
	// CA can vouch for the partner's key server. Read at provisioning: a file that cannot
	// be read or holds no certificate fails the configuration. Only with jwks_url. Default
	// unset: the system's pool.
	JWKSCAFile string `json:"jwks_ca_file,omitempty"`

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

	// Origins lists the origins of the partner's pages whose forms post to
	// /partner/{name}/payload, each as a browser sends it in the Origin header:
	// scheme://host, with :port only when it is not the scheme's default, in lower case
	// (https://ehr.acme.example). A form whose Origin is not listed, or that has none, is
	// refused 403 origin_not_allowed before its token is read, so a page of another site
	// cannot sign a browser in with a token it took from the partner's form (login CSRF),
	// nor a program turn a lifted token into a login page, and the token stays unspent;
	// browsers send Origin on every form post, and a program has /url. "null" admits the Origin browsers send for a local file, a
	// sandboxed frame or a page whose referrer policy is no-referrer: any page can send it,
	// so listing it gives the protection up for such pages. The list is also the
	// frame-ancestors of the gateway's refusal page on /payload. /url is not checked.
	// Default unset: a form from any page is accepted, and no page may frame the refusal
	// page.
	Origins []string `json:"origins,omitempty"`

	// DryRun, when set, turns on POST /partner/{name}/check, which explains a token's
	// verification without forwarding it or claiming its nonce. For test environments
	// only (see DryRun). Default unset: /check is not_found.
	DryRun *DryRun `json:"dry_run,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.jwt_partner",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision sets defaults, expands the upstream secret, loads the nonce store and starts a
// key source per partner with ctx, and registers the handler for the readiness checks of its
// configuration (ready.go). The URL fetchers stop when ctx is cancelled (on unload, and after
// a failed Provision), and the nonce store is a guest module that Caddy cleans up itself;
// Cleanup releases the key caches that outlive the configuration.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.now == nil {
		h.now = time.Now
	}
	if h.afterFunc == nil {
		h.afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
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
	mask, err := fieldHeaderMask(h.FieldHeaders)
	if err != nil {
		return err
	}
	h.fieldHeaders = mask
	if h.Errors == "" {
		h.Errors = ErrorsRespond
	}
	if h.UpstreamSecret != "" {
		h.secret, h.secretVars = expandSecret(h.UpstreamSecret)
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
	}
	if a, b := sharedIssuerAudience(h.Partners); b != "" {
		return errors.New(sharedIssuerAudienceError(a, b, h.Partners[b]))
	}
	h.partners = make(map[string]*partnerState, len(h.Partners))
	for name, p := range h.Partners {
		ps, err := h.provisionPartner(ctx, name, p)
		if err != nil {
			return fmt.Errorf("partner %s: %v", name, err)
		}
		h.partners[name] = ps
	}
	h.registerReady(ctx)
	return nil
}

// Cleanup takes the handler out of the readiness checks (ready.go) and releases this
// configuration's references to the pooled key caches; a cache no configuration uses any
// more is dropped. It works after a partial Provision. The URL fetchers stop with ctx and
// Caddy cleans up the nonce store itself.
func (h *Handler) Cleanup() error {
	h.unregisterReady()
	h.flushUnknownKids()
	return h.releaseKeyCaches()
}

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
	if err := checkMaxBodySize(h.MaxBodySize); err != nil {
		return fmt.Errorf("max_body_size %d: %v", h.MaxBodySize, err)
	}
	if err := checkErrorsMode(h.Errors); err != nil {
		return err
	}
	if err := checkHeaderPrefix(h.prefix); err != nil {
		return err
	}
	if h.UpstreamSecret != "" {
		if err := checkUpstreamSecret(h.secret, h.secretVars); err != nil {
			return err
		}
	}
	return nil
}

// The handler's options are checked as the partner's are (partners.go): one function per
// option, called by UnmarshalCaddyfile as it reads the option, so that the error carries
// the Caddyfile's file and line, and by Validate for a JSON configuration, so that both
// meet the same rule in the same words. checkMaxBodySize returns the reason only: the
// Caddyfile names the size as written, JSON in bytes.

// wantBodySize says what max_body_size takes.
const wantBodySize = "want a size above 0 bytes, such as 8KiB or 8192"

// maxBodySizeLimit says why max_body_size cannot be raised.
var maxBodySizeLimit = fmt.Sprintf("at most %d bytes (16 KiB), the longest token the verifier reads; a larger body could only carry a token that is refused", linktoken.MaxTokenLength)

// checkMaxBodySize checks a max_body_size in bytes; zero takes the default.
func checkMaxBodySize(n int64) error {
	switch {
	case n < 0:
		return errors.New(wantBodySize)
	case n > linktoken.MaxTokenLength:
		return errors.New(maxBodySizeLimit)
	}
	return nil
}

// checkErrorsMode checks the errors option.
func checkErrorsMode(mode string) error {
	if mode != ErrorsRespond && mode != ErrorsHandle {
		return fmt.Errorf("errors %q: want %s or %s", mode, ErrorsRespond, ErrorsHandle)
	}
	return nil
}

// checkHeaderPrefix checks a header_prefix: the start of a header name, so that the
// forwarded headers are names and the namespace cleared of client headers is the one set.
func checkHeaderPrefix(prefix string) error {
	if !linkspec.ValidHeaderPrefix(prefix) {
		return fmt.Errorf("header_prefix %q: want a header name prefix of letters, digits and '-', such as X-Partner-", prefix)
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
	rq := &request{start: start, requestID: requestID(repl), header: r.Header}
	repl.Map(rq.placeholder)

	// Caddy sets no read_body timeout by default, and max_body_size bounds bytes, not
	// time: without a deadline a body sent one byte a minute holds the connection for
	// days. The deadline is lifted once the token is read, so a slow upstream is not cut
	// off by it. Protocols without per-request deadlines (HTTP/2, HTTP/3) answer an error
	// here and keep Caddy's own timeouts.
	rc := http.NewResponseController(w)
	deadline := h.ReadTimeout > 0 && rc.SetReadDeadline(time.Now().Add(time.Duration(h.ReadTimeout))) == nil
	var rej *rejection
	var report *linktoken.Report
	if ps := h.dryRunPartner(r); ps != nil {
		report, rej = h.dryRun(r, rq, ps)
	} else {
		rej = h.handle(r, rq)
	}
	if deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if rej != nil {
		if !rq.bodyRead && r.ContentLength != 0 && r.ProtoMajor == 1 {
			leaveBody(w, r, rc, rej)
		}
		return h.writeRejection(w, rq, rej)
	}
	if report != nil {
		return h.writeDryRun(w, rq, report)
	}
	h.forward(r, rq)
	return h.serveNext(w, r, rq, next)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
