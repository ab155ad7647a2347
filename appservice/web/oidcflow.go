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
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/partnergate/partnergate/problem"
)

// oidcClient is the service as a relying party of one OpenID Connect provider: a
// directory's (directory.go) or a national eID's (eid.go). Both sign in by the same flow,
// written once here: the authorization code flow with PKCE, state and nonce, go-oidc and
// x/oauth2 doing the discovery, the exchange and every token check. The provider is
// discovered on first use (a provider down at start must not keep the service from
// starting) and kept.
type oidcClient struct {
	// base is the path of the sign-in's URLs: base+"/signin", base+"/callback" (the
	// redirect URI registered at the provider) and base+"/signout".
	base string
	// flow names the sign-in in its flow cookie: a flow started for one provider is never
	// finished at another.
	flow                           string
	issuer, clientID, clientSecret string
	scopes                         []string
	refusals                       *oidcRefusals
	mu                             sync.Mutex
	provider                       *oidc.Provider
	logout                         string // the end_session_endpoint, when the provider offers RP-initiated logout
}

// oidcRefusals are the codes and details (in English: catalogue server.* texts) a kind of
// sign-in answers its flow's failures with, and the words of its log lines.
type oidcRefusals struct {
	// log is the sign-in's name in the log ("directory sign-in"); key the attribute that
	// names the provider ("directory").
	log, key                                                       string
	unavailable, stateInvalid, refused, tokenInvalid, tokenExpired problem.Problem
}

// checkClientName checks the name of a provider of kind what (its word in the URLs) and
// that no other of its list has it (taken).
func checkClientName(what, name string, taken bool) error {
	switch {
	case !directoryName.MatchString(name):
		return fmt.Errorf("%s name %q: want lower-case letters, digits and '-'", what, name)
	case taken:
		return fmt.Errorf("%s %q configured twice", what, name)
	}
	return nil
}

// name is the provider's name in the service's configuration, for the log.
func (c *oidcClient) name() string {
	_, n, _ := strings.Cut(strings.TrimPrefix(c.base, "/app/"), "/")
	return n
}

func (c *oidcClient) discover(ctx context.Context) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, c.issuer)
	if err != nil {
		return nil, err
	}
	var extra struct {
		EndSession string `json:"end_session_endpoint"`
	}
	if err := p.Claims(&extra); err == nil {
		c.logout = extra.EndSession
	}
	c.provider = p
	return p, nil
}

// discoverOrFail returns c's provider, or answers 503 (the kind's unavailable) when its
// discovery document cannot be read (a provider that is down).
func (h *Handler) discoverOrFail(w http.ResponseWriter, r *http.Request, c *oidcClient) (*oidc.Provider, bool) {
	p, err := c.discover(r.Context())
	if err != nil {
		h.log.Error(c.refusals.log+" failed", c.refusals.key, c.name(), "outcome", c.refusals.unavailable.Code, "error", err.Error())
		w.Header().Set("Retry-After", retryAfter)
		h.fail(w, c.refusals.unavailable)
		return nil, false
	}
	return p, true
}

func (h *Handler) oauthConfig(c *oidcClient, p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: c.clientID, ClientSecret: c.clientSecret, Endpoint: p.Endpoint(),
		RedirectURL: h.public.String() + c.base + "/callback",
		Scopes:      append([]string{oidc.ScopeOpenID}, c.scopes...),
	}
}

// startFlow sends the browser to c's authorization endpoint with a new state, nonce and
// PKCE verifier, kept in the signed flow cookie until the callback; opts are further
// parameters of the request (login_hint, acr_values).
func (h *Handler) startFlow(w http.ResponseWriter, r *http.Request, c *oidcClient, opts ...oauth2.AuthCodeOption) {
	p, ok := h.discoverOrFail(w, r, c)
	if !ok {
		return
	}
	f := directoryFlow{Directory: c.flow, State: randomWord(), Nonce: randomWord(), Verifier: oauth2.GenerateVerifier(),
		Expires: h.cfg.Now().Add(directoryTTL).Unix()}
	h.setDirectoryCookie(w, r, h.signFlow(f), int(directoryTTL/time.Second))
	opts = append([]oauth2.AuthCodeOption{oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)}, opts...)
	http.Redirect(w, r, h.oauthConfig(c, p).AuthCodeURL(f.State, opts...), http.StatusSeeOther)
}

// oidcAnswer is a provider's answer that finishFlow verified.
type oidcAnswer struct {
	provider *oidc.Provider
	token    *oauth2.Token
	id       *oidc.IDToken
	claims   map[string]any
}

