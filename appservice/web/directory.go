package web

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/problem"
)

// Directory is an organization's (or a partner's) OpenID Connect provider: its staff sign
// in with the directory they use for everything else (ADFS, Microsoft Entra ID, any
// OpenID Connect provider) instead of keeping one more password. The flow is the
// authorization code flow with PKCE, state and nonce; go-oidc and x/oauth2 do the
// discovery, the exchange and every token check.
type Directory struct {
	// Name is the directory's word in its URLs (/app/directory/{name}/signin and
	// …/callback): lower-case letters, digits and '-'.
	Name string `json:"name"`
	// Label is what the sign-in page's button names: "Sign in with <label>".
	Label string `json:"label"`
	// Partner is the partner whose organization uses the directory.
	Partner string `json:"partner"`
	// Organization is the partner's organizationId of that organization; empty for a
	// directory of all of the partner's organizations.
	Organization string `json:"organization,omitempty"`
	// Issuer is the provider's issuer URL, exactly as its discovery document spells it.
	Issuer string `json:"issuer"`
	// ClientID is the service's client id at the provider.
	ClientID string `json:"client_id"`
	// ClientSecretEnv names the environment variable holding the client secret: secrets
	// never sit in the configuration file.
	ClientSecretEnv string `json:"client_secret_env"`
	// ClientSecret is the secret read from ClientSecretEnv.
	ClientSecret string `json:"-"`
	// UserClaim is the ID token claim that names the user on the first-sight page;
	// default preferred_username. Only (iss, sub) ever match the user to an account.
	UserClaim string `json:"user_claim,omitempty"`
	// RequireClaims names what in the ID token entitles a user to the directory's
	// organization: claim name → the values accepted, exactly as the token carries them. A
	// token must meet every claim named: a claim equal to one of its values (a number or
	// boolean as JSON writes it), or a list claim (groups, roles) holding one of them; a
	// missing claim or an object does not. {"tid": ["<tenant id>"], "groups": ["<group id>"]} admits that tenant's
	// members of that group only. Only the ID token counts, never userinfo. A directory
	// needs RequireClaims or AllowAnyUser.
	RequireClaims map[string][]string `json:"require_claims,omitempty"`
	// AllowAnyUser, when true, admits every user the provider signs in for our client id,
	// no claim checked: only for a provider that lets nobody but the organization's staff
	// sign in to the application (docs/operations.md, Directory sign-in, says how).
	AllowAnyUser bool `json:"allow_any_user,omitempty"`
	// Public, when true, offers the directory's button on the sign-in page of a browser
	// that no partner link brought (the service's own sign-in and signed-out pages), where
	// anyone may look: for a deployment of one organization. Without it the button shows
	// only on the first-sight page of its organization's partner users; its staff start at
	// /app/directory/{name}/signin (a bookmark, the desktop wrapper's AdfsUrl).
	Public bool `json:"public,omitempty"`
	// Scopes are asked for besides openid, profile and email: ADFS puts the claims of its
	// issuance rules into the ID token only for allatclaims.
	Scopes []string `json:"scopes,omitempty"`
	// PostLogoutRedirect, when true, asks the provider's RP-initiated logout to send the
	// browser back to <public URL>/app/signed-out, which must then be registered at the
	// provider as a post-logout redirect URI; false (the default) leaves the person on the
	// provider's own signed-out page.
	PostLogoutRedirect bool `json:"post_logout_redirect,omitempty"`
}

var directoryName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// directoryCookie holds a sign-in's state, nonce and PKCE verifier between the redirect to
// the provider and its callback: HttpOnly, SameSite=Lax (the callback is a top-level
// navigation from the provider's site), signed with the app secret and ended by the
// callback, so each is used once. Over HTTPS it is __Host-pg_directory, Secure, like the
// session cookie (cookieName); a __Host- cookie must have Path=/, so it has that always.
const directoryCookie = "pg_directory"

