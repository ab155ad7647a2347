// Package update looks for a newer wrapper at start (VER-3) without delaying it: the check
// runs in a goroutine with a time limit and delivers its one result on a channel; the
// wrapper shows the download link in the page's notice banner when one arrives.
package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Release is the feed document of a channel: {"version": "2.1.5.8", "url":
// "https://…/SvcWebwrapper-2.1.5.8.msi", "sha256": "…"}. url is the installer of that
// version; without it, the installer is MSIName(version) next to the feed. sha256 is the
// installer's SHA-256 in hex, for people and scripts that check a download; the wrapper
// only links to it. webwrapper/site writes the feed.
type Release struct {
	Version string `json:"version"`
	URL     string `json:"url,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
}

// DefaultChannel is the update channel of a blank UpdatePath.
const DefaultChannel = "stable"

// Result is the outcome of one check: Newer is set, with the release, when the feed
// offers a newer version than the running one.
type Result struct {
	Release Release
	Newer   bool
	Err     error
}

// maxFeed bounds the feed document.
const maxFeed = 64 << 10

// FeedURL is the feed of an update channel: UpdatePath when it is an http(s) address,
// else <site>/<channel>.json, with channel "stable" when UpdatePath is blank.
func FeedURL(site, updatePath string) string {
	p := strings.TrimSpace(updatePath)
	if u, err := url.Parse(p); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return p
	}
	if p == "" {
		p = DefaultChannel
	}
	return strings.TrimRight(site, "/") + "/" + url.PathEscape(p) + ".json"
}

// Start checks feed in the background against the running version current; the channel
// receives exactly one Result, within timeout.
func Start(ctx context.Context, client *http.Client, feed, current string, timeout time.Duration) <-chan Result {
	ch := make(chan Result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		r, newer, err := Check(ctx, client, feed, current)
		ch <- Result{Release: r, Newer: newer, Err: err}
	}()
	return ch
}

// Check fetches feed and reports whether its release is newer than current.
func Check(ctx context.Context, client *http.Client, feed, current string) (Release, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, feed, nil)
	if err != nil {
		return Release{}, false, fmt.Errorf("checking for updates: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return Release{}, false, fmt.Errorf("checking for updates: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return Release{}, false, fmt.Errorf("checking for updates: feed answered %s", resp.Status)
	}
	var r Release
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxFeed)).Decode(&r); err != nil {
		return Release{}, false, fmt.Errorf("checking for updates: reading feed: %w", err)
	}
	if strings.TrimSpace(r.URL) == "" {
		if _, err := parse(r.Version); err == nil {
			if base, err := url.Parse(feed); err == nil {
				r.URL = base.ResolveReference(&url.URL{Path: MSIName(r.Version)}).String()
			}
		}
	}
	// The link is shown to the user, so only a web address will do.
	if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Release{}, false, errors.New("checking for updates: feed has no http(s) download link")
	}
	c, err := Compare(r.Version, current)
	if err != nil {
		return Release{}, false, fmt.Errorf("checking for updates: %w", err)
	}
	return r, c > 0, nil
}

// MSIName is the installer's file name for a version, as scripts/build-windows.sh names
// it: the version is in the name (VER-2).
func MSIName(version string) string { return "SvcWebwrapper-" + strings.TrimSpace(version) + ".msi" }

// Compare compares two versions of up to four dotted numbers (2.1.4.19787; missing parts
// are 0): -1, 0 or +1 as a is older than, equal to or newer than b.
func Compare(a, b string) (int, error) {
	pa, err := parse(a)
	if err != nil {
		return 0, err
	}
	pb, err := parse(b)
	if err != nil {
		return 0, err
	}
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1, nil
			}
			return 1, nil
		}
	}
	return 0, nil
}

func parse(v string) ([4]int, error) {
	var p [4]int
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) > 4 {
		return p, fmt.Errorf("version %q has more than four parts", v)
	}
	for i, s := range parts {
		n, err := strconv.Atoi(s)
		if err != nil || strings.Trim(s, "0123456789") != "" {
			return p, fmt.Errorf("version %q is not dotted numbers", v)
		}
		p[i] = n
	}
	return p, nil
}
