package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
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
)

// directoryTTL is how long a person has at the provider's login form.
const directoryTTL = 10 * time.Minute

// directoryFlow is the signed content of directoryCookie.
type directoryFlow struct {
	Directory string `json:"d"`
	State     string `json:"s"`
	Nonce     string `json:"n"`
	Verifier  string `json:"v"`
	Expires   int64  `json:"e"`
}

// directories holds each configured directory's provider, discovered on first use (a
// provider down at start must not keep the service from starting) and kept.
type directories struct {
	byName map[string]*directory
	list   []*directory
}

type directory struct {
	Directory
	mu       sync.Mutex
	provider *oidc.Provider
	logout   string // the end_session_endpoint, when the provider offers RP-initiated logout
}

func newDirectories(ds []Directory) (*directories, error) {
	out := &directories{byName: map[string]*directory{}}
	for _, d := range ds {
		switch {
		case !directoryName.MatchString(d.Name):
			return nil, fmt.Errorf("directory name %q: want lower-case letters, digits and '-'", d.Name)
		case out.byName[d.Name] != nil:
			return nil, fmt.Errorf("directory %q configured twice", d.Name)
		case d.Issuer == "" || d.ClientID == "" || d.Partner == "" || d.Label == "":
			return nil, fmt.Errorf("directory %q needs a label, a partner, an issuer and a client id", d.Name)
		}
		if d.UserClaim == "" {
			d.UserClaim = "preferred_username"
		}
		dd := &directory{Directory: d}
		out.byName[d.Name], out.list = dd, append(out.list, dd)
	}
	return out, nil
}