// The directory refusals' details, in English: the catalogue's server.directory_* texts.
const (
	msgDirectoryUnavailable  = "The directory service does not answer. Try again in a moment."
	msgDirectoryStateInvalid = "This directory sign-in was not started in this browser, was used already or took too long. Sign in again."
	msgDirectoryRefused      = "The directory did not sign you in. Sign in again."
	msgDirectoryTokenInvalid = "The directory's answer could not be verified. Sign in again; if it happens again, tell your administrator."
	msgDirectoryTokenExpired = "The directory's answer has expired. Check your computer's clock and sign in again."
	msgDirectoryNotAllowed   = "Your directory account is not one of this organization's. Sign in with your own organization's directory, or ask your administrator for access."
)

// directoryTTL is how long a person has at the provider's login form.
const directoryTTL = 10 * time.Minute

// directoryFlow is the signed content of directoryCookie: a sign-in on its way to the
// provider (State, Nonce, Verifier), or one the provider answered that waits for the
// person's choice to switch accounts (User, verified).
type directoryFlow struct {
	Directory string               `json:"d"`
	State     string               `json:"s,omitempty"`
	Nonce     string               `json:"n,omitempty"`
	Verifier  string               `json:"v,omitempty"`
	User      *store.DirectoryUser `json:"u,omitempty"`
	Expires   int64                `json:"e"`
}

// switchTTL is how long the switch question waits for the person's answer.
const switchTTL = 5 * time.Minute

// directories holds each configured directory's provider, discovered on first use (a
// provider down at start must not keep the service from starting) and kept.
type directories struct {
	byName map[string]*directory
	list   []*directory
}

type directory struct {
	Directory
	oidcClient
}

// directoryRefusals are the directory sign-in's answers to its flow's failures.
var directoryRefusals = &oidcRefusals{log: "directory sign-in", key: "directory",
	unavailable:  problem.New(problem.CodeDirectoryUnavailable, msgDirectoryUnavailable),
	stateInvalid: problem.New(problem.CodeDirectoryStateInvalid, msgDirectoryStateInvalid),
	refused:      problem.New(problem.CodeDirectoryRefused, msgDirectoryRefused),
	tokenInvalid: problem.New(problem.CodeDirectoryTokenInvalid, msgDirectoryTokenInvalid),
	tokenExpired: problem.New(problem.CodeDirectoryTokenExpired, msgDirectoryTokenExpired),
}

func newDirectories(ds []Directory) (*directories, error) {
	out := &directories{byName: map[string]*directory{}}
	for _, d := range ds {
		if err := checkClientName("directory", d.Name, out.byName[d.Name] != nil); err != nil {
			return nil, err
		}
		switch {
		case d.Issuer == "" || d.ClientID == "" || d.Partner == "" || d.Label == "":
			return nil, fmt.Errorf("directory %q needs a label, a partner, an issuer and a client id", d.Name)
		}
		if err := d.checkEntitlement(); err != nil {
			return nil, fmt.Errorf("directory %q: %v", d.Name, err)
		}
		if d.UserClaim == "" {
			d.UserClaim = "preferred_username"
		}
		dd := &directory{Directory: d, oidcClient: oidcClient{base: "/app/directory/" + d.Name, flow: d.Name,
			issuer: d.Issuer, clientID: d.ClientID, clientSecret: d.ClientSecret,
			scopes: append([]string{"profile", "email"}, d.Scopes...), refusals: directoryRefusals}}
		out.byName[d.Name], out.list = dd, append(out.list, dd)
	}
	return out, nil
}

// checkEntitlement checks that d says who may enter: RequireClaims, or AllowAnyUser said
// explicitly. A directory that says neither would admit whoever its provider lets through
// (with one provider for several organizations, every organization's staff, and users no
// organization knows), so it does not load.
func (d *Directory) checkEntitlement() error {
	switch {
	case d.AllowAnyUser && len(d.RequireClaims) > 0:
		return errors.New("require_claims and allow_any_user both set: choose one")
	case d.AllowAnyUser:
		return nil
	case len(d.RequireClaims) == 0:
		return errors.New(`no require_claims: name the ID token claims that entitle a user to its organization ` +
			`(such as "tid" and "groups", with the accepted values), or set "allow_any_user": true to admit every user ` +
			`the provider signs in (docs/operations.md, Directory sign-in)`)
	}
	for name, values := range d.RequireClaims {
		if name == "" || len(values) == 0 || slices.Contains(values, "") {
			return fmt.Errorf("require_claims %q: want a claim name and at least one non-empty value", name)
		}
	}
	return nil
}

