package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/partnergate/partnergate/appservice/store"
)

// pageData is what a page of a session shows: its session and the form token.
type pageData struct {
	*store.Session
	CSRF string
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
	if !h.readForm(w, r, "link confirmation refused", "Reload the page and try again.") {
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
