package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/problem"
)

type signinData struct {
	CSRF      string
	Login     string
	Error     string
	SignedOut bool
	// Employee is the first-time employee of a pending session, who may also create an
	// account (Signup) instead of signing in.
	Employee *store.Employee
	Signup   signupForm
	// Directories are the directory sign-ins offered: the session's organization's, or
	// the public ones when there is no organization yet.
	Directories []*directory
	// FromDirectory is set when Employee is a directory user (directory.go), not a
	// partner's: the greeting says so.
	FromDirectory bool
	// DirectoryLabel is that directory's label.
	DirectoryLabel string
}

// greet fills d for the first-time employee e: the greeting, and both forms prefilled with
// what the partner told us (a login kept as typed). The account may use either the e-mail
// address or the username to sign in.
func (d *signinData) greet(e *store.Employee) {
	d.Employee, d.Signup = e, prefill(e)
	d.FromDirectory = strings.HasPrefix(e.Partner, store.DirectoryPartner)
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
	var org *store.Organization
	if s != nil {
		org = s.Organization
	}
	d.Directories = h.dirs.forOrganization(org)
	d.DirectoryLabel = h.dirs.label(d.Employee)
	h.render(w, http.StatusOK, "signin", d)
}

func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	if !h.readSignInForm(w, r, "sign-in refused") {
		return
	}
	login := r.PostFormValue("login")
	// Bounded before the password is hashed: per address and per (login name, address),
	// turns per login name, then the number of hashes running at once.
	release, status, why := h.admit(w, r, strings.ToLower(strings.TrimSpace(login)), "sign-in")
	if release == nil {
		if status != 0 {
			h.signinError(w, r, status, login, refusalTexts["sign-in"][why])
		}
		return
	}
	in, err := h.cfg.Store.SignIn(r.Context(), login, r.PostFormValue("password"), h.cookie(r, sessionCookie))
	release()
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
	h.signedIn(w, r, in.Token, in.Session)
}

// signinError answers the sign-in page again with msg, the login kept and, for a
// first-time employee, the greeting.
func (h *Handler) signinError(w http.ResponseWriter, r *http.Request, status int, login, msg string) {
	d := signinData{CSRF: h.csrfToken(w, r), Login: login, Error: msg}
	var org *store.Organization
	if s := h.session(r); s != nil && s.Pending && s.Employee != nil {
		d.greet(s.Employee)
		org = s.Organization
	}
	d.Directories = h.dirs.forOrganization(org)
	d.DirectoryLabel = h.dirs.label(d.Employee)
	h.render(w, status, "signin", d)
}

func (h *Handler) signout(w http.ResponseWriter, r *http.Request) {
	if !h.readForm(w, r, "", "Reload the page and try again.") {
		return
	}
	// Only a session the eID started (scope member) goes on to the provider's logout: a
	// link's session that replaced it in this browser since does not.
	cur := h.session(r)
	if !h.endSession(w, r) {
		return
	}
	target := "/app/signed-out"
	if eid := h.eidLogout(r.Context(), w, r, cur != nil && cur.Scope == store.ScopeMember); eid != "" {
		// An eID session's sign-out ends the provider's session too, where it offers
		// RP-initiated logout, and comes back to the Go start page.
		target = eid
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// endSession deletes the request's session and its cookie. It answers the failure itself
// and reports false when the store could not delete it.
func (h *Handler) endSession(w http.ResponseWriter, r *http.Request) bool {
	if tok := h.cookie(r, sessionCookie); tok != "" {
		if err := h.cfg.Store.DeleteSession(r.Context(), tok); err != nil {
			p := h.failure(w, r, "Try again in a moment.")
			h.log.Error("signing out failed", "outcome", p.Code, "error", err.Error())
			h.fail(w, p)
			return false
		}
	}
	h.setCookie(w, r, sessionCookie, "", -1)
	return true
}

func (h *Handler) signedOut(w http.ResponseWriter, r *http.Request) {
	h.render(w, http.StatusOK, "signin", signinData{CSRF: h.csrfToken(w, r), SignedOut: true, Directories: h.dirs.forOrganization(nil)})
}

// readSignInForm reads a posted sign-in page form (at most 8 KiB) and checks its CSRF
// token; on failure it answers and logs refused with the outcome. A form too large or
// malformed was never readable, so it is not "expired": the code stays csrf_invalid, since
// the token in it could not be checked, with its own title and 400.
func (h *Handler) readSignInForm(w http.ResponseWriter, r *http.Request, refused string) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
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
