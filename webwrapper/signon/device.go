package signon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The device sign-on (docs/webwrapper.md, Single sign-on; the service's side is
// docs/appservice.md, Desktop sign-on): when the page reports a sign-in of a linked
// external user, the wrapper takes the window's session token from the browser (the
// HttpOnly cookie no script of the page can read) and asks the service for a credential
// bound to the account, the external user and this installation (POST
// /app/device/credential, Authorization: Bearer). At the next start, before the window
// opens, it exchanges the credential for a fresh session (POST /app/device/signin), which
// answers the next credential: each is used once. Forgetting the link (close, a sign-out)
// ends it at the service (POST /app/device/signout). The secret travels only in those
// bodies, never in a URL, and is never logged.

// Binding is what the service binds a device sign-on to besides its account.
type Binding struct {
	ExternalUser string `json:"externalUser"`
	Installation string `json:"installation"`
	Computer     string `json:"computer,omitempty"`
}

// Refusals of the service (its stable problem codes).
var (
	// ErrInvalid: the credential is unknown, revoked, expired or was used already
	// (device_signon_invalid, 401); the user signs in with the password.
	ErrInvalid = errors.New("the device sign-on has ended")
	// ErrRefused: the session may not have a device sign-on (device_signon_refused, 403:
	// not an instructor's fresh sign-in), or is no session (session_required, 401).
	ErrRefused = errors.New("the service gives this session no device sign-on")
)

// SessionCookies are the names of the service's session cookie: __Host-pg_session over
// HTTPS, pg_session over plain HTTP (appservice/web/cookie.go).
var SessionCookies = []string{"__Host-pg_session", "pg_session"}

// SessionToken is the service's session token among cookies, "" without one.
func SessionToken(cookies []*http.Cookie) string {
	for _, name := range SessionCookies {
		for _, c := range cookies {
			if c.Name == name && c.Value != "" {
				return c.Value
			}
		}
	}
	return ""
}

// Client calls the service's device sign-on endpoints.
type Client struct {
	// Service is the service's origin, https://svc.example.
	Service string
	// HTTP sends the requests; nil is a client of its own that follows no redirect.
	HTTP *http.Client
}

// httpTimeout bounds each call of the service.
const httpTimeout = 30 * time.Second

func (c *Client) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{
		Timeout: httpTimeout,
		// A secret goes to the service's endpoint and nowhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// post sends body as JSON to path with the given Authorization, and decodes a 2xx answer
// into out (nil: none).
func (c *Client) post(ctx context.Context, path, authorization string, body, out any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.Service, "/")+path, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := c.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", path, err)
	}
	if res.StatusCode/100 != 2 {
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(data, &p)
		switch p.Code {
		case "device_signon_invalid":
			return nil, ErrInvalid
		case "device_signon_refused", "session_required":
			return nil, fmt.Errorf("%w (%s)", ErrRefused, p.Code)
		}
		if p.Code == "" {
			p.Code = "no problem code"
		}
		return nil, fmt.Errorf("%s: %s (%s)", path, res.Status, p.Code)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("%s: reading the answer: %w", path, err)
		}
	}
	return res, nil
}

// Issue asks the service for a device sign-on for the session of token.
func (c *Client) Issue(ctx context.Context, token string, b Binding) (string, error) {
	var out struct {
		Credential string `json:"credential"`
	}
	if _, err := c.post(ctx, "/app/device/credential", "Bearer "+token, b, &out); err != nil {
		return "", err
	}
	if out.Credential == "" {
		return "", errors.New("/app/device/credential: the answer has no credential")
	}
	return out.Credential, nil
}

// SignIn exchanges credential for a session: the next credential, and the session's
// cookies as the service set them.
func (c *Client) SignIn(ctx context.Context, credential string, b Binding) (string, []*http.Cookie, error) {
	in := struct {
		Credential string `json:"credential"`
		Binding
	}{credential, b}
	var out struct {
		Credential string `json:"credential"`
	}
	res, err := c.post(ctx, "/app/device/signin", "", in, &out)
	if err != nil {
		return "", nil, err
	}
	cookies := res.Cookies()
	if out.Credential == "" || SessionToken(cookies) == "" {
		return "", nil, errors.New("/app/device/signin: the answer has no credential or no session")
	}
	return out.Credential, cookies, nil
}

// SignOut ends the device sign-on of credential at the service.
func (c *Client) SignOut(ctx context.Context, credential string) error {
	_, err := c.post(ctx, "/app/device/signout", "", map[string]string{"credential": credential}, nil)
	return err
}

// Device is the device sign-on of one wrapper: its links store, the service, and this
// computer's name. Its methods take turns, so that a sign-out never overtakes an issue.
type Device struct {
	Store    *Store
	Client   *Client
	Computer string
	Log      *slog.Logger

	mu      sync.Mutex
	refused map[[32]byte]bool // sessions the service gave no device sign-on, by token hash
}

func (d *Device) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

