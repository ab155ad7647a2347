// Package web is the app service's HTTP side: the partner link endpoints that the gateway
// forwards to (/partner/{name}/url and /payload), the one-time code exchange, and the web
// application behind it: sign-in for service accounts (or, for a first-time employee,
// creating one), and the shell of the single-page
// application (static/app) for instructors and Go members.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/linkspec"
)

// The defaults of Config.
const (
	// DefaultPublicURL is where ./run.sh's gateway listens.
	DefaultPublicURL = "http://localhost:8080"
	// DefaultFrameAncestors lets only the site itself show the application in a frame.
	DefaultFrameAncestors = "'self'"
)

// Config configures a Handler.
type Config struct {
	// Store is the database.
	Store *store.Store
	// UpstreamSecret is the secret shared with the gateway (its upstream_secret) that keys the
	// X-Partner-Assertion HMAC; at least 32 bytes.
	UpstreamSecret []byte
	// AppSecret keys the CSRF tokens and the device cookie; at least 32 bytes.
	AppSecret []byte
	// PublicURL is the address people's browsers reach the gateway at; the login URLs the
	// link endpoints answer start with it. Default DefaultPublicURL.
	PublicURL string
	// HeaderPrefix is the gateway's header_prefix, under which the forwarded headers and the
	// assertion are read; linkspec.DefaultHeaderPrefix when empty.
	HeaderPrefix string
	// FrameAncestors is the CSP frame-ancestors source list: the partner origins allowed to
	// show the application in an iframe. Default DefaultFrameAncestors.
	FrameAncestors string
	// Logger receives one line per link and per failure; never a payload value.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// SignInConcurrency bounds the password checks that run at once (each is an argon2id
	// hash of 19 MiB); DefaultSignInConcurrency when 0.
	SignInConcurrency int
	// DatabaseTimeout bounds how long a request waits on the database: its context ends
	// then, and when it has not answered by then it answers 503 unavailable with
	// Retry-After (deadline.go). DefaultDatabaseTimeout when 0; it must stay below the
	// server's write timeout, or the client is cut off before it hears why.
	DatabaseTimeout time.Duration
	// Directories are the OpenID Connect providers that organizations' staff sign in with
	// (directory.go); none by default.
	Directories []Directory
	// EIDProviders are the national electronic IDs members sign in to Go with (eid.go);
	// none by default.
	EIDProviders []EIDProvider
	// DirectoryNow is the clock the directories' ID tokens are checked against; Now when
	// nil. Tests set it to see a real token expire; no flag sets it.
	DirectoryNow func() time.Time
}

// Handler serves the app service.
type Handler struct {
	cfg    Config
	public *url.URL
	// publicOrigin is the public URL's origin as originOf spells it.
	publicOrigin string
	csrfKey      []byte
	// deviceKey keys the device cookie's HMAC (device.go).
	deviceKey []byte
	mux       *http.ServeMux
	log       *slog.Logger
	signIns   *signInGuard
	dirs      *directories
	eids      *eidProviders
	// running counts the routes serveWithDeadline started, which may outlive their request.
	running sync.WaitGroup
}

// New checks cfg and returns the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("no store")
	}
	if len(cfg.UpstreamSecret) < 32 {
		return nil, errors.New("upstream secret shorter than 32 bytes")
	}
	if len(cfg.AppSecret) < 32 {
		return nil, errors.New("app secret shorter than 32 bytes")
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = DefaultPublicURL
	}
	u, err := url.Parse(strings.TrimSuffix(cfg.PublicURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("public url must be an absolute http or https URL without query")
	}
	publicOrigin, ok := originOf(u.Scheme, u.Host)
	if !ok {
		return nil, errors.New("public url must be an absolute http or https URL without query")
	}
	if cfg.HeaderPrefix == "" {
		cfg.HeaderPrefix = linkspec.DefaultHeaderPrefix
	}
	if !linkspec.ValidHeaderPrefix(cfg.HeaderPrefix) {
		return nil, fmt.Errorf("header prefix %q: want a header name prefix of letters, digits and '-', such as %s, the gateway's header_prefix", cfg.HeaderPrefix, linkspec.DefaultHeaderPrefix)
	}
	if cfg.FrameAncestors == "" {
		cfg.FrameAncestors = DefaultFrameAncestors
	}
	if strings.ContainsAny(cfg.FrameAncestors, ";,\r\n") {
		return nil, errors.New("frame ancestors must be a CSP source list without ; or ,")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SignInConcurrency == 0 {
		cfg.SignInConcurrency = DefaultSignInConcurrency
	}
	if cfg.SignInConcurrency < 0 {
		return nil, errors.New("sign-in concurrency is negative")
	}
	if cfg.DatabaseTimeout == 0 {
		cfg.DatabaseTimeout = DefaultDatabaseTimeout
	}
	if cfg.DatabaseTimeout < 0 {
		return nil, errors.New("database timeout is negative")
	}
	dirs, err := newDirectories(cfg.Directories)
	if err != nil {
		return nil, err
	}
	eids, err := newEIDProviders(cfg.EIDProviders)
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, public: u, publicOrigin: publicOrigin, mux: http.NewServeMux(), log: cfg.Logger,
		csrfKey: deriveKey(cfg.AppSecret, "partnergate-csrf-key-v1"), deviceKey: deriveKey(cfg.AppSecret, "partnergate-device-key-v1"),
		signIns: newSignInGuard(cfg.SignInConcurrency), dirs: dirs, eids: eids}

	h.mux.HandleFunc("/partner/{name}/{endpoint}", h.partnerLink)
	h.mux.HandleFunc("GET /app/login", h.loginPage)
	h.mux.HandleFunc("POST /app/login", h.loginExchange)
	h.mux.HandleFunc("GET /app/signin", h.signinPage)
	h.mux.HandleFunc("POST /app/signin", h.signin)
	h.mux.HandleFunc("POST /app/signup", h.signup)
	h.mux.HandleFunc("GET /app/link", h.linkPage)
	h.mux.HandleFunc("POST /app/link", h.confirmLink)
	h.mux.HandleFunc("POST /app/signout", h.signout)
	h.mux.HandleFunc("GET /app/signed-out", h.signedOut)
	h.mux.HandleFunc("GET /app/directory/{name}/signin", h.directorySignIn)
	h.mux.HandleFunc("GET /app/directory/{name}/callback", h.directoryCallback)
	h.mux.HandleFunc("GET /app/eid/{name}/signin", h.eidSignIn)
	h.mux.HandleFunc("GET /app/eid/{name}/callback", h.eidCallback)
	h.mux.HandleFunc("POST /app/device/credential", h.deviceIssue)
	h.mux.HandleFunc("POST /app/device/signin", h.deviceSignIn)
	h.mux.HandleFunc("POST /app/device/signout", h.deviceSignOut)
	h.mux.HandleFunc("POST /app/directory/{name}/callback", h.directorySwitch)
	h.mux.HandleFunc("POST /app/directory/{name}/signout", h.directorySignOut)
	for _, p := range instructorViews {
		h.mux.HandleFunc("GET "+p, h.appShell)
	}
	for _, p := range memberViews {
		h.mux.HandleFunc("GET "+p, h.goShell)
	}
	h.mux.HandleFunc("GET /go/manifest.webmanifest", h.goManifest)
	h.mux.HandleFunc("GET /go/sw.js", h.goWorker)
	h.mux.Handle(apiPrefix, h.apiRoutes())
	h.mux.Handle("GET /app/static/", http.StripPrefix("/app/static/", staticFiles()))
	h.mux.HandleFunc("GET /app/messages/{lang}", h.messages)
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/app", http.StatusSeeOther)
	})
	return h, nil
}