// forOrganization returns the directories that an organization's staff may sign in with:
// its own and its partner's; every directory when org is nil.
func (ds *directories) forOrganization(org *store.Organization) []*directory {
	if org == nil {
		return ds.list
	}
	var out []*directory
	for _, d := range ds.list {
		if d.Partner == org.Partner && (d.Organization == "" || d.Organization == org.PartnerID) {
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

// discover returns the directory's provider, fetching its discovery document the first
// time; a failure is tried again on the next sign-in.
// discover returns d's provider, or answers 503 directory_unavailable when its discovery
// document cannot be read (a provider that is down).
func (h *Handler) discover(w http.ResponseWriter, r *http.Request, d *directory) (*oidc.Provider, bool) {
	p, err := d.discover(r.Context())
	if err != nil {
		h.log.Error("directory sign-in failed", "directory", d.Name, "outcome", problem.CodeDirectoryUnavailable, "error", err.Error())
		w.Header().Set("Retry-After", retryAfter)
		h.fail(w, problem.New(problem.CodeDirectoryUnavailable, msgDirectoryUnavailable))
		return nil, false
	}
	return p, true
}

func (d *directory) discover(ctx context.Context) (*oidc.Provider, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.provider != nil {
		return d.provider, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, d.Issuer)
	if err != nil {
		return nil, err
	}
	var extra struct {
		EndSession string `json:"end_session_endpoint"`
	}
	if err := p.Claims(&extra); err == nil {
		d.logout = extra.EndSession
	}
	d.provider = p
	return p, nil
}

func (h *Handler) oauthConfig(d *directory, p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: d.ClientID, ClientSecret: d.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: h.public.String() + "/app/directory/" + d.Name + "/callback",
		Scopes:      []string{oidc.ScopeOpenID, "profile", "email"},
	}
}

// directorySignIn starts a directory sign-in (GET /app/directory/{name}/signin): it sends
// the browser to the provider's login, with ?signon=<user> as the provider's login_hint.
// With ?signout=1 it signs out instead (directorySignOut): the desktop wrapper's sign-out
// goes there.
func (h *Handler) directorySignIn(w http.ResponseWriter, r *http.Request) {
	d := h.dirs.byName[r.PathValue("name")]
	if d == nil {
		h.fail(w, problem.New(problem.CodeNotFound, ""))
		return
	}
	if r.URL.Query().Get("signout") == "1" {
		h.directorySignOut(w, r, d)
		return
	}
	p, ok := h.discover(w, r, d)
	if !ok {
		return
	}
	f := directoryFlow{Directory: d.Name, State: randomWord(), Nonce: randomWord(), Verifier: oauth2.GenerateVerifier(),
		Expires: h.cfg.Now().Add(directoryTTL).Unix()}
	h.setDirectoryCookie(w, r, h.signFlow(f), int(directoryTTL/time.Second))
	opts := []oauth2.AuthCodeOption{oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)}
	if hint := strings.TrimSpace(r.URL.Query().Get("signon")); hint != "" && len(hint) <= 256 {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", hint))
	}
	http.Redirect(w, r, h.oauthConfig(d, p).AuthCodeURL(f.State, opts...), http.StatusSeeOther)
}

// directoryCallback finishes a directory sign-in (GET /app/directory/{name}/callback): the
// state must be the one this browser's cookie holds, the code is exchanged with the PKCE
// verifier, and the ID token must be the provider's, for our client id, unexpired and with
// the cookie's nonce. The cookie ends first, so a callback is good once.
func (h *Handler) directoryCallback(w http.ResponseWriter, r *http.Request) {
	d := h.dirs.byName[r.PathValue("name")]
	if d == nil {
		h.fail(w, problem.New(problem.CodeNotFound, ""))
		return
	}
	raw := h.cookie(r, directoryCookie)
	h.setDirectoryCookie(w, r, "", -1)
	f, ok := h.openFlow(raw)
	q := r.URL.Query()
	if !ok || f.Directory != d.Name || q.Get("state") == "" || !hmac.Equal([]byte(q.Get("state")), []byte(f.State)) {
		h.directoryRefused(w, d, problem.CodeDirectoryStateInvalid, msgDirectoryStateInvalid)
		return
	}
	if q.Get("error") != "" || q.Get("code") == "" {
		h.directoryRefused(w, d, problem.CodeDirectoryRefused, msgDirectoryRefused)
		return
	}
	p, ok := h.discover(w, r, d)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	tok, err := h.oauthConfig(d, p).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// The provider refused the code: used before, expired, or not ours. Its error
			// code only (never the code itself) goes to the log.
			h.log.Info("directory sign-in refused", "directory", d.Name, "outcome", problem.CodeDirectoryRefused, "provider_error", re.ErrorCode)
			h.fail(w, problem.New(problem.CodeDirectoryRefused, msgDirectoryRefused))
			return
		}
		h.log.Error("directory sign-in failed", "directory", d.Name, "outcome", problem.CodeDirectoryUnavailable, "error", "exchanging the code failed")
		w.Header().Set("Retry-After", retryAfter)
		h.fail(w, problem.New(problem.CodeDirectoryUnavailable, msgDirectoryUnavailable))
		return
	}
	rawID, _ := tok.Extra("id_token").(string)
	u, code := h.verifyIDToken(ctx, d, p, rawID, f.Nonce)
	if code != "" {
		detail := msgDirectoryTokenInvalid
		if code == problem.CodeDirectoryTokenExpired {
			detail = msgDirectoryTokenExpired
		}
		h.directoryRefused(w, d, code, detail)
		return
	}
	if u.Firstname == "" && u.Lastname == "" {
		h.userInfo(ctx, d, p, tok, &u)
	}
	in, err := h.cfg.Store.DirectorySignIn(r.Context(), u, h.cookie(r, sessionCookie))
	if err != nil {
		pr := h.failure(w, r, "Try again in a moment.")
		h.log.Error("directory sign-in failed", "directory", d.Name, "outcome", pr.Code, "error", err.Error())
		h.fail(w, pr)
		return
	}
	h.log.Info("signed in", "outcome", "signed_in", "directory", d.Name, "first_sight", in.Session.Pending)
	h.signedIn(w, r, in.Token, in.Session)
}

