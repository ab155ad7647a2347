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
	if !h.readForm(w, r, "login refused", "Open the application again from your partner application.") {
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