// deriveKey is the key of one use of the app secret: a value made for one (a CSRF token)
// is never valid as another's (a device cookie).
func deriveKey(secret []byte, use string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(use))
	return m.Sum(nil)
}

// DatabaseTimeout is the database timeout in use, the configured one or the default.
func (h *Handler) DatabaseTimeout() time.Duration { return h.cfg.DatabaseTimeout }

// ServeHTTP sets the security headers every answer carries, then routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	// No script: the pages are server-rendered and the redirect page uses a meta refresh.
	// The login page allows the site's own script file (loginPage), the application shell
	// its own modules and API (renderShell).
	hdr.Set("Content-Security-Policy", h.csp(noScript, h.cfg.FrameAncestors))
	hdr.Set("X-Content-Type-Options", "nosniff")
	// Login URLs carry a code: no page sends its address on to another site. Not
	// no-referrer: with it browsers send "Origin: null" on same-site form posts, which the
	// CSRF check must then refuse.
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	if h.https(r) {
		hdr.Set("Strict-Transport-Security", "max-age=31536000")
	}
	h.chooseLanguage(w, r)
	h.serveWithDeadline(w, r)
}

// scriptPolicy is what a page may run and fetch.
type scriptPolicy int

const (
	noScript   scriptPolicy = iota // server-rendered pages
	ownScripts                     // the site's own script files (the login page)
	ownApp                         // the site's own modules calling the site's own API (the shell)
	goApp                          // ownApp, and Go's service worker and manifest (the Go shell)
)

// csp is the Content-Security-Policy with the given frame-ancestors sources. default-src
// 'none' forbids scripts and fetches unless scripts opens them to the site's own origin;
// no policy allows inline script, eval or inline style. Forms post to the site itself and
// to formTargets, origins that the post's answer redirects the browser to (browsers hold
// a form's redirects to form-action too).
func (h *Handler) csp(scripts scriptPolicy, frameAncestors string, formTargets ...string) string {
	src := ""
	switch scripts {
	case ownScripts:
		src = "script-src 'self'; "
	case ownApp:
		src = "script-src 'self'; connect-src 'self'; "
	case goApp:
		src = "script-src 'self'; connect-src 'self'; worker-src 'self'; manifest-src 'self'; "
	}
	forms := strings.Join(append([]string{"'self'"}, formTargets...), " ")
	return "default-src 'none'; " + src + "style-src 'self'; img-src 'self'; form-action " + forms + "; base-uri 'none'; frame-ancestors " + frameAncestors
}

// https reports whether the browser talks HTTPS: the public URL says so, the connection is
// TLS, or the gateway (the only client that can reach a loopback listener) says so in
// X-Forwarded-Proto, which Caddy sets from its own connection.
func (h *Handler) https(r *http.Request) bool {
	return h.public.Scheme == "https" || r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// healthz answers whether the database answers: 200 "ok", or 503 "database unavailable"
// with Retry-After. It checks the database only (docs/appservice.md, Health check); the
// gateway's own readiness is the gateway's. The ping is bounded, so a database that hangs
// is a 503 within seconds, not a check that times out.
func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := h.cfg.Store.Ping(ctx); err != nil {
		h.log.Error("health check failed", "outcome", "unavailable", "error", err.Error())
		w.Header().Set("Retry-After", retryAfter)
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("database unavailable\n"))
		return
	}
	w.Write([]byte("ok\n"))
}
