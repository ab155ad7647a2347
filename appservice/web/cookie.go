package web

import (
	"errors"
	"net/http"

	"github.com/partnergate/partnergate/appservice/store"
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

// signedIn gives the browser token, the session s just started, remembers its account in
// the browser's device cookie (device.go), and sends the browser where s lands. Every way
// of signing in ends here: a link, a password, a new account, a directory.
func (h *Handler) signedIn(w http.ResponseWriter, r *http.Request, token string, s *store.Session) {
	h.setCookie(w, r, sessionCookie, token, 0)
	h.rememberDevice(w, r, s)
	http.Redirect(w, r, landing(s), http.StatusSeeOther)
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
