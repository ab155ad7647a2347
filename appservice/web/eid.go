package web

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/oauth2"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/nationalid"
	"github.com/partnergate/partnergate/problem"
)

// EIDProvider is a national electronic ID's OpenID Connect provider, where a member signs
// in to Go with their own eID: ID-porten (Norway), or a broker of BankID, Freja eID or MitID
// (Sweden, Denmark). The identity number in the ID token's NumberClaim is matched to the
// member by the keyed hash of the contacts' ssn (store.SignInByNationalID), and the session
// sees the member's plans of every clinic. The flow is the directory sign-in's
// (oidcflow.go): authorization code with PKCE, state and nonce.
type EIDProvider struct {
	// Name is the provider's word in its URLs (/app/eid/{name}/signin, …/callback, the
	// redirect URI to register): lower-case letters, digits and '-'.
	Name string `json:"name"`
	// Label is what the Go start page's button names: "Sign in with <label>".
	Label string `json:"label"`
	// Issuer is the provider's issuer URL, exactly as its discovery document spells it.
	Issuer string `json:"issuer"`
	// ClientID is the service's client id at the provider.
	ClientID string `json:"client_id"`
	// ClientSecretEnv names the environment variable holding the client secret.
	ClientSecretEnv string `json:"client_secret_env"`
	// ClientSecret is the secret read from ClientSecretEnv.
	ClientSecret string `json:"-"`
	// Country is the country of the identity numbers the provider gives: "NO" (11 digits),
	// "SE" (personnummer, 12 digits) or "DK" (CPR, 10 digits). The claim's value is
	// normalised (separators removed) and checked as that country's number.
	Country nationalid.Country `json:"country"`
	// NumberClaim is the ID token claim that carries the identity number: "pid" for
	// ID-porten, the broker's own name for others.
	NumberClaim string `json:"number_claim"`
	// MinACR is the lowest level of assurance accepted: the ID token's acr must be it or
	// one above it in ACRLevels. It is also asked for, as acr_values.
	MinACR string `json:"min_acr"`
	// ACRLevels are the provider's levels of assurance, lowest first. Empty for ID-porten's
	// (idporten-loa-low, -substantial, -high) and eIDAS's (http://eidas.europa.eu/LoA/low,
	// substantial, high), which are known; a broker with levels of its own names them.
	ACRLevels []string `json:"acr_levels,omitempty"`
	// Scopes are asked for besides openid: those the provider wants for the number claim.
	Scopes []string `json:"scopes,omitempty"`
	// PostLogoutRedirect, when true, asks the provider's RP-initiated logout to send the
	// browser back to <public URL>/go, which must then be registered at the provider as a
	// post-logout redirect URI.
	PostLogoutRedirect bool `json:"post_logout_redirect,omitempty"`
}

// knownACRLevels are the ladders of levels of assurance an EIDProvider need not name.
var knownACRLevels = [][]string{
	{"idporten-loa-low", "idporten-loa-substantial", "idporten-loa-high"},
	{"http://eidas.europa.eu/LoA/low", "http://eidas.europa.eu/LoA/substantial", "http://eidas.europa.eu/LoA/high"},
}

// The eID refusals' details, in English: the catalogue's server.eid_* texts.
const (
	msgEIDUnavailable   = "The electronic ID service does not answer. Try again in a moment."
	msgEIDStateInvalid  = "This sign-in was not started in this browser, was used already or took too long. Sign in again."
	msgEIDRefused       = "The electronic ID service did not sign you in. Sign in again."
	msgEIDTokenInvalid  = "The electronic ID service's answer could not be verified. Sign in again."
	msgEIDTokenExpired  = "The electronic ID service's answer has expired. Check your device's clock and sign in again."
	msgEIDAssuranceLow  = "This electronic ID does not give a high enough level of security for Go. Sign in with another electronic ID, or at a higher level."
	msgEIDNumberInvalid = "The electronic ID service did not give a national identity number that Go can use."
	msgEIDUnknown       = "No plans have been prepared for you yet: ask your clinic."
)

// eidRefusals are the eID sign-in's answers to its flow's failures.
var eidRefusals = &oidcRefusals{log: "eid sign-in", key: "eid",
	unavailable:  problem.New(problem.CodeEIDUnavailable, msgEIDUnavailable),
	stateInvalid: problem.New(problem.CodeEIDStateInvalid, msgEIDStateInvalid),
	refused:      problem.New(problem.CodeEIDRefused, msgEIDRefused),
	tokenInvalid: problem.New(problem.CodeEIDTokenInvalid, msgEIDTokenInvalid),
	tokenExpired: problem.New(problem.CodeEIDTokenExpired, msgEIDTokenExpired),
}

