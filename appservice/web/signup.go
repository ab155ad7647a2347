package web

import (
	"errors"
	"net/http"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/partnergate/partnergate/appservice/store"
)

// Rules for an account created on the first-sight page; the password's are in password.go.
const (
	maxUsername    = 64
	maxDisplayName = 128
	maxEmail       = 254 // RFC 5321's limit on a path
)

// signupForm is the "Create my account" form: what it is prefilled with or was sent, and
// what is wrong with it. The passwords are never sent back.
type signupForm struct {
	Username, Email, DisplayName string
	Errors                       []string
}

// prefill fills the form with what the partner says about its user.
func prefill(e *store.Employee) signupForm {
	return signupForm{Username: plain(e.Username), Email: e.Email,
		DisplayName: strings.TrimSpace(plain(e.Firstname + " " + e.Lastname))}
}

// check returns what is wrong with f and the two passwords, every problem at once.
func (f *signupForm) check(password, repeat string) []string {
	var errs []string
	switch n := utf8.RuneCountInString(f.Username); {
	case n == 0:
		errs = append(errs, "Choose a username.")
	case n < 3 || n > maxUsername || strings.ContainsFunc(f.Username, notUsernameRune):
		errs = append(errs, "The username must have 3 to 64 characters: letters, digits and . - _ @ only.")
	}
	if f.Email != "" {
		if a, err := mail.ParseAddress(f.Email); err != nil || a.Address != f.Email || len(f.Email) > maxEmail {
			errs = append(errs, "The e-mail address is not valid; leave it empty or give one like name@example.com.")
		}
	}
	if n := utf8.RuneCountInString(f.DisplayName); n == 0 || n > maxDisplayName || strings.ContainsFunc(f.DisplayName, unicode.IsControl) || plain(f.DisplayName) != f.DisplayName {
		errs = append(errs, "Give your name (at most 128 characters) as others should see it.")
	}
	switch msg := PasswordProblem(password, f.Username); {
	case msg != "":
		errs = append(errs, msg)
	case password != repeat:
		errs = append(errs, "The two passwords differ; type the same password twice.")
	}
	return errs
}

func notUsernameRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(".-_@", r)
}

// signup creates the instructor account of a first-time employee from the first-sight page
// (the "Create my account" form) and signs it in, as a sign-in from that page would, but
// without the link confirmation: the account is new, so no one else's account can be
// linked to the partner user. Only a pending session may post it. Like a sign-in it
// hashes a password, so the same bounds apply before it does.
func (h *Handler) signup(w http.ResponseWriter, r *http.Request) {
	if !h.readSignInForm(w, r, "account creation refused") {
		return
	}
	s, ok := h.pageSession(w, r)
	if !ok {
		return
	}
	if s != nil && !s.Pending {
		http.Redirect(w, r, landing(s), http.StatusSeeOther)
		return
	}
	if s == nil {
		h.noPendingSession(w)
		return
	}
	f := signupForm{Username: strings.TrimSpace(r.PostFormValue("username")), Email: strings.TrimSpace(r.PostFormValue("email")),
		DisplayName: strings.TrimSpace(r.PostFormValue("displayname"))}
	password := r.PostFormValue("password")
	if f.Errors = f.check(password, r.PostFormValue("password2")); len(f.Errors) > 0 {
		h.log.Info("account creation refused", "outcome", "invalid_argument")
		h.renderSignup(w, r, s, http.StatusBadRequest, f)
		return
	}
	release, status, why := h.admit(w, r, strings.ToLower(f.Username), "account creation")
	if release == nil {
		if status != 0 {
			f.Errors = []string{refusalTexts["account creation"][why]}
			h.renderSignup(w, r, s, status, f)
		}
		return
	}
	in, err := h.cfg.Store.CreateInstructorForPending(r.Context(), h.cookie(r, sessionCookie), f.Username, f.Email, f.DisplayName, password)
	release()
	if err != nil {
		status, msg, outcome := http.StatusConflict, "", "conflict"
		switch {
		case errors.Is(err, store.ErrUsernameTaken):
			msg, outcome = "The username "+f.Username+" is taken. Choose another one.", "username_taken"
		case errors.Is(err, store.ErrEmailTaken):
			// Only an instructor's address is taken (members never sign in with one); the
			// words name no kind of account either way.
			msg, outcome = "This e-mail address cannot be used for a new account: if it is yours, sign in with it above; otherwise give another address, or none.", "email_taken"
		case errors.Is(err, store.ErrConflict):
			msg = "This partner user has an account already. Open the application again from your partner application."
		case errors.Is(err, store.ErrNoSession): // the pending session ended meanwhile
			h.noPendingSession(w)
			return
		default:
			p := h.failure(w, r, "")
			h.log.Error("creating account failed", "outcome", p.Code, "error", err.Error())
			status, msg, outcome = p.Status, "Your account could not be created right now; nothing was saved. Try again in a moment.", string(p.Code)
		}
		h.log.Info("account creation refused", "outcome", outcome)
		f.Errors = []string{msg}
		h.renderSignup(w, r, s, status, f)
		return
	}
	h.log.Info("account created", "outcome", "account_created")
	h.signedIn(w, r, in.Token, in.Session)
}

// renderSignup answers the first-sight page again with the form as sent and its errors.
func (h *Handler) renderSignup(w http.ResponseWriter, r *http.Request, s *store.Session, status int, f signupForm) {
	d := signinData{CSRF: h.csrfToken(w, r)}
	if s.Employee != nil {
		d.greet(s.Employee)
	}
	d.Signup = f
	h.render(w, status, "signin", d)
}

// noPendingSession answers an account creation without the pending session of a
// first-time employee's link: there is no partner user to create the account for.
func (h *Handler) noPendingSession(w http.ResponseWriter) {
	h.log.Info("account creation refused", "outcome", "no_pending_session")
	h.render(w, http.StatusForbidden, "message", map[string]string{
		"Title": "Open the application from your partner application",
		"Text":  "An account is created from the first link of your partner application, which has ended or was never opened in this browser. Open the application from your partner application again, or sign in with your service account.",
	})
}
