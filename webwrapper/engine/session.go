package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/net/publicsuffix"
)

// sessionFile holds, in the profile folder, the page's browser-session cookies while
// someone is signed in. The service's session cookie has no Max-Age, so Chromium drops it
// when the browser exits; keeping it here lets a window opened again on the same profile
// (show after MinimizeOnExit, the next start) come back signed in, which the wrapper's
// single sign-on (RememberLoggedInUser) promises. The file is as private as the profile's
// own cookie store (0600) and is removed at sign-out.
const sessionFile = "session-cookies"

// sessionPath is the kept session's file in dir for key.
func sessionPath(dir, key string) string {
	if key == "" {
		return filepath.Join(dir, sessionFile+".json")
	}
	return filepath.Join(dir, sessionFile+"-"+key+".json")
}

// keepSession runs the page's sign-in events in order: signedIn saves the session
// cookies, signedOut removes them.
func (c *Chrome) keepSession(path string, ops <-chan string) {
	for {
		select {
		case op := <-ops:
			switch op {
			case "signedIn":
				_ = c.saveSession(path)
			case "signedOut":
				_ = os.Remove(path)
			}
		case <-c.closed:
			return
		}
	}
}

func (c *Chrome) saveSession(path string) error {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	got, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{}) // the page address's
	if err != nil {
		return err
	}
	var keep []*network.CookieParam
	for _, k := range got.Cookies {
		if !k.Session {
			continue // Chromium keeps persistent cookies itself
		}
		p := &network.CookieParam{Name: k.Name, Value: k.Value, Path: k.Path,
			Secure: k.Secure, HTTPOnly: k.HTTPOnly, SameSite: k.SameSite, Priority: k.Priority,
			SourceScheme: k.SourceScheme, SourcePort: k.SourcePort, PartitionKey: k.PartitionKey}
		if strings.HasPrefix(k.Domain, ".") {
			p.Domain = k.Domain
		} else {
			// A host-only cookie is set through its address, so it stays host-only.
			scheme := "http"
			if k.Secure {
				scheme = "https"
			}
			p.URL = scheme + "://" + k.Domain + k.Path
		}
		keep = append(keep, p)
	}
	b, err := json.Marshal(keep)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// restoreSession sets the session cookies kept in path before the first page loads.
func restoreSession(ctx context.Context, path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var cookies []*network.CookieParam
	if err := json.Unmarshal(b, &cookies); err != nil || len(cookies) == 0 {
		return nil // unreadable: the user signs in again
	}
	_, err = chromedp.Call(ctx, network.SetCookies, network.SetCookiesParams{Cookies: cookies})
	return err
}

// setCookies sets cookies in the browser as the service at origin set them: host-only
// cookies of its host unless they name a domain, partitioned ones in the partition of
// the service's own site (the window's top-level site), as the browser would have kept
// them had the page's own request received them. A cookie that deletes (Max-Age < 0) is
// left out.
func setCookies(ctx context.Context, origin string, cookies []*http.Cookie) error {
	u, err := url.Parse(origin)
	if err != nil {
		return err
	}
	var params []*network.CookieParam
	for _, k := range cookies {
		if k.MaxAge < 0 {
			continue
		}
		path := k.Path
		if path == "" {
			path = "/"
		}
		p := &network.CookieParam{Name: k.Name, Value: k.Value, URL: origin + path, Path: path,
			Secure: k.Secure, HTTPOnly: k.HttpOnly}
		if k.Domain != "" {
			p.Domain = k.Domain
		}
		switch k.SameSite {
		case http.SameSiteLaxMode:
			p.SameSite = network.CookieSameSiteLax
		case http.SameSiteStrictMode:
			p.SameSite = network.CookieSameSiteStrict
		case http.SameSiteNoneMode:
			p.SameSite = network.CookieSameSiteNone
		}
		if k.MaxAge > 0 {
			p.Expires = cdp.TimeSinceEpoch(time.Now().Add(time.Duration(k.MaxAge) * time.Second).Unix())
		}
		if k.Partitioned {
			p.PartitionKey = &network.CookiePartitionKey{TopLevelSite: siteOf(u)}
		}
		params = append(params, p)
	}
	if len(params) == 0 {
		return nil
	}
	_, err = chromedp.Call(ctx, network.SetCookies, network.SetCookiesParams{Cookies: params})
	return err
}

// siteOf is the site of u as browsers key partitions: the scheme and the registrable
// domain (eTLD+1), or the host itself where there is none (an address, localhost).
func siteOf(u *url.URL) string {
	host := u.Hostname()
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil && net.ParseIP(host) == nil {
		host = d
	}
	return u.Scheme + "://" + host
}

// Cookies returns the browser's cookies of the service's origin.
func (c *Chrome) Cookies(ctx context.Context) ([]*http.Cookie, error) {
	sctx, stop := c.scope(ctx)
	defer stop()
	got, err := chromedp.Call(sctx, network.GetCookies, network.GetCookiesParams{URLs: []string{c.origin + "/"}})
	if err != nil {
		return nil, fmt.Errorf("reading the service's cookies: %w", err)
	}
	out := make([]*http.Cookie, 0, len(got.Cookies))
	for _, k := range got.Cookies {
		out = append(out, &http.Cookie{Name: k.Name, Value: k.Value, Path: k.Path, Domain: k.Domain,
			Secure: k.Secure, HttpOnly: k.HTTPOnly})
	}
	return out, nil
}
