// Package engine shows the web application in a browser window and drives it through the
// page's JavaScript API (window.svcApp) and host events (window.svcHost). The wrapper's
// other packages see only the Engine interface, so that tests run against a fake
// (package enginetest) and another browser could be put behind it.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Options are what a window starts with, taken from the wrapper's configuration.
type Options struct {
	// URL is the first page opened (the AppUrl setting, or AdfsUrl).
	URL string
	// ServiceURL is the service's address (the AppUrl setting): host events are taken,
	// and page calls run, only in a document of its origin (scheme, host and port), so
	// that a page of another origin shown in the window (a directory's identity provider,
	// a link the user followed, a frame) can neither sign in for the wrapper nor receive
	// a person's data. Empty is URL.
	ServiceURL string
	// ProfileDir is the browser's persistent profile folder, so that a session survives
	// a restart of the window.
	ProfileDir string
	// Bounds is the window's position and size in screen pixels; zero width or height
	// leaves the browser's default.
	Bounds Bounds
	// Maximized starts the window maximized.
	Maximized bool
	// Zoom is the page zoom factor; 0 or 1 is no zoom.
	Zoom float64
	// Language is the browser's language (the Culture setting), e.g. "nb-NO"; empty keeps
	// the operating system's.
	Language string
	// LoadingTitle is the window's title until the first page loads, in the person's
	// language; empty is "Loading".
	LoadingTitle string
	// Debug opens the DevTools port 9223 on 127.0.0.1 (the spec's LIM-3); otherwise the
	// wrapper talks to the browser over a pipe and opens no port.
	Debug bool
	// Browser is the browser's executable; empty finds one.
	Browser string
	// PreferEdge makes the search try Edge before Chrome on Windows (WebViewBrowser).
	PreferEdge bool
	// KeepSession keeps the page's session cookies in ProfileDir while someone is signed
	// in, so that a window opened again on the profile comes back signed in
	// (RememberLoggedInUser).
	KeepSession bool
	// Cookies are set for ServiceURL before the first page loads, over a kept session's:
	// the session a device sign-on started (webwrapper/signon), as the service set them.
	Cookies []*http.Cookie
	// SessionKey names the kept session (one per external user of the single sign-on);
	// empty is the one session of a wrapper without an external user.
	SessionKey string
	// ExtraFlags are further command-line flags for the browser, written "--name" or
	// "--name=value" (tests run headless with them).
	ExtraFlags []string
}

// Bounds is a window's position and size in screen pixels.
type Bounds struct{ Left, Top, Width, Height int }

// Event is a host event the page sent through window.svcHost: its name ("ready",
// "signedIn", "signedOut", "personSelected", "workoutOpened") and its data.
type Event struct {
	Name string
	Data json.RawMessage
}

// Engine is one browser window showing the web application.
type Engine interface {
	// Start opens the window on o.URL; it returns once the page can be called.
	Start(ctx context.Context, o Options) error
	// Call awaits window.svcApp.<fn>(...args) and decodes its result into result (nil
	// discards it). A rejection of the page is a *PageError.
	Call(ctx context.Context, fn string, args []any, result any) error
	// Events delivers the page's host events in order.
	Events() <-chan Event
	// Cookies returns the browser's cookies of the service (ServiceURL), HttpOnly ones
	// too, which no script of the page can read: the wrapper takes the session's token
	// from them for the device sign-on.
	Cookies(ctx context.Context) ([]*http.Cookie, error)
	// UseSession puts the cookies of a new session of the service (a device sign-on's,
	// after the window's session ended) into the running window and opens its start page
	// (Options.URL) again.
	UseSession(ctx context.Context, cookies []*http.Cookie) error
	// Navigate opens url in the window.
	Navigate(ctx context.Context, url string) error
	// Minimize minimizes the window (the pipe's hide).
	Minimize(ctx context.Context) error
	// Restore restores a minimized window and brings it to the front (the pipe's show).
	Restore(ctx context.Context) error
	// Bounds reads the window's normal bounds and whether it is maximized, for saving at exit.
	Bounds(ctx context.Context) (Bounds, bool, error)
	// Closed is closed when the window or the browser has gone away.
	Closed() <-chan struct{}
	// Close ends the browser.
	Close() error
}

// PageError is a rejection of a page API call: the page's SvcAppError, whose code is the
// service's stable problem code and whose status is the HTTP status behind it (0 when the
// page itself refused).
type PageError struct {
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Fields  []FieldError `json:"fields,omitempty"`
	Status  int          `json:"status,omitempty"`
}

// FieldError names an argument the page refused and why.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

func (e *PageError) Error() string {
	if e.Message == "" {
		return "page: " + e.Code
	}
	return fmt.Sprintf("page: %s: %s", e.Code, e.Message)
}

// OriginOf is the origin of an http(s) address as browsers write it: the scheme and host in
// lower case, the port only when it is not the scheme's default (http://svc.example:8080,
// https://svc.example).
func OriginOf(address string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(address))
	if err != nil {
		return "", fmt.Errorf("reading the service's address: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" {
		return "", errors.New("reading the service's address: not an http or https address")
	}
	host := strings.ToLower(u.Host)
	if port := u.Port(); (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		host = strings.TrimSuffix(host, ":"+port)
	}
	return scheme + "://" + host, nil
}
