package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
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