// verifyIDToken checks rawID with go-oidc (signature by the provider's keys, issuer,
// audience our client id, expiry by the directory clock) and the nonce, and reads the
// user from it; on failure it returns the refusal's code.
func (h *Handler) verifyIDToken(ctx context.Context, d *directory, p *oidc.Provider, rawID, nonce string) (store.DirectoryUser, problem.Code) {
	var u store.DirectoryUser
	if rawID == "" {
		return u, problem.CodeDirectoryTokenInvalid
	}
	v := p.Verifier(&oidc.Config{ClientID: d.ClientID, Now: h.directoryNow})
	id, err := v.Verify(ctx, rawID)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return u, problem.CodeDirectoryTokenExpired
		}
		return u, problem.CodeDirectoryTokenInvalid
	}
	if !hmac.Equal([]byte(id.Nonce), []byte(nonce)) {
		return u, problem.CodeDirectoryTokenInvalid
	}
	var claims map[string]any
	if err := id.Claims(&claims); err != nil {
		return u, problem.CodeDirectoryTokenInvalid
	}
	str := func(k string) string { s, _ := claims[k].(string); return s }
	u = store.DirectoryUser{Issuer: id.Issuer, Subject: id.Subject, Username: str(d.UserClaim), Firstname: str("given_name"),
		Lastname: str("family_name"), Partner: d.Partner, PartnerOrgID: d.Organization}
	if v, _ := claims["email_verified"].(bool); v {
		// Only shown, prefilled on the first-sight page: never matched against accounts.
		u.Email = str("email")
	}
	if u.Username == "" {
		u.Username = u.Subject
	}
	return u, ""
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

func (h *Handler) directoryNow() time.Time {
	if h.cfg.DirectoryNow != nil {
		return h.cfg.DirectoryNow()
	}
	return h.cfg.Now()
}

// directoryRefused answers a directory sign-in refused for code: a person's page, a log
// line at info without the token, code or state.
func (h *Handler) directoryRefused(w http.ResponseWriter, d *directory, code problem.Code, detail string) {
	h.log.Info("directory sign-in refused", "directory", d.Name, "outcome", code)
	h.fail(w, problem.New(code, detail))
}

// directorySignOut ends the service session and, when the provider offers RP-initiated
// logout, sends the browser on to end the directory session too.
func (h *Handler) directorySignOut(w http.ResponseWriter, r *http.Request, d *directory) {
	if !h.endSession(w, r) {
		return
	}
	target := "/app/signed-out"
	if _, err := d.discover(r.Context()); err == nil && d.logout != "" {
		q := url.Values{"client_id": {d.ClientID}}
		if d.PostLogoutRedirect {
			q.Set("post_logout_redirect_uri", h.public.String()+"/app/signed-out")
		}
		target = d.logout + "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

func (h *Handler) setDirectoryCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(r, directoryCookie), Value: value, Path: "/", HttpOnly: true,
		Secure: h.https(r), SameSite: http.SameSiteLaxMode, MaxAge: maxAge})
}

func (h *Handler) flowMAC(payload string) string {
	m := hmac.New(sha256.New, h.csrfKey)
	m.Write([]byte("partnergate-directory-flow-v1\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (h *Handler) signFlow(f directoryFlow) string {
	b, _ := json.Marshal(f)
	p := base64.RawURLEncoding.EncodeToString(b)
	return p + "." + h.flowMAC(p)
}

// openFlow checks the cookie's signature and expiry and returns its content.
func (h *Handler) openFlow(raw string) (directoryFlow, bool) {
	var f directoryFlow
	p, mac, ok := strings.Cut(raw, ".")
	if !ok || len(raw) > 1024 || !hmac.Equal([]byte(mac), []byte(h.flowMAC(p))) {
		return f, false
	}
	b, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || json.Unmarshal(b, &f) != nil || h.cfg.Now().Unix() >= f.Expires {
		return f, false
	}
	return f, true
}

func randomWord() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}