// entitled reports whether claims, a verified ID token's, meet d's rule; when they do not,
// missing names a claim that failed (for the log: its name, never a value).
func (d *directory) entitled(claims map[string]any) (ok bool, missing string) {
	if d.AllowAnyUser {
		return true, ""
	}
	for _, name := range slices.Sorted(maps.Keys(d.RequireClaims)) {
		if !claimHolds(claims[name], d.RequireClaims[name]) {
			return false, name
		}
	}
	return true, ""
}

// claimHolds reports whether v, a claim's JSON value, is one of accepted or, as a list,
// holds one of them. A number or a boolean is compared as JSON writes it (Entra ID's acct
// is 0 for a member of the tenant, 1 for a guest); an object never matches.
func claimHolds(v any, accepted []string) bool {
	if list, ok := v.([]any); ok {
		return slices.ContainsFunc(list, func(e any) bool { s, ok := claimString(e); return ok && slices.Contains(accepted, s) })
	}
	s, ok := claimString(v)
	return ok && slices.Contains(accepted, s)
}

// claimString is a string, number or boolean claim value as JSON writes it.
func claimString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// forOrganization returns the directories that an organization's staff may sign in with:
// its own and its partner's. When org is nil (a page no partner link brought, which
// anyone may open), only the public ones: the list of every directory would name every
// customer's organization and provider to anyone.
func (ds *directories) forOrganization(org *store.Organization) []*directory {
	var out []*directory
	for _, d := range ds.list {
		if org == nil && d.Public || org != nil && d.Partner == org.Partner && (d.Organization == "" || d.Organization == org.PartnerID) {
			out = append(out, d)
		}
	}
	return out
}

// label is the label of the directory whose user e is, or "" for a partner's user.
func (ds *directories) label(e *store.Employee) string {
	if e == nil || !strings.HasPrefix(e.Partner, store.DirectoryPartner) {
		return ""
	}
	issuer := strings.TrimPrefix(e.Partner, store.DirectoryPartner)
	for _, d := range ds.list {
		if d.Issuer == issuer {
			return d.Label
		}
	}
	return issuer
}

// directorySignIn starts a directory sign-in (GET /app/directory/{name}/signin): it sends
// the browser to the provider's login, with ?signon=<user> as the provider's login_hint.
// With ?signout=1 it answers the sign-out page instead (directorySignOutPage): the desktop
// wrapper's sign-out goes there.
func (h *Handler) directorySignIn(w http.ResponseWriter, r *http.Request) {
	d := h.dirs.byName[r.PathValue("name")]
	if d == nil {
		h.fail(w, problem.New(problem.CodeNotFound, ""))
		return
	}
	if r.URL.Query().Get("signout") == "1" {
		h.directorySignOutPage(w, r, d)
		return
	}
	var opts []oauth2.AuthCodeOption
	if hint := strings.TrimSpace(r.URL.Query().Get("signon")); hint != "" && len(hint) <= 256 {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", hint))
	}
	h.startFlow(w, r, &d.oidcClient, opts...)
}

// directoryCallback finishes a directory sign-in (GET /app/directory/{name}/callback): the
// state must be the one this browser's cookie holds and used for the first time by the
// database's record (UseDirectoryState), the code is exchanged with the PKCE verifier, and
// the ID token must be the provider's, for our client id, unexpired, with the cookie's
// nonce and the claims the directory requires. The cookie ends first. When the browser is
// signed in to another account, the person is asked first (directorySwitch), as a login
// link asks.
func (h *Handler) directoryCallback(w http.ResponseWriter, r *http.Request) {
	d := h.dirs.byName[r.PathValue("name")]
	if d == nil {
		h.fail(w, problem.New(problem.CodeNotFound, ""))
		return
	}
	a, ok := h.finishFlow(w, r, &d.oidcClient)
	if !ok {
		return
	}
	u := d.user(a.id, a.claims)
	claims := a.claims
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	// The directory's rule, before anything is stored: a user it does not entitle to the
	// organization touches no account, membership or session.
	if ok, missing := d.entitled(claims); !ok {
		h.refuse(w, &d.oidcClient, problem.New(problem.CodeDirectoryUserNotAllowed, msgDirectoryNotAllowed), "claim", missing)
		return
	}
	if u.Firstname == "" && u.Lastname == "" {
		h.userInfo(ctx, d, a.provider, a.token, &u)
	}
	if cur := h.session(r); cur != nil && !cur.Pending {
		acct, err := h.cfg.Store.DirectoryAccount(r.Context(), u.Issuer, u.Subject)
		if err != nil {
			pr := h.failure(w, r, "Try again in a moment.")
			h.log.Error("directory sign-in failed", "directory", d.Name, "outcome", pr.Code, "error", err.Error())
			h.fail(w, pr)
			return
		}
		if target := (&store.LoginTarget{Account: acct}); switchesAccount(cur, target) {
			h.askDirectorySwitch(w, r, d, u, cur, target)
			return
		}
	}
	h.directoryStart(w, r, d, u)
}

