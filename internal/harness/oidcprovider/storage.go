package oidcprovider

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the provider's op.Storage: its users, clients, signing key, and the sign-ins
// and access tokens under way, in memory behind one lock. Every value handed to op is a
// copy, so op never reads what a login changes.
type storage struct {
	key     *rsa.PrivateKey
	keyID   string
	clients map[string]Client
	users   map[string]User   // by ID
	names   map[string]string // username → ID

	mu       sync.Mutex
	requests map[string]*authRequest // by ID
	codes    map[string]string       // code → request ID
	tokens   map[string]accessToken  // by ID
}

// accessToken is what an access token the provider issued stands for.
type accessToken struct {
	subject, client string
	scopes          []string
	expires         time.Time
}

func newStorage(c Config) (*storage, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	s := &storage{key: key, keyID: "provider-key-1", clients: map[string]Client{}, users: map[string]User{}, names: map[string]string{},
		requests: map[string]*authRequest{}, codes: map[string]string{}, tokens: map[string]accessToken{}}
	for _, cl := range c.Clients {
		if cl.ID == "" || s.clients[cl.ID].ID != "" {
			return nil, fmt.Errorf("client %q: want a unique, non-empty id", cl.ID)
		}
		s.clients[cl.ID] = cl
	}
	for _, u := range c.Users {
		if u.ID == "" || u.Username == "" || s.users[u.ID].ID != "" || s.names[u.Username] != "" {
			return nil, fmt.Errorf("user %q (%q): want a unique, non-empty id and username", u.ID, u.Username)
		}
		s.users[u.ID], s.names[u.Username] = u, u.ID
	}
	return s, nil
}

// authRequest is a sign-in under way: the authorization request and, once the login form
// took the user's password, who signed in.
type authRequest struct {
	id        string
	req       oidc.AuthRequest
	subject   string
	acr       string
	authTime  time.Time
	done      bool
	createdAt time.Time
}

func (a *authRequest) GetID() string                      { return a.id }
func (a *authRequest) GetACR() string                     { return a.acr }
func (a *authRequest) GetAudience() []string              { return []string{a.req.ClientID} }
func (a *authRequest) GetAuthTime() time.Time             { return a.authTime }
func (a *authRequest) GetClientID() string                { return a.req.ClientID }
func (a *authRequest) GetNonce() string                   { return a.req.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.req.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.req.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.req.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.req.Scopes }
func (a *authRequest) GetState() string                   { return a.req.State }
func (a *authRequest) GetSubject() string                 { return a.subject }
func (a *authRequest) Done() bool                         { return a.done }

func (a *authRequest) GetAMR() []string {
	if a.done {
		return []string{"pwd"}
	}
	return nil
}

func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.req.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.req.CodeChallenge, Method: a.req.CodeChallengeMethod}
}

// requestTTL is how long a sign-in may stay at the login form.
const requestTTL = 10 * time.Minute

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if slices.Contains(req.Prompt, oidc.PromptNone) {
		return nil, oidc.ErrLoginRequired() // no session is ever kept: every sign-in shows the form
	}
	a := &authRequest{id: randomID(), req: *req, createdAt: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[a.id] = a
	c := *a
	return &c, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.request(id)
}