// finishFlow checks a callback of c (GET base/callback) and redeems it: the state must be
// the one this browser's flow cookie holds and used for the first time by the database's
// record (UseDirectoryState), the code is exchanged with the PKCE verifier, and the ID
// token must be the provider's, for our client id, unexpired, with the cookie's nonce. The
// cookie ends first. On a failure it answers the refusal itself and returns false.
func (h *Handler) finishFlow(w http.ResponseWriter, r *http.Request, c *oidcClient) (*oidcAnswer, bool) {
	raw := h.cookie(r, directoryCookie)
	h.setDirectoryCookie(w, r, "", -1)
	f, ok := h.openFlow(raw)
	q := r.URL.Query()
	if !ok || f.Directory != c.flow || f.User != nil || q.Get("state") == "" || !hmac.Equal([]byte(q.Get("state")), []byte(f.State)) {
		h.refuse(w, c, c.refusals.stateInvalid)
		return nil, false
	}
	if fresh, err := h.cfg.Store.UseDirectoryState(r.Context(), f.State, time.Unix(f.Expires, 0)); err != nil {
		pr := h.failure(w, r, "Try again in a moment.")
		h.log.Error(c.refusals.log+" failed", c.refusals.key, c.name(), "outcome", pr.Code, "error", err.Error())
		h.fail(w, pr)
		return nil, false
	} else if !fresh {
		h.refuse(w, c, c.refusals.stateInvalid, "reason", "state_used")
		return nil, false
	}
	if q.Get("error") != "" || q.Get("code") == "" {
		h.refuse(w, c, c.refusals.refused)
		return nil, false
	}
	p, ok := h.discoverOrFail(w, r, c)
	if !ok {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	tok, err := h.oauthConfig(c, p).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// The provider refused the code: used before, expired, or not ours. Its error
			// code only (never the code itself) goes to the log.
			h.refuse(w, c, c.refusals.refused, "provider_error", re.ErrorCode)
			return nil, false
		}
		h.log.Error(c.refusals.log+" failed", c.refusals.key, c.name(), "outcome", c.refusals.unavailable.Code, "error", "exchanging the code failed")
		w.Header().Set("Retry-After", retryAfter)
		h.fail(w, c.refusals.unavailable)
		return nil, false
	}
	rawID, _ := tok.Extra("id_token").(string)
	id, claims, code := h.verifyToken(ctx, c, p, rawID, f.Nonce)
	if code != "" {
		pr := c.refusals.tokenInvalid
		if code == c.refusals.tokenExpired.Code {
			pr = c.refusals.tokenExpired
		}
		h.refuse(w, c, pr)
		return nil, false
	}
	return &oidcAnswer{provider: p, token: tok, id: id, claims: claims}, true
}

// verifyToken checks rawID with go-oidc (signature by the provider's keys, issuer,
// audience our client id, expiry by the directory clock) and the nonce, and reads its
// claims; on failure it returns the refusal's code.
func (h *Handler) verifyToken(ctx context.Context, c *oidcClient, p *oidc.Provider, rawID, nonce string) (*oidc.IDToken, map[string]any, string) {
	if rawID == "" {
		return nil, nil, c.refusals.tokenInvalid.Code
	}
	v := p.Verifier(&oidc.Config{ClientID: c.clientID, Now: h.directoryNow})
	id, err := v.Verify(ctx, rawID)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return nil, nil, c.refusals.tokenExpired.Code
		}
		return nil, nil, c.refusals.tokenInvalid.Code
	}
	if !hmac.Equal([]byte(id.Nonce), []byte(nonce)) {
		return nil, nil, c.refusals.tokenInvalid.Code
	}
	var claims map[string]any
	if err := id.Claims(&claims); err != nil {
		return nil, nil, c.refusals.tokenInvalid.Code
	}
	return id, claims, ""
}

// refuse answers a sign-in of c refused with p: a person's page, a log line at info with
// attrs, without the token, code, state or any claim's value.
func (h *Handler) refuse(w http.ResponseWriter, c *oidcClient, p problem.Problem, attrs ...any) {
	h.log.Info(c.refusals.log+" refused", append([]any{c.refusals.key, c.name(), "outcome", p.Code}, attrs...)...)
	h.fail(w, p)
}

func (h *Handler) directoryNow() time.Time {
	if h.cfg.DirectoryNow != nil {
		return h.cfg.DirectoryNow()
	}
	return h.cfg.Now()
}

// logoutOrigin is the origin of c's end_session_endpoint, for the CSP of a page whose form
// posts the sign-out that goes on there; none when the provider offers no logout.
func (c *oidcClient) logoutOrigin(ctx context.Context) []string {
	if _, err := c.discover(ctx); err != nil || c.logout == "" {
		return nil
	}
	if u, err := url.Parse(c.logout); err == nil {
		if o, ok := originOf(u.Scheme, u.Host); ok && !strings.ContainsAny(o, " ;,'") {
			return []string{o}
		}
	}
	return nil
}

// logoutTarget is where a sign-out of c sends the browser once the service session has
// ended: the provider's end_session_endpoint (logoutURL) when it offers one, with
// post_logout_redirect_uri back when back is set, or else fallback.
func (c *oidcClient) logoutTarget(ctx context.Context, idTokenHint, back, fallback string) string {
	if _, err := c.discover(ctx); err == nil && c.logout != "" {
		if u, ok := logoutURL(c.logout, c.clientID, idTokenHint, back); ok {
			return u
		}
	}
	return fallback
}

// logoutURL is the provider's end_session_endpoint with client_id, id_token_hint when
// hint is set and post_logout_redirect_uri when back is, added to the query it may have
// already (Azure AD B2C's names its policy there); ok is false for an endpoint that is no
// absolute http(s) URL.
func logoutURL(endpoint, clientID, hint, back string) (string, bool) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", false
	}
	q := u.Query()
	q.Set("client_id", clientID)
	if hint != "" {
		q.Set("id_token_hint", hint)
	}
	if back != "" {
		q.Set("post_logout_redirect_uri", back)
	}
	u.RawQuery = q.Encode()
	return u.String(), true
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
	if !ok || len(raw) > 4000 || !hmac.Equal([]byte(mac), []byte(h.flowMAC(p))) {
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