// directoryStart signs the verified directory user u in, in place of the browser's session.
func (h *Handler) directoryStart(w http.ResponseWriter, r *http.Request, d *directory, u store.DirectoryUser) {
	in, err := h.cfg.Store.DirectorySignIn(r.Context(), u, h.cookie(r, sessionCookie))
	if err != nil {
		pr := h.failure(w, r, "Try again in a moment.")
		h.log.Error("directory sign-in failed", "directory", d.Name, "outcome", pr.Code, "error", err.Error())
		h.fail(w, pr)
		return
	}
	if old := h.cookie(r, sessionCookie); old != "" {
		// The session this sign-in replaces ends with it (a pending one DirectorySignIn
		// took over is gone already, which is no error).
		if err := h.cfg.Store.DeleteSession(r.Context(), old); err != nil {
			h.log.Error("ending previous session failed", "error", err.Error())
		}
	}
	h.log.Info("signed in", "outcome", "signed_in", "directory", d.Name, "first_sight", in.Session.Pending)
	h.signedIn(w, r, in.Token, in.Session)
}

// directorySwitchData is what the directory's switch question shows.
type directorySwitchData struct {
	Name, Label, CSRF string
	Current           *store.Session
	Target            *store.LoginTarget
	User              store.DirectoryUser
}

// askDirectorySwitch asks the person whether to leave cur, a session of another account,
// for the directory user u, as a login link asks (switchesAccount): a sign-in started by
// another site (a link to /app/directory/{name}/signin, which a provider with a session
// answers at once) must not swap the person's session silently. u waits, verified, in the
// flow cookie for switchTTL; the question's form posts to directorySwitch.
func (h *Handler) askDirectorySwitch(w http.ResponseWriter, r *http.Request, d *directory, u store.DirectoryUser, cur *store.Session, target *store.LoginTarget) {
	h.setDirectoryCookie(w, r, h.signFlow(directoryFlow{Directory: d.Name, User: &u, Expires: h.cfg.Now().Add(switchTTL).Unix()}), int(switchTTL/time.Second))
	h.log.Info("directory sign-in asks to switch account", "directory", d.Name, "outcome", "switch_asked")
	h.render(w, http.StatusOK, "directory-switch", directorySwitchData{Name: d.Name, Label: d.Label, CSRF: h.csrfToken(w, r),
		Current: cur, Target: target, User: u})
}

// directorySwitch answers the switch question (POST /app/directory/{name}/callback, CSRF):
// the verified directory user its flow cookie holds is signed in, in place of the
// browser's session. The cookie ends first, so an answer counts once.
func (h *Handler) directorySwitch(w http.ResponseWriter, r *http.Request) {
	d := h.dirs.byName[r.PathValue("name")]
	if d == nil {
		h.fail(w, problem.New(problem.CodeNotFound, ""))
		return
	}
	if !h.readForm(w, r, "directory sign-in refused", "Sign in again.") {
		return
	}
	raw := h.cookie(r, directoryCookie)
	h.setDirectoryCookie(w, r, "", -1)
	f, ok := h.openFlow(raw)
	if !ok || f.Directory != d.Name || f.User == nil || r.PostFormValue("switch") != "yes" {
		h.refuse(w, &d.oidcClient, directoryRefusals.stateInvalid)
		return
	}
	h.directoryStart(w, r, d, *f.User)
}