// request returns a copy of the sign-in id; s.mu is held.
func (s *storage) request(id string) (op.AuthRequest, error) {
	a, ok := s.requests[id]
	if !ok || time.Since(a.createdAt) > requestTTL {
		return nil, errors.New("auth request not found")
	}
	c := *a
	return &c, nil
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.codes[code]
	if !ok {
		return nil, errors.New("code not valid or used")
	}
	return s.request(id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest ends a sign-in once its code was exchanged: the code is good once.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

// checkLogin signs username in to the sign-in id when password is the user's.
func (s *storage) checkLogin(id, username, password string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return errors.New("this sign-in is over; start again from the application")
	}
	u, ok := s.users[s.names[username]]
	if !ok || u.Password != password {
		return errors.New("wrong username or password")
	}
	a.subject, a.acr, a.authTime, a.done = u.ID, u.ACR, time.Now(), true
	return nil
}

// loginHint returns the login_hint of the sign-in id, for the form's username.
func (s *storage) loginHint(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.requests[id]; ok {
		return a.req.LoginHint
	}
	return ""
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	t := accessToken{subject: req.GetSubject(), scopes: slices.Clone(req.GetScopes()), expires: time.Now().Add(5 * time.Minute)}
	if a, ok := req.(*authRequest); ok {
		t.client = a.GetClientID()
	}
	id := randomID()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[id] = t
	return id, t.expires, nil
}

var errNoRefresh = errors.New("refresh tokens are not offered")

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errNoRefresh
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errNoRefresh
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

// TerminateSession ends the user's access tokens at the client: RP-initiated logout.
func (s *storage) TerminateSession(_ context.Context, userID, clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.DeleteFunc(s.tokens, func(_ string, t accessToken) bool { return t.subject == userID && t.client == clientID })
	return nil
}

func (s *storage) RevokeToken(_ context.Context, tokenID, _, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[tokenID]; ok && t.client == clientID {
		delete(s.tokens, tokenID)
	}
	return nil
}

// signingKey is the provider's RS256 key, as op signs with it and publishes it.
type signingKey struct{ s *storage }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.s.key }
func (k signingKey) ID() string                                  { return k.s.keyID }
func (k signingKey) Use() string                                 { return "sig" }

// publicKey is the key as the keys endpoint publishes it.
type publicKey struct{ signingKey }

func (k publicKey) Key() any { return &k.s.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return signingKey{s}, nil }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{signingKey{s}}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, errors.New("client not found")
	}
	return client{c}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if c, ok := s.clients[id]; !ok || c.Secret != secret {
		return errors.New("client unknown or secret wrong")
	}
	return nil
}

// SetUserinfoFromScopes is deprecated in op; SetUserinfoFromRequest does its work.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token's user claims: the user's further claims
// always, the profile and e-mail claims for the scopes op leaves (none for the code flow:
// those come from userinfo, as at most providers).
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	return s.userinfo(info, req.GetSubject(), scopes, true)
}

// SetUserinfoFromToken answers userinfo for an access token the provider issued.
func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || t.subject != subject || time.Now().After(t.expires) {
		return errors.New("access token not valid")
	}
	return s.userinfo(info, subject, t.scopes, false)
}

func (s *storage) userinfo(info *oidc.UserInfo, subject string, scopes []string, idToken bool) error {
	u, ok := s.users[subject]
	if !ok {
		return errors.New("user not found")
	}
	info.Subject = u.ID
	for _, sc := range scopes {
		switch sc {
		case oidc.ScopeProfile:
			info.PreferredUsername, info.GivenName, info.FamilyName = u.Username, u.FirstName, u.LastName
			info.Name = u.FirstName + " " + u.LastName
		case oidc.ScopeEmail:
			info.Email, info.EmailVerified = u.Email, oidc.Bool(u.Email != "")
		}
	}
	if idToken {
		for k, v := range u.Claims {
			info.AppendClaims(k, v)
		}
	}
	return nil
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("introspection is not offered")
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("JWT profile grants are not offered")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("JWT profile grants are not offered")
}

func (s *storage) Health(context.Context) error { return nil }

// client is a Client as op sees it.
type client struct{ c Client }

func (c client) GetID() string                       { return c.c.ID }
func (c client) RedirectURIs() []string              { return c.c.RedirectURIs }
func (c client) PostLogoutRedirectURIs() []string    { return c.c.PostLogoutRedirectURIs }
func (c client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c client) GrantTypes() []oidc.GrantType { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c client) LoginURL(id string) string {
	return loginPath + "?authRequestID=" + url.QueryEscape(id)
}
func (c client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c client) IDTokenLifetime() time.Duration       { return time.Hour }
func (c client) DevMode() bool                        { return false }
func (c client) IsScopeAllowed(string) bool           { return false }
func (c client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c client) ClockSkew() time.Duration             { return 0 }

func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// randomID is a fresh identifier of a sign-in or an access token.
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

var (
	_ op.Storage                   = (*storage)(nil)
	_ op.CanSetUserinfoFromRequest = (*storage)(nil)
	_ op.AuthRequest               = (*authRequest)(nil)
	_ op.Client                    = client{}
	_ op.SigningKey                = signingKey{}
	_ op.Key                       = publicKey{}
)
