package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/problem"
)

// Cookie names. The session cookie holds a random token whose hash keys the server-side
// session; the CSRF cookie holds a server-minted value bound to the session (csrfToken).
// Over HTTPS both carry the __Host- prefix, which browsers accept only from a secure page
// of this very host, without Domain and with Path=/: a sibling subdomain or a plain-HTTP
// answer cannot plant or overwrite them.
const (
	sessionCookie = "pg_session"
	csrfCookie    = "pg_csrf"
	hostPrefix    = "__Host-"
)

// cookieName is name as this request's scheme uses it: __Host-name over HTTPS, name over
// plain HTTP (the localhost demo, where browsers refuse __Host- cookies).
func (h *Handler) cookieName(r *http.Request, name string) string {
	if h.https(r) {
		return hostPrefix + name
	}
	return name
}

// setCookie sets an HttpOnly cookie for the whole site. Over HTTPS it is Secure,
// SameSite=None and Partitioned, because a partner may show the application in an iframe
// of its own site, where a Lax or Strict cookie would never be sent, and browsers that
// block third-party cookies keep only partitioned ones there (CHIPS: the cookie is kept
// per top-level site, so the partner's iframe and a new tab each have their own session,
// which suits one-time links). Over plain HTTP (the localhost demo) browsers refuse
// SameSite=None without Secure, so it is Lax: a same-site iframe (the partner page on
// localhost) still works, a cross-site one cannot. The CSRF token, not SameSite, protects
// the forms. A deletion (maxAge < 0) carries the same attributes: a partitioned cookie is
// only replaced by a partitioned one.
func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	c := &http.Cookie{Name: h.cookieName(r, name), Value: value, Path: "/", HttpOnly: true, MaxAge: maxAge}
	if h.https(r) {
		c.Secure, c.SameSite, c.Partitioned = true, http.SameSiteNoneMode, true
	} else {
		c.SameSite = http.SameSiteLaxMode
	}
	http.SetCookie(w, c)
}

// cookie returns the value of the request's cookie name (prefixed as cookieName says; over
// HTTPS an unprefixed one is ignored), or "".
func (h *Handler) cookie(r *http.Request, name string) string {
	if c, err := r.Cookie(h.cookieName(r, name)); err == nil {
		return c.Value
	}
	return ""
}

// session returns the request's session, or nil.
func (h *Handler) session(r *http.Request) *store.Session {
	s, _ := h.readSession(r)
	return s
}

// readSession returns the request's session, nil without one, or the database's error: a
// page must not take a database that does not answer for a browser that is signed out.
func (h *Handler) readSession(r *http.Request) (*store.Session, error) {
	tok := h.cookie(r, sessionCookie)
	if tok == "" {
		return nil, nil
	}
	s, err := h.cfg.Store.Session(r.Context(), tok)
	switch {
	case errors.Is(err, store.ErrNoSession):
		return nil, nil
	case err != nil:
		h.log.Error("reading session failed", "error", err.Error())
		return nil, err
	}
	return s, nil
}

// pageSession is readSession for a page: on a database error it answers the problem page
// (503 unavailable when the database does not answer) and reports false.
func (h *Handler) pageSession(w http.ResponseWriter, r *http.Request) (*store.Session, bool) {
	s, err := h.readSession(r)
	if err != nil {
		h.fail(w, h.failure(w, r, "Try again in a moment."))
		return nil, false
	}
	h.sessionLanguage(w, r, s)
	return s, true
}

// loginData is what the login pages show.
type loginData struct {
	Code    string
	CSRF    string
	Target  *store.LoginTarget
	Current *store.Session // the browser's session for another account, when it has one
}

// loginPage answers a login URL (GET, and HEAD by the same route) without spending its
// code: mail scanners, chat unfurls and link prefetchers fetch URLs too, and must not use
// up a person's one-time link. The page posts the code back (loginExchange), at once by a
// same-origin script, or by its button where scripts do not run. When the browser is
// signed in to another account, the page asks first instead (see switchesAccount).
func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	target, err := h.cfg.Store.PeekCode(r.Context(), code)
	if err != nil {
		h.failCode(w, r, err)
		return
	}
	h.renderLogin(w, r, code, target)
}