type eidProvider struct {
	EIDProvider
	oidcClient
	levels []string
}

type eidProviders struct {
	byName map[string]*eidProvider
	list   []*eidProvider
}

func newEIDProviders(ps []EIDProvider) (*eidProviders, error) {
	out := &eidProviders{byName: map[string]*eidProvider{}}
	for _, p := range ps {
		if err := checkClientName("eid provider", p.Name, out.byName[p.Name] != nil); err != nil {
			return nil, err
		}
		switch {
		case p.Issuer == "" || p.ClientID == "" || p.Label == "" || p.NumberClaim == "":
			return nil, fmt.Errorf("eid provider %q needs a label, an issuer, a client id and a number_claim", p.Name)
		case p.Country != nationalid.Norway && p.Country != nationalid.Sweden && p.Country != nationalid.Denmark:
			return nil, fmt.Errorf("eid provider %q: country %q, want NO, SE or DK", p.Name, p.Country)
		case p.MinACR == "":
			return nil, fmt.Errorf("eid provider %q needs a min_acr: the lowest level of assurance accepted", p.Name)
		}
		levels := p.ACRLevels
		if len(levels) == 0 {
			for _, l := range knownACRLevels {
				if slices.Contains(l, p.MinACR) {
					levels = l
				}
			}
		}
		if !slices.Contains(levels, p.MinACR) {
			return nil, fmt.Errorf("eid provider %q: min_acr %q is not one of its acr_levels (name them, lowest first, for a provider other than ID-porten or eIDAS)", p.Name, p.MinACR)
		}
		pp := &eidProvider{EIDProvider: p, levels: levels, oidcClient: oidcClient{base: "/app/eid/" + p.Name, flow: "eid:" + p.Name,
			issuer: p.Issuer, clientID: p.ClientID, clientSecret: p.ClientSecret, scopes: p.Scopes, refusals: eidRefusals}}
		out.byName[p.Name], out.list = pp, append(out.list, pp)
	}
	return out, nil
}

// assured reports whether acr, an ID token's, is p's MinACR or above it.
func (p *eidProvider) assured(acr string) bool {
	i := slices.Index(p.levels, acr)
	return i >= 0 && i >= slices.Index(p.levels, p.MinACR)
}

// eidSignIn starts an eID sign-in (GET /app/eid/{name}/signin), asking for MinACR. A
// browser with a session goes to its landing instead: the start page offers the eID only
// to a browser without one, and a link from another site to this address, which a
// provider with a single sign-on session answers at once, must not swap the person's
// session for another.
func (h *Handler) eidSignIn(w http.ResponseWriter, r *http.Request) {
	p := h.eids.byName[r.PathValue("name")]
	if p == nil {
		h.fail(w, problem.New(problem.CodeNotFound, ""))
		return
	}
	if cur := h.session(r); cur != nil && !cur.Pending {
		http.Redirect(w, r, landing(cur), http.StatusSeeOther)
		return
	}
	h.startFlow(w, r, &p.oidcClient, oauth2.SetAuthURLParam("acr_values", p.MinACR))
}

// eidCallback finishes an eID sign-in (GET /app/eid/{name}/callback): finishFlow's checks,
// then the token's acr at MinACR or above, and its number claim a valid number of the
// provider's country. The number is matched to the member (store.SignInByNationalID),
// whose session sees every clinic's plans; a number no member has gets a page saying no
// plans were prepared, and nothing is created. The number is never logged, stored in
// clear or shown.
func (h *Handler) eidCallback(w http.ResponseWriter, r *http.Request) {
	p := h.eids.byName[r.PathValue("name")]
	if p == nil {
		h.fail(w, problem.New(problem.CodeNotFound, ""))
		return
	}
	a, ok := h.finishFlow(w, r, &p.oidcClient)
	if !ok {
		return
	}
	if acr, _ := a.claims["acr"].(string); !p.assured(acr) {
		// The acr names a level, never a person: it may go to the log.
		h.refuse(w, &p.oidcClient, problem.New(problem.CodeEIDAssuranceTooLow, msgEIDAssuranceLow), "acr", acr)
		return
	}
	raw, _ := a.claims[p.NumberClaim].(string)
	n, err := nationalid.Parse(p.Country, raw, h.cfg.Now())
	if err != nil {
		h.refuse(w, &p.oidcClient, problem.New(problem.CodeEIDNumberInvalid, msgEIDNumberInvalid), "claim", p.NumberClaim)
		return
	}
	in, err := h.cfg.Store.SignInByNationalID(r.Context(), n)
	switch {
	case errors.Is(err, store.ErrNationalIDUnknown):
		h.refuse(w, &p.oidcClient, problem.New(problem.CodeEIDPersonUnknown, msgEIDUnknown))
		return
	case err != nil:
		pr := h.failure(w, r, "Try again in a moment.")
		h.log.Error("eid sign-in failed", "eid", p.Name, "outcome", pr.Code, "error", err.Error())
		h.fail(w, pr)
		return
	}
	if old := h.cookie(r, sessionCookie); old != "" {
		// The session this sign-in replaces ends with it.
		if err := h.cfg.Store.DeleteSession(r.Context(), old); err != nil {
			h.log.Error("ending previous session failed", "error", err.Error())
		}
	}
	rawID, _ := a.token.Extra("id_token").(string)
	h.setEIDCookie(w, r, h.sealEID(eidSignOut{Provider: p.Name, IDToken: rawID}), 0)
	h.log.Info("signed in", "outcome", "signed_in", "eid", p.Name, "account_created", in.AccountCreated)
	h.signedIn(w, r, in.Token, in.Session)
}