func (d *Device) binding(external string) (Binding, error) {
	inst, err := d.Store.Installation()
	if err != nil {
		return Binding{}, err
	}
	return Binding{ExternalUser: strings.TrimSpace(external), Installation: inst, Computer: d.Computer}, nil
}

// SignIn exchanges external's device sign-on for a session and keeps the next one; it
// returns the session's cookies for the window, or none: no device sign-on, or the
// service refused it (the user signs in with the password, and the wrapper asks for a
// device sign-on again then) or could not be reached.
func (d *Device) SignIn(ctx context.Context, external string) []*http.Cookie {
	d.mu.Lock()
	defer d.mu.Unlock()
	if strings.TrimSpace(external) == "" {
		return nil
	}
	l, secret, ok, err := d.Store.Credential(external)
	if err != nil {
		d.log().Warn("the device sign-on cannot be read: sign in with the password", "error", err)
		if err := d.Store.SetCredential(external, l, ""); err != nil {
			d.log().Error("removing the device sign-on", "error", err)
		}
		return nil
	}
	if !ok {
		return nil
	}
	b, err := d.binding(external)
	if err != nil {
		d.log().Warn("device sign-in", "error", err)
		return nil
	}
	next, cookies, err := d.Client.SignIn(ctx, secret, b)
	switch {
	case errors.Is(err, ErrInvalid):
		d.log().Info("the device sign-on has ended (expired, revoked, the password changed, or used elsewhere): sign in with the password")
		if err := d.Store.SetCredential(external, l, ""); err != nil {
			d.log().Error("removing the device sign-on", "error", err)
		}
		return nil
	case err != nil:
		// Kept: the service may not have seen it. Had it, the next use is a reuse, which
		// ends the device sign-on, and the user signs in with the password.
		d.log().Warn("device sign-in failed: sign in with the password", "error", err)
		return nil
	}
	if err := d.Store.SetCredential(external, l, next); err != nil {
		d.log().Error("keeping the next device sign-on", "error", err)
	}
	d.log().Info("signed in by the device sign-on")
	return cookies
}

// Issued makes sure external's link to account has a device sign-on, asking the service
// for one with the window's session token when it has none (a sign-in with the
// password). The service gives one to a fresh instructor sign-in only; a session it
// refused is not asked again.
func (d *Device) Issued(ctx context.Context, external string, account Link, token string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if strings.TrimSpace(external) == "" || account.AccountID == 0 || token == "" {
		return
	}
	l, _, ok, err := d.Store.Credential(external)
	if err == nil && ok && l.AccountID == account.AccountID {
		return // held already: the start signed in with it, or an earlier sign-in asked
	}
	h := sha256.Sum256([]byte(token))
	if d.refused[h] {
		return
	}
	b, err := d.binding(external)
	if err != nil {
		d.log().Warn("asking for a device sign-on", "error", err)
		return
	}
	secret, err := d.Client.Issue(ctx, token, b)
	if errors.Is(err, ErrRefused) {
		if d.refused == nil {
			d.refused = map[[32]byte]bool{}
		}
		d.refused[h] = true
		d.log().Info("no device sign-on for this session: the next start asks for the password", "reason", err.Error())
		return
	}
	if err != nil {
		d.log().Warn("asking for a device sign-on", "error", err)
		return
	}
	if err := d.Store.SetCredential(external, account, secret); err != nil {
		d.log().Error("keeping the device sign-on", "error", err)
		return
	}
	d.log().Info("device sign-on kept: the next start signs in without the password")
}

// Forget ends external's device sign-on at the service and forgets the link.
func (d *Device) Forget(ctx context.Context, external string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if strings.TrimSpace(external) == "" {
		return
	}
	if _, secret, ok, err := d.Store.Credential(external); err == nil && ok {
		if err := d.Client.SignOut(ctx, secret); err != nil {
			d.log().Warn("ending the device sign-on at the service", "error", err)
		}
	}
	if err := d.Store.Forget(external); err != nil {
		d.log().Error("forgetting the sign-on link", "error", err)
	}
}

// ForgetAll ends every device sign-on the store keeps at the service and removes every
// link (RememberLoggedInUser turned off): a sign-on that is no longer remembered here must
// not stay usable by a copy of the file either. A device sign-on the service cannot be
// told of is logged, and removed here all the same; the instructor can revoke it from the
// application's list of signed-in desktops.
func (d *Device) ForgetAll(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	secrets, err := d.Store.credentials()
	if err != nil {
		d.log().Warn("the device sign-ons cannot be read to end them at the service", "error", err)
	}
	for _, secret := range secrets {
		if err := d.Client.SignOut(ctx, secret); err != nil {
			d.log().Warn("ending a device sign-on at the service", "error", err)
		}
	}
	if len(secrets) > 0 {
		d.log().Info("device sign-ons ended: RememberLoggedInUser is off", "count", len(secrets))
	}
	return d.Store.Clear()
}