func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, code string, target *store.LoginTarget) {
	d := loginData{Code: code, CSRF: h.csrfToken(w, r), Target: target}
	if s := h.session(r); switchesAccount(s, target) {
		d.Current = s
		h.render(w, http.StatusOK, "login-switch", d)
		return
	}
	// The one page with a script: login.js submits the form. Still no inline script.
	w.Header().Set("Content-Security-Policy", h.csp(ownScripts, h.cfg.FrameAncestors))
	h.render(w, http.StatusOK, "login", d)
}

// switchesAccount reports whether signing in to target would replace s, a session of
// another account (or signed in, by a code for a first-time partner user). A link opened
// by a cross-site form post (the /payload page) could otherwise silently swap the
// person's session for one of a partner user the sender controls (login CSRF). A pending
// session holds no account and is replaced without asking.
func switchesAccount(s *store.Session, target *store.LoginTarget) bool {
	return s != nil && !s.Pending && (target.Account == nil || target.Account.ID != s.Account.ID)
}

// loginExchange exchanges a one-time code posted by the login page for a session and
// sends the browser on: to the application, the Go page, or, for an employee seen the
// first time, the sign-in page. The session the browser had before is ended; when it was
// another account's, only after the person chose to switch on the question page.
func (h *Handler) loginExchange(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil || !h.checkCSRF(r) {
		h.log.Info("login refused", "outcome", problem.CodeCSRFInvalid)
		h.fail(w, problem.New(problem.CodeCSRFInvalid, "Open the application again from your partner application."))
		return
	}
	code := r.PostFormValue("code")
	if r.PostFormValue("switch") != "yes" {
		// Asked again here, not only on the page: the post must not switch accounts
		// without the person's choice, whatever sent it.
		target, err := h.cfg.Store.PeekCode(r.Context(), code)
		if err != nil {
			h.failCode(w, r, err)
			return
		}
		if switchesAccount(h.session(r), target) {
			h.renderLogin(w, r, code, target)
			return
		}
	}
	ex, err := h.cfg.Store.ExchangeCode(r.Context(), code)
	if err != nil {
		h.failCode(w, r, err)
		return
	}
	if old := h.cookie(r, sessionCookie); old != "" {
		if err := h.cfg.Store.DeleteSession(r.Context(), old); err != nil {
			h.log.Error("ending previous session failed", "error", err.Error())
		}
	}
	h.setCookie(w, r, sessionCookie, ex.Token, 0)
	http.Redirect(w, r, landing(ex.Session), http.StatusSeeOther)
}

// failCode answers a login code that PeekCode or ExchangeCode refused.
func (h *Handler) failCode(w http.ResponseWriter, r *http.Request, err error) {
	var p problem.Problem
	switch {
	case errors.Is(err, store.ErrCodeUsed):
		p = problem.New(problem.CodeLoginCodeUsed, "This sign-in link has been used already. Open the application again from your partner application.")
	case errors.Is(err, store.ErrCodeExpired):
		p = problem.New(problem.CodeLoginCodeExpired, "This sign-in link is valid for one minute and has expired. Open the application again from your partner application.")
	case errors.Is(err, store.ErrCodeInvalid):
		p = problem.New(problem.CodeLoginCodeInvalid, "This sign-in link is not valid. Open the application again from your partner application.")
	default:
		p = h.failure(w, r, "Try again in a moment.")
		h.log.Error("exchanging login code failed", "outcome", p.Code, "error", err.Error())
		h.fail(w, p)
		return
	}
	h.log.Info("login refused", "outcome", p.Code)
	h.fail(w, p)
}

func landing(s *store.Session) string {
	switch {
	case s.Pending:
		return "/app/signin"
	case s.ConfirmLink:
		return "/app/link"
	case s.Account.Role == store.RoleMember:
		return "/go"
	}
	return "/app"
}