// eidCookie holds, for an eID session, which provider signed it in and the ID token to
// hint at that provider's logout (ID-porten asks for id_token_hint): sealed with AES-GCM
// under a key of the app secret, since the token names the person and carries the
// identity number. HttpOnly, SameSite=Lax, __Host- over HTTPS; ended by the sign-out.
const eidCookie = "pg_eid"

// eidSignOut is the sealed content of eidCookie.
type eidSignOut struct {
	Provider string `json:"p"`
	IDToken  string `json:"t"`
}

func (h *Handler) eidAEAD() cipher.AEAD {
	block, _ := aes.NewCipher(deriveKey(h.cfg.AppSecret, "partnergate-eid-signout-key-v1")) // 32 bytes: AES-256
	aead, _ := cipher.NewGCM(block)
	return aead
}

func (h *Handler) sealEID(s eidSignOut) string {
	b, _ := json.Marshal(s)
	aead := h.eidAEAD()
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, b, []byte(eidCookie)))
}

func (h *Handler) openEID(raw string) (eidSignOut, bool) {
	var s eidSignOut
	b, err := base64.RawURLEncoding.DecodeString(raw)
	aead := h.eidAEAD()
	if err != nil || len(b) < aead.NonceSize() {
		return s, false
	}
	plain, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte(eidCookie))
	if err != nil || json.Unmarshal(plain, &s) != nil {
		return s, false
	}
	return s, true
}

func (h *Handler) setEIDCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(r, eidCookie), Value: value, Path: "/", HttpOnly: true,
		Secure: h.https(r), SameSite: http.SameSiteLaxMode, MaxAge: maxAge})
}

// eidLogout is where the sign-out of an eID session (eidSession: the session ended was
// one) goes once the service session has ended (signout): the provider's
// end_session_endpoint with the ID token as its hint, when the provider offers one, else
// the Go start page; "" for another session or a browser without an eID session's cookie.
// The cookie ends either way.
func (h *Handler) eidLogout(ctx context.Context, w http.ResponseWriter, r *http.Request, eidSession bool) string {
	raw := h.cookie(r, eidCookie)
	if raw == "" {
		return ""
	}
	h.setEIDCookie(w, r, "", -1)
	if !eidSession {
		return ""
	}
	s, ok := h.openEID(raw)
	p := h.eids.byName[s.Provider]
	if !ok || p == nil {
		return ""
	}
	back := ""
	if p.PostLogoutRedirect {
		back = h.public.String() + "/go"
	}
	return p.logoutTarget(ctx, s.IDToken, back, "/go")
}

// eidLogoutOrigin is the origin of the logout of the provider that signed sess, the
// browser's eID session, in, which the sign-out form's answer redirects to (the page's CSP
// form-action must allow it); none for another session.
func (h *Handler) eidLogoutOrigin(r *http.Request, sess *store.Session) []string {
	if sess == nil || sess.Scope != store.ScopeMember {
		return nil
	}
	s, ok := h.openEID(h.cookie(r, eidCookie))
	if p := h.eids.byName[s.Provider]; ok && p != nil {
		return p.logoutOrigin(r.Context())
	}
	return nil
}

// eidButtons are the Go start page's: every configured eID provider.
type eidButton struct{ Name, Label string }

func (h *Handler) eidButtons() []eidButton {
	var out []eidButton
	for _, p := range h.eids.list {
		out = append(out, eidButton{Name: p.Name, Label: strings.TrimSpace(p.Label)})
	}
	return out
}
