package web

import (
	"errors"
	"net/http"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/problem"
)

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
// signed in to another account, or has never signed in to the link's account, the page
// asks first instead (see switchesAccount and newToDevice).
func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	target, err := h.cfg.Store.PeekCode(r.Context(), code)
	if err != nil {
		h.failCode(w, r, err)
		return
	}
	h.renderLogin(w, r, code, target)
}

// renderLogin answers the login page of code, which signs in to target: a question when
// the person must choose (switching accounts, or an account new to this browser), else
// the page whose script posts the code at once.
func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, code string, target *store.LoginTarget) {
	d := loginData{Code: code, CSRF: h.csrfToken(w, r), Target: target}
	s := h.session(r)
	switch {
	case switchesAccount(s, target):
		d.Current = s
		h.render(w, http.StatusOK, "login-switch", d)
	case h.newToDevice(r, s, target):
		h.render(w, http.StatusOK, "login-ask", d)
	default:
		// The one page with a script: login.js submits the form. Still no inline script.
		w.Header().Set("Content-Security-Policy", h.csp(ownScripts, h.cfg.FrameAncestors))
		h.render(w, http.StatusOK, "login", d)
	}
}

// switchesAccount reports whether signing in to target would replace s, a session of
// another account (or signed in, by a code for a first-time partner user). A link opened
// by a cross-site form post (the /payload page) could otherwise silently swap the
// person's session for one of a partner user the sender controls (login CSRF). A pending
// session holds no account and is replaced without asking.
func switchesAccount(s *store.Session, target *store.LoginTarget) bool {
	return s != nil && !s.Pending && (target.Account == nil || target.Account.ID != s.Account.ID)
}

// newToDevice reports whether target signs in to an account that has never signed in in
// this browser: its device cookie does not list it (device.go), nor is the browser signed
// in to it already. Such a browser may be a stranger's that was sent someone's login URL,
// so the person is asked, by the account's name, before it is signed in. A code for a
// first-time partner user signs no account in: the sign-in page that follows asks for a
// password, and linking asks again.
func (h *Handler) newToDevice(r *http.Request, s *store.Session, target *store.LoginTarget) bool {
	if target.Account == nil || (s != nil && s.Account != nil && s.Account.ID == target.Account.ID) {
		return false
	}
	return !h.deviceKnows(r, target.Account.ID)
}

// loginExchange exchanges a one-time code posted by the login page for a session and
// sends the browser on: to the application, the Go page, or, for an employee seen the
// first time, the sign-in page. The session the browser had before is ended; when it was
// another account's, only after the person chose to switch on the question page. Cancel on
// the question spends the code without signing in.
func (h *Handler) loginExchange(w http.ResponseWriter, r *http.Request) {
	if !h.readForm(w, r, "login refused", "Open the application again from your partner application.") {
		return
	}
	code, action := r.PostFormValue("code"), r.PostFormValue("action")
	if action == "cancel" {
		h.cancelLogin(w, r, code)
		return
	}
	if r.PostFormValue("switch") != "yes" && action != "continue" {
		// Asked again here, not only on the page: the post must not switch accounts, or
		// sign a browser in to an account new to it, without the person's choice,
		// whatever sent it.
		target, err := h.cfg.Store.PeekCode(r.Context(), code)
		if err != nil {
			h.failCode(w, r, err)
			return
		}
		if s := h.session(r); switchesAccount(s, target) || h.newToDevice(r, s, target) {
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
	h.signedIn(w, r, ex.Token, ex.Session)
}

// cancelLogin spends code for a person who said on the question page that the link is not
// theirs to open: the browser stays as it was, and the link works nowhere any more.
func (h *Handler) cancelLogin(w http.ResponseWriter, r *http.Request, code string) {
	if err := h.cfg.Store.CancelCode(r.Context(), code); err != nil {
		h.failCode(w, r, err)
		return
	}
	h.log.Info("login cancelled", "outcome", "cancelled")
	h.render(w, http.StatusOK, "login-cancelled", nil)
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