type signinData struct {
	CSRF      string
	Login     string
	Error     string
	SignedOut bool
	// Employee is the first-time employee of a pending session, who may also create an
	// account (Signup) instead of signing in.
	Employee *store.Employee
	Signup   signupForm
}

// greet fills d for the first-time employee e: the greeting, and both forms prefilled with
// what the partner told us (a login kept as typed). The account may use either the e-mail
// address or the username to sign in.
func (d *signinData) greet(e *store.Employee) {
	d.Employee, d.Signup = e, prefill(e)
	if d.Login == "" {
		d.Login = e.Email
	}
	if d.Login == "" {
		d.Login = e.Username
	}
}

func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	s, ok := h.pageSession(w, r)
	if !ok {
		return
	}
	if s != nil && !s.Pending {
		http.Redirect(w, r, landing(s), http.StatusSeeOther)
		return
	}
	d := signinData{CSRF: h.csrfToken(w, r)}
	if s != nil && s.Employee != nil {
		d.greet(s.Employee)
	}
	h.render(w, http.StatusOK, "signin", d)
}

func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	if !h.readSignInForm(w, r, "sign-in refused") {
		return
	}
	login := r.PostFormValue("login")
	// Bounded before the password is hashed: per address and per (login name, address),
	// a growing delay per login name, then the number of hashes running at once.
	ok, retry, delay := h.signIns.allow(clientAddr(r), strings.ToLower(strings.TrimSpace(login)))
	if !ok {
		h.log.Info("sign-in refused", "outcome", "rate_limited")
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Round(time.Second)/time.Second)+1))
		h.signinError(w, r, http.StatusTooManyRequests, login, "Too many sign-in attempts. Wait a minute, then try again.")
		return
	}
	if delay > 0 && !h.signIns.sleep(r.Context(), delay) {
		return // the client went away
	}
	if !h.signIns.acquire(r.Context()) {
		h.log.Warn("sign-in refused", "outcome", "busy")
		w.Header().Set("Retry-After", "5")
		h.signinError(w, r, http.StatusServiceUnavailable, login, "Sign-in is busy right now. Try again in a few seconds.")
		return
	}
	in, err := h.cfg.Store.SignIn(r.Context(), login, r.PostFormValue("password"), h.cookie(r, sessionCookie))
	h.signIns.release()
	if err != nil {
		status, msg := http.StatusUnauthorized, "Wrong username or password."
		if !errors.Is(err, store.ErrBadCredentials) {
			p := h.failure(w, r, "")
			h.log.Error("sign-in failed", "outcome", p.Code, "error", err.Error())
			status, msg = p.Status, "Sign-in is not possible right now. Try again in a moment."
		} else {
			h.log.Info("sign-in refused", "outcome", problem.CodeCredentialsInvalid)
		}
		h.signinError(w, r, status, login, msg)
		return
	}
	h.log.Info("signed in", "outcome", "signed_in", "link_to_confirm", in.Session.ConfirmLink)
	h.setCookie(w, r, sessionCookie, in.Token, 0)
	http.Redirect(w, r, landing(in.Session), http.StatusSeeOther)
}

type linkData struct {
	pageData
	EmailDiffers bool
}

