package web

import (
	"net/http"

	"github.com/partnergate/partnergate/appservice/store"
)

// The view paths of the single-page application (static/app/router.js routes the same
// ones). Each answers the one HTML shell, so that a reload or a deep link shows the view
// the address names; the browser renders it from the JSON API.
var (
	instructorViews = []string{"/app", "/app/persons", "/app/persons/{id}", "/app/exercises", "/app/exercises/{id}",
		"/app/workouts", "/app/workouts/{id}", "/app/templates", "/app/cases/{caseId}", "/app/devices"}
	memberViews = []string{"/go", "/go/workouts/{id}"}
)

// shellData is what the shell renders on the server: who is signed in and the person in
// focus, readable before the modules have loaded (and by the HTTP tests), and the CSRF
// token the modules send with every state-changing API call.
type shellData struct {
	Role     string // store.RoleInstructor or store.RoleMember: the views the modules offer
	SignedIn bool
	CSRF     string
	Account  *store.Account
	Org      *store.Organization
	Person   *store.Person
	CaseID   string
	// EIDs are the national eIDs the Go start page offers (a member's page without a
	// session).
	EIDs []eidButton
	// EIDOffered tells Go's script that the start page offers an eID, so that its
	// "session ended" view leads back there.
	EIDOffered bool
}

// appShell serves the instructor's views. Without a session, /app itself sends to the
// sign-in page, where an instructor starts; a deeper view answers the shell with the
// "session ended" view, so an old bookmark or a reload after expiry says what happened.
func (h *Handler) appShell(w http.ResponseWriter, r *http.Request) {
	s, ok := h.pageSession(w, r)
	if !ok {
		return
	}
	switch {
	case s == nil && r.URL.Path == "/app":
		http.Redirect(w, r, "/app/signin", http.StatusSeeOther)
	case s == nil:
		h.renderShell(w, r, http.StatusUnauthorized, shellData{Role: store.RoleInstructor})
	case s.Pending || s.ConfirmLink || s.Account.Role != store.RoleInstructor:
		http.Redirect(w, r, landing(s), http.StatusSeeOther)
	default:
		h.renderShell(w, r, http.StatusOK, shellData{Role: store.RoleInstructor, SignedIn: true,
			Account: s.Account, Org: s.Organization, Person: s.Person, CaseID: s.CaseID})
	}
}

// goShell serves the member's (Go) views; an instructor who opens one is sent to the
// application.
func (h *Handler) goShell(w http.ResponseWriter, r *http.Request) {
	s, ok := h.pageSession(w, r)
	if !ok {
		return
	}
	switch {
	case s == nil || s.Pending:
		h.renderShell(w, r, http.StatusUnauthorized, shellData{Role: store.RoleMember, EIDs: h.eidButtons(), EIDOffered: len(h.eids.list) > 0})
	case s.ConfirmLink || s.Account.Role != store.RoleMember:
		http.Redirect(w, r, landing(s), http.StatusSeeOther)
	default:
		h.setOfflineOwner(w, s)
		h.renderShell(w, r, http.StatusOK, shellData{Role: store.RoleMember, SignedIn: true,
			Account: s.Account, Org: s.Organization, EIDOffered: len(h.eids.list) > 0}, h.eidLogoutOrigin(r, s)...)
	}
}

// renderShell answers the shell page. Its CSP lets the page load the application's own
// modules and call its own API, nothing else: no inline script, no eval, no inline style.
// Go's shell may also register its service worker and read its manifest, both the site's.
// formTargets are further origins its sign-out form may end at (an eID provider's logout).
func (h *Handler) renderShell(w http.ResponseWriter, r *http.Request, status int, d shellData, formTargets ...string) {
	d.CSRF = h.csrfToken(w, r)
	policy := ownApp
	if d.Role == store.RoleMember {
		policy = goApp
	}
	w.Header().Set("Content-Security-Policy", h.csp(policy, h.cfg.FrameAncestors, formTargets...))
	h.render(w, status, "shell", d)
}
