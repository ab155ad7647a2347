package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/partnergate/partnergate/problem"
)

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

// csrfBinding names what the request's CSRF cookie must be bound to. Without a session it
// is bound to nothing more: the cookie itself is what is the browser's own, and nothing else
// a browser sends is both its own and out of an attacker's reach (a second cookie is copied
// or planted as the first; an address or user agent is shared or forged). SECURITY.md,
// issue 34, says why moving an anonymous pair to another browser is no attack.
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
	return h.validCSRFToken(r, r.PostFormValue("csrf"))
}

// maxForm bounds a posted form of the pages: a code, a token and a few short fields.
const maxForm = 8 << 10

// readForm reads a posted form of at most maxForm bytes and checks its CSRF token (checkCSRF).
// When either fails it answers csrf_invalid with detail, logs refused at info unless it is
// empty, and reports false.
func (h *Handler) readForm(w http.ResponseWriter, r *http.Request, refused, detail string) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil || !h.checkCSRF(r) {
		if refused != "" {
			h.log.Info(refused, "outcome", problem.CodeCSRFInvalid)
		}
		h.fail(w, problem.New(problem.CodeCSRFInvalid, detail))
		return false
	}
	return true
}

// validCSRFToken reports whether the request's CSRF cookie is one the server minted for
// its session and tok, a form field or the API's X-CSRF-Token, matches that cookie.
func (h *Handler) validCSRFToken(r *http.Request, tok string) bool {
	v := h.cookie(r, csrfCookie)
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