// linkPage asks a person who signed in from a first-time employee's sign-in page whether
// that partner user is them. The pending session that brought them there may have been
// planted by someone else (login CSRF: a link of the attacker's partner user opened in the
// victim's browser); linking without asking would give that partner user single sign-on
// into the victim's account.
func (h *Handler) linkPage(w http.ResponseWriter, r *http.Request) {
	s, ok := h.pageSession(w, r)
	if !ok {
		return
	}
	if s == nil || !s.ConfirmLink {
		target := "/app/signin"
		if s != nil {
			target = landing(s)
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	// Never in a frame, not even a partner's: a framed page could be overlaid so that a
	// click meant for something else presses "Link to my account".
	w.Header().Set("Content-Security-Policy", h.csp(noScript, "'none'"))
	w.Header().Set("X-Frame-Options", "DENY")
	d := linkData{pageData: pageData{Session: s, CSRF: h.csrfToken(w, r)}}
	d.EmailDiffers = s.Employee.Email != "" && s.Account.Email != "" && !strings.EqualFold(s.Employee.Email, s.Account.Email)
	h.render(w, http.StatusOK, "link", d)
}

func (h *Handler) confirmLink(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil || !h.checkCSRF(r) {
		h.log.Info("link confirmation refused", "outcome", problem.CodeCSRFInvalid)
		h.fail(w, problem.New(problem.CodeCSRFInvalid, "Reload the page and try again."))
		return
	}
	accept := r.PostFormValue("action") == "link"
	linked, err := h.cfg.Store.ConfirmLink(r.Context(), h.cookie(r, sessionCookie), accept)
	switch {
	case errors.Is(err, store.ErrNoSession):
		// Settled already (a second click) or signed out: the landing page says where.
		http.Redirect(w, r, "/app", http.StatusSeeOther)
		return
	case err != nil:
		p := h.failure(w, r, "Try again in a moment.")
		h.log.Error("confirming employee link failed", "outcome", p.Code, "error", err.Error())
		h.fail(w, p)
		return
	}
	h.log.Info("employee link settled", "outcome", map[bool]string{true: "linked", false: "not_linked"}[linked], "accepted", accept)
	if accept && !linked {
		h.render(w, http.StatusConflict, "message", map[string]string{
			"Title": "Partner user linked elsewhere",
			"Text":  "This partner user is linked to another account already, so it was not linked to yours. You are signed in without the contact of that link.",
		})
		return
	}
	http.Redirect(w, r, "/app", http.StatusSeeOther)
}

// signinError answers the sign-in page again with msg, the login kept and, for a
// first-time employee, the greeting.
func (h *Handler) signinError(w http.ResponseWriter, r *http.Request, status int, login, msg string) {
	d := signinData{CSRF: h.csrfToken(w, r), Login: login, Error: msg}
	if s := h.session(r); s != nil && s.Pending && s.Employee != nil {
		d.greet(s.Employee)
	}
	h.render(w, status, "signin", d)
}

func (h *Handler) signout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil || !h.checkCSRF(r) {
		h.fail(w, problem.New(problem.CodeCSRFInvalid, "Reload the page and try again."))
		return
	}
	if tok := h.cookie(r, sessionCookie); tok != "" {
		if err := h.cfg.Store.DeleteSession(r.Context(), tok); err != nil {
			p := h.failure(w, r, "Try again in a moment.")
			h.log.Error("signing out failed", "outcome", p.Code, "error", err.Error())
			h.fail(w, p)
			return
		}
	}
	h.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/app/signed-out", http.StatusSeeOther)
}

func (h *Handler) signedOut(w http.ResponseWriter, r *http.Request) {
	h.render(w, http.StatusOK, "signin", signinData{CSRF: h.csrfToken(w, r), SignedOut: true})
}

type pageData struct {
	*store.Session
	CSRF string
}

// csrfToken returns the form token for this browser, setting a new CSRF cookie when the
// one it has is not valid for its current session. The cookie is minted by the server only:
// random || HMAC(key, random || binding), where the binding is the hash of the browser's
// session cookie, or "anon" without one. The form field is an HMAC of the cookie (signed
// double submit): a site that cannot read the cookie cannot make the field. A value
// planted by someone who can set cookies (a sibling subdomain, a plain-HTTP answer) fails
// the cookie's own HMAC unless the server minted it, and one minted for the planter's
// session or for no session fails the binding to the victim's session.
func (h *Handler) csrfToken(w http.ResponseWriter, r *http.Request) string {
	v := h.cookie(r, csrfCookie)
	if !h.validCSRFCookie(v, h.csrfBinding(r)) {
		v = h.mintCSRFCookie(h.csrfBinding(r))
		h.setCookie(w, r, csrfCookie, v, 0)
	}
	return h.csrfMAC("field", v)
}

// csrfBinding names what the request's CSRF cookie must be bound to.
func (h *Handler) csrfBinding(r *http.Request) string {
	if tok := h.cookie(r, sessionCookie); tok != "" {
		sum := sha256.Sum256([]byte(tok))
		return "session:" + base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return "anon"
}

func (h *Handler) mintCSRFCookie(binding string) string {
	b := make([]byte, 32)
	rand.Read(b)
	random := base64.RawURLEncoding.EncodeToString(b)
	return random + "." + h.csrfMAC("cookie", random+"\x00"+binding)
}

func (h *Handler) validCSRFCookie(v, binding string) bool {
	random, mac, ok := strings.Cut(v, ".")
	return ok && len(random) == 43 && hmac.Equal([]byte(mac), []byte(h.csrfMAC("cookie", random+"\x00"+binding)))
}

// csrfMAC is the HMAC of msg under the CSRF key, for one use (cookie or field) each.
func (h *Handler) csrfMAC(use, msg string) string {
	m := hmac.New(sha256.New, h.csrfKey)
	m.Write([]byte(use + "\x00" + msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF accepts a POST whose CSRF cookie the server minted for the request's session,
// whose token field matches that cookie, and whose Origin, when the browser sends one, is
// this site.
func (h *Handler) checkCSRF(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" && !h.sameOrigin(r, o) {
		return false
	}
	v := h.cookie(r, csrfCookie)
	tok := r.PostFormValue("csrf")
	return h.validCSRFCookie(v, h.csrfBinding(r)) && tok != "" && hmac.Equal([]byte(tok), []byte(h.csrfMAC("field", v)))
}

// sameOrigin reports whether origin, an Origin header, is this site: the public URL's
// scheme, host and port, or the request's own host with the scheme the browser used
// (https). All three count (RFC 6454 §5): an https page of this host and port is another
// site than a plain-HTTP one, and the other way round. A default port is the same as none,
// as browsers leave it out; anything but a bare scheme://host[:port] is no origin.
func (h *Handler) sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Opaque != "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return false
	}
	o, ok := originOf(u.Scheme, u.Host)
	if !ok {
		return false
	}
	if o == h.publicOrigin {
		return true
	}
	scheme := "http"
	if h.https(r) {
		scheme = "https"
	}
	self, ok := originOf(scheme, r.Host)
	return ok && o == self
}

// originOf is the origin of scheme and host (host[:port]) in one spelling: lower case, the
// port always written. ok is false for a scheme other than http and https or no host.
func originOf(scheme, host string) (string, bool) {
	scheme, host = strings.ToLower(scheme), strings.ToLower(host)
	var port string
	switch scheme {
	case "http":
		port = "80"
	case "https":
		port = "443"
	default:
		return "", false
	}
	u := url.URL{Host: host}
	if p := u.Port(); p != "" {
		port = p
	}
	if u.Hostname() == "" {
		return "", false
	}
	return scheme + "://" + net.JoinHostPort(u.Hostname(), port), true
}

// readSignInForm reads a posted sign-in page form (at most 8 KiB) and checks its CSRF
// token; on failure it answers and logs refused with the outcome. A form too large or
// malformed was never readable, so it is not "expired": the code stays csrf_invalid, since
// the token in it could not be checked, with its own title and 400.
func (h *Handler) readSignInForm(w http.ResponseWriter, r *http.Request, refused string) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		p := problem.New(problem.CodeCSRFInvalid, "Reload the sign-in page and try again.")
		p.Title, p.Status = "Form not readable", http.StatusBadRequest
		h.fail(w, p)
		return false
	}
	if !h.checkCSRF(r) {
		h.log.Info(refused, "outcome", problem.CodeCSRFInvalid)
		h.fail(w, problem.New(problem.CodeCSRFInvalid, "Reload the sign-in page and try again."))
		return false
	}
	return true
}