// verifyIDToken verifies rawID as finishFlow does (verifyToken) and reads the directory
// user from it; on failure it returns the refusal's code.
func (h *Handler) verifyIDToken(ctx context.Context, d *directory, p *oidc.Provider, rawID, nonce string) (u store.DirectoryUser, claims map[string]any, _ problem.Code) {
	id, claims, code := h.verifyToken(ctx, &d.oidcClient, p, rawID, nonce)
	if code != "" {
		return u, nil, problem.Code(code)
	}
	return d.user(id, claims), claims, ""
}

// user is the directory user a verified ID token names.
func (d *directory) user(id *oidc.IDToken, claims map[string]any) store.DirectoryUser {
	str := func(k string) string { s, _ := claims[k].(string); return s }
	u := store.DirectoryUser{Issuer: id.Issuer, Subject: id.Subject, Username: str(d.UserClaim), Firstname: str("given_name"),
		Lastname: str("family_name"), Partner: d.Partner, PartnerOrgID: d.Organization}
	if v, _ := claims["email_verified"].(bool); v {
		// Only shown, prefilled on the first-sight page: never matched against accounts.
		u.Email = str("email")
	}
	if u.Username == "" {
		u.Username = u.Subject
	}
	return u
}

// userInfo fills the names and e-mail the ID token left out (many providers give them
// only at the userinfo endpoint) from the provider's userinfo for the same subject. They
// are shown on the first-sight page only; a failure leaves them empty.
func (h *Handler) userInfo(ctx context.Context, d *directory, p *oidc.Provider, tok *oauth2.Token, u *store.DirectoryUser) {
	info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil || info.Subject != u.Subject {
		h.log.Info("directory user info not read", "directory", d.Name)
		return
	}
	var c map[string]any
	if err := info.Claims(&c); err != nil {
		return
	}
	str := func(k string) string { s, _ := c[k].(string); return s }
	u.Firstname, u.Lastname = str("given_name"), str("family_name")
	if u.Email == "" && info.EmailVerified {
		u.Email = info.Email
	}
	if v := str(d.UserClaim); v != "" && u.Username == u.Subject {
		u.Username = v
	}
}

// directorySignOutData is what the directory's sign-out page shows.
type directorySignOutData struct {
	*directory
	CSRF string
	// Auto posts the form at once, by the page's own script.
	Auto bool
}

// directorySignOutPage answers GET /app/directory/{name}/signin?signout=1, where the
// desktop wrapper signs out (its AdfsUrl with signout=1, as the original wrapper did): a
// page whose form posts the sign-out (directorySignOut) under the CSRF rules. A GET ends
// no session, or a link or an image on any site could sign a person out. When the person's
// own browser asked for the page (Sec-Fetch-Site: none, as for an address typed or a
// bookmark, and the wrapper's own navigation) or the service's own page did (same-origin),
// its script posts the form at once; asked for by another site, it waits for the button.
func (h *Handler) directorySignOutPage(w http.ResponseWriter, r *http.Request, d *directory) {
	site := r.Header.Get("Sec-Fetch-Site")
	data := directorySignOutData{directory: d, CSRF: h.csrfToken(w, r), Auto: site == "none" || site == "same-origin"}
	scripts := noScript
	if data.Auto {
		scripts = ownScripts
	}
	// The post's answer sends the browser on to the provider's logout: the form may.
	targets := d.logoutOrigin(r.Context())
	w.Header().Set("Content-Security-Policy", h.csp(scripts, h.cfg.FrameAncestors, targets...))
	h.render(w, http.StatusOK, "directory-signout", data)
}

// directorySignOut ends the service session (POST /app/directory/{name}/signout, with the
// CSRF token of the sign-out page) and, when the provider offers RP-initiated logout,
// sends the browser on to end the directory session too.
func (h *Handler) directorySignOut(w http.ResponseWriter, r *http.Request) {
	d := h.dirs.byName[r.PathValue("name")]
	if d == nil {
		h.fail(w, problem.New(problem.CodeNotFound, ""))
		return
	}
	if !h.readForm(w, r, "sign-out refused", "Reload the page and try again.") || !h.endSession(w, r) {
		return
	}
	back := ""
	if d.PostLogoutRedirect {
		back = h.public.String() + "/app/signed-out"
	}
	target := d.logoutTarget(r.Context(), "", back, "/app/signed-out")
	http.Redirect(w, r, target, http.StatusSeeOther)
}
