package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/internal/wintest"
)

// chromiumPath is Debian's chromium, which the test machine has (scripts/test-deps.sh).
const chromiumPath = "/usr/bin/chromium"

// startChrome starts the engine headless on the test page, in a fresh profile.
func startChrome(t *testing.T, o Options) (*Chrome, string) {
	t.Helper()
	return start(t, o, false)
}

// startChromeVisible starts the engine with a window on the display of DISPLAY.
func startChromeVisible(t *testing.T, o Options) (*Chrome, string) {
	t.Helper()
	return start(t, o, true)
}

func start(t *testing.T, o Options, visible bool) (*Chrome, string) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium not found at %s: install Debian's chromium package and run again", chromiumPath)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	t.Cleanup(srv.Close)
	dir := wintest.TempDir(t)
	// Chromium keeps its singleton socket in a folder under TMPDIR, which a browser that is
	// killed (TestChromeWindowClosed) never removes: keep it in the test's folder.
	t.Setenv("TMPDIR", dir)
	o.URL = srv.URL + "/"
	o.ProfileDir = dir + "/profile"
	o.Browser = chromiumPath
	if !visible {
		o.ExtraFlags = append(o.ExtraFlags, "--headless")
	}
	o.ExtraFlags = append(o.ExtraFlags, "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update")
	c := NewChrome()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx, o); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, srv.URL
}

func nextEvent(t *testing.T, c *Chrome) Event {
	t.Helper()
	select {
	case ev := <-c.Events():
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no host event within 10s")
	}
	return Event{}
}

type ready struct {
	Page              string `json:"page"`
	HostBeforeScripts bool   `json:"hostBeforeScripts"`
}

func wantReady(t *testing.T, c *Chrome, page string) {
	t.Helper()
	ev := nextEvent(t, c)
	var r ready
	if err := json.Unmarshal(ev.Data, &r); ev.Name != "ready" || err != nil || r.Page != page || !r.HostBeforeScripts {
		t.Fatalf("event = %s %s, want ready on %s with svcHost before the page's scripts", ev.Name, ev.Data, page)
	}
}

func TestChrome(t *testing.T) {
	c, base := startChrome(t, Options{
		Bounds: Bounds{Left: 10, Top: 20, Width: 900, Height: 700}, Zoom: 1.5, Language: "nb-NO",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wantReady(t, c, "/")

	t.Run("call result", func(t *testing.T) {
		var n int
		if err := c.Call(ctx, "add", []any{2, 3}, &n); err != nil || n != 5 {
			t.Errorf("Call(add, 2, 3) = %d, %v; want 5", n, err)
		}
		in := map[string]any{"customId": "A-1 \"æ\" </script>", "userId": float64(42), "list": []any{"x"}}
		var out map[string]any
		if err := c.Call(ctx, "echo", []any{in}, &out); err != nil || out["customId"] != in["customId"] || out["userId"] != in["userId"] {
			t.Errorf("Call(echo, %v) = %v, %v", in, out, err)
		}
		out = nil
		if err := c.Call(ctx, "nothing", nil, &out); err != nil || out != nil {
			t.Errorf("Call(nothing) = %v, %v; want nothing", out, err)
		}
		if err := c.Call(ctx, "add", []any{1, 1}, nil); err != nil {
			t.Errorf("Call(add) with a nil result = %v", err)
		}
	})

	t.Run("call rejection", func(t *testing.T) {
		err := c.Call(ctx, "fail", nil, nil)
		var pe *PageError
		if !errors.As(err, &pe) {
			t.Fatalf("Call(fail) = %v, want a *PageError", err)
		}
		want := PageError{Code: "invalid_argument", Message: "firstname: is required",
			Fields: []FieldError{{Field: "firstname", Reason: "is required"}}, Status: 400}
		if pe.Code != want.Code || pe.Message != want.Message || !slices.Equal(pe.Fields, want.Fields) || pe.Status != want.Status {
			t.Errorf("Call(fail) = %+v, want %+v", *pe, want)
		}
		if err := c.Call(ctx, "throwString", nil, nil); !errors.As(err, &pe) || pe.Code != "page_error" || pe.Message != "plain" {
			t.Errorf("Call(throwString) = %v, want PageError page_error plain", err)
		}
		if err := c.Call(ctx, "missing", nil, nil); !errors.As(err, &pe) || pe.Code != "host_unavailable" {
			t.Errorf("Call(missing) = %v, want PageError host_unavailable", err)
		}
		if err := c.Call(ctx, "add); alert(1", nil, nil); err == nil || errors.As(err, &pe) {
			t.Errorf("Call with a script for a name = %v, want a plain error", err)
		}
	})

	t.Run("events in order", func(t *testing.T) {
		var n int
		if err := c.Call(ctx, "emitMany", []any{20}, &n); err != nil {
			t.Fatalf("Call(emitMany) = %v", err)
		}
		for i := range 20 {
			ev := nextEvent(t, c)
			var d struct{ I int }
			if err := json.Unmarshal(ev.Data, &d); ev.Name != "count" || err != nil || d.I != i {
				t.Fatalf("event %d = %s %s, want count %d", i, ev.Name, ev.Data, i)
			}
		}
	})

	t.Run("window options", func(t *testing.T) {
		var env struct {
			DPR  float64 `json:"dpr"`
			Lang string  `json:"lang"`
		}
		if err := c.Call(ctx, "env", nil, &env); err != nil {
			t.Fatal(err)
		}
		if env.DPR != 1.5 {
			t.Errorf("devicePixelRatio = %v, want the zoom 1.5", env.DPR)
		}
		if !strings.HasPrefix(env.Lang, "nb") {
			t.Errorf("navigator.language = %q, want nb-NO", env.Lang)
		}
		b, maximized, err := c.Bounds(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Width != 900 || b.Height != 700 || maximized {
			t.Errorf("Bounds() = %+v, %v; want 900x700, not maximized", b, maximized)
		}
	})

	t.Run("minimize and restore", func(t *testing.T) {
		if err := c.Minimize(ctx); err != nil {
			t.Fatalf("Minimize: %v", err)
		}
		b, _, err := c.Bounds(ctx)
		if err != nil || b.Width != 900 {
			t.Errorf("Bounds() while minimized = %+v, %v; want the restored 900 wide", b, err)
		}
		state := func() string {
			sctx, stop := c.scope(ctx)
			defer stop()
			w, err := c.window(sctx)
			if err != nil {
				t.Fatal(err)
			}
			return string(w.Bounds.WindowState)
		}
		if s := state(); s != "minimized" {
			t.Errorf("window state after Minimize = %q, want minimized", s)
		}
		if err := c.Restore(ctx); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if s := state(); s != "normal" {
			t.Errorf("window state after Restore = %q, want normal", s)
		}
	})

	t.Run("navigate", func(t *testing.T) {
		if err := c.Navigate(ctx, base+"/other.html"); err != nil {
			t.Fatalf("Navigate: %v", err)
		}
		wantReady(t, c, "/other.html")
	})

	t.Run("close", func(t *testing.T) {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case <-c.Closed():
		case <-time.After(10 * time.Second):
			t.Fatal("Closed() still open 10s after Close")
		}
		if err := c.Call(ctx, "add", []any{1, 2}, nil); err == nil {
			t.Errorf("Call after Close = nil error")
		}
	})
}

// Closing the window from the page ends the engine: Closed closes.
func TestChromeWindowClosed(t *testing.T) {
	c, _ := startChrome(t, Options{Maximized: true})
	wantReady(t, c, "/")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, maximized, err := c.Bounds(ctx); err != nil || !maximized {
		t.Errorf("Bounds() of a window started maximized = %v, %v; want maximized", maximized, err)
	}
	if err := c.Minimize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if _, maximized, _ := c.Bounds(ctx); !maximized {
		t.Errorf("Restore after Minimize of a maximized window: not maximized")
	}
	// The browser process goes away as a user's closing the last window would end it.
	_ = chromedpProcess(c).Kill()
	select {
	case <-c.Closed():
	case <-time.After(10 * time.Second):
		t.Fatal("Closed() still open 10s after the browser went away")
	}
}

func TestChromeNotStarted(t *testing.T) {
	c := NewChrome()
	ctx := context.Background()
	if err := c.Call(ctx, "add", nil, nil); err == nil {
		t.Errorf("Call before Start = nil error")
	}
	if _, _, err := c.Bounds(ctx); err == nil {
		t.Errorf("Bounds before Start = nil error")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close before Start = %v", err)
	}
}

func TestCandidates(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"ProgramFiles": `C:\PF`}[k]
	}
	tests := []struct {
		goos       string
		preferEdge bool
		first      string
	}{
		{"linux", false, "chromium"},
		{"windows", false, "chrome.exe"},
		{"windows", true, "msedge.exe"},
		{"darwin", true, "/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge"},
	}
	for _, tt := range tests {
		got := candidates(tt.goos, tt.preferEdge, env, func(string) string { return "" })
		if got[0] != tt.first {
			t.Errorf("candidates(%q, %v)[0] = %q, want %q", tt.goos, tt.preferEdge, got[0], tt.first)
		}
	}
	win := candidates("windows", false, env, func(string) string { return "" })
	if !slices.Contains(win, `C:\PF\Google\Chrome\Application\chrome.exe`) || slices.ContainsFunc(win, func(s string) bool { return strings.HasPrefix(s, `\`) }) {
		t.Errorf("candidates(windows) = %q, want Program Files paths and none for unset variables", win)
	}
	if i, j := slices.Index(win, "chrome.exe"), slices.Index(win, "msedge.exe"); i > j {
		t.Errorf("candidates(windows) = %q, want Chrome before Edge", win)
	}
	// A registered path (App Paths) comes first for each browser.
	reg := func(exe string) string { return map[string]string{"msedge.exe": `D:\Edge\msedge.exe`}[exe] }
	if got := candidates("windows", true, env, reg); got[0] != `D:\Edge\msedge.exe` || got[1] != "msedge.exe" {
		t.Errorf("candidates(windows, Edge registered) = %q, want the registered path first", got)
	}
}

// chromedpProcess is the browser's process.
func chromedpProcess(c *Chrome) *os.Process { return chromedp.FromContext(c.ctx).Browser.Process() }

// A page of another origin in the window (a directory's identity provider, a link the
// user followed, a frame in the service's page) has window.svcHost too, and its own
// svcApp; yet its host events are dropped and no page call reaches it, so that it can
// neither sign in for the wrapper nor receive a person's data.
func TestChromeForeignOrigin(t *testing.T) {
	c, base := startChrome(t, Options{})
	wantReady(t, c, "/")
	// Another origin on the same host, so that the browser keeps its frames in the
	// service page's process, where the host binding reaches them.
	foreign := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	t.Cleanup(foreign.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if err := c.Navigate(ctx, foreign.URL+"/signedin.html"); err != nil {
		t.Fatal(err)
	}
	var echoed any
	var pe *PageError
	if err := c.Call(ctx, "echo", []any{map[string]any{"firstname": "Åsa"}}, &echoed); !errors.As(err, &pe) || pe.Code != "host_unavailable" {
		t.Errorf("Call(echo) on a page of another origin = %v, %v; want host_unavailable and nothing sent", echoed, err)
	}
	// Back on the service's page, its ready is the next event: the other page's ready and
	// signedIn were dropped.
	if err := c.Navigate(ctx, base+"/other.html"); err != nil {
		t.Fatal(err)
	}
	wantReady(t, c, "/other.html")
	var n int
	if err := c.Call(ctx, "add", []any{2, 3}, &n); err != nil || n != 5 {
		t.Errorf("Call(add) on the service's page again = %d, %v; want 5", n, err)
	}

	// A frame of another origin in the service's page: its events are dropped, the page's
	// own arrive in order around them.
	if err := c.Navigate(ctx, base+"/frame.html?src="+url.QueryEscape(foreign.URL+"/signedin.html")); err != nil {
		t.Fatal(err)
	}
	wantReady(t, c, "/frame.html")
	if ev := nextEvent(t, c); ev.Name != "frameLoaded" {
		t.Errorf("event after the frame loaded = %s %s, want frameLoaded: the frame's events dropped", ev.Name, ev.Data)
	}
}

func TestOriginOf(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://localhost:8080/app/signin", "http://localhost:8080"},
		{"HTTPS://Svc.Example:443/app", "https://svc.example"},
		{"http://svc.example:80", "http://svc.example"},
		{"https://svc.example:8443/app?x=1", "https://svc.example:8443"},
		{"http://[::1]:9000/", "http://[::1]:9000"},
	} {
		if got, err := OriginOf(tt.in); err != nil || got != tt.want {
			t.Errorf("OriginOf(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "file:///app", "data:text/html,x", "https:///app", "%zz"} {
		if got, err := OriginOf(bad); err == nil {
			t.Errorf("OriginOf(%q) = %q, want an error", bad, got)
		}
	}
}

// TestChromeCookies: the cookies of Options (a device sign-on's session) are set for the
// service before its first page, HttpOnly as the service set them, and Cookies reads them
// back though no script of the page can.
func TestChromeCookies(t *testing.T) {
	c, _ := startChrome(t, Options{Cookies: []*http.Cookie{
		{Name: "pg_session", Value: "token-1", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode},
		{Name: "gone", Value: "x", MaxAge: -1},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.Cookies(ctx)
	if err != nil {
		t.Fatalf("Cookies: %v", err)
	}
	var names []string
	for _, k := range got {
		names = append(names, k.Name)
		if k.Name == "pg_session" && (k.Value != "token-1" || !k.HttpOnly || k.Domain != "127.0.0.1") {
			t.Errorf("pg_session = %+v; want token-1, HttpOnly, host-only on 127.0.0.1", k)
		}
	}
	if !slices.Contains(names, "pg_session") || slices.Contains(names, "gone") {
		t.Errorf("the service's cookies are %q; want pg_session and not the deleting one", names)
	}
	visible, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`document.cookie`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(visible, "token-1") {
		t.Errorf("the page's script reads %q: the session must stay HttpOnly", visible)
	}
}

// TestChromeCookiesHTTPS: over HTTPS the service's session cookie is __Host-, Secure,
// SameSite=None and Partitioned (appservice/web/cookie.go); set from a device sign-on's
// answer it goes with the window's first request, as the cookie the page's own sign-in
// would have set does.
func TestChromeCookiesHTTPS(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium not found at %s", chromiumPath)
	}
	sent := make(chan string, 16)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			sent <- r.Header.Get("Cookie")
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>service</title>"))
	}))
	defer srv.Close()
	dir := wintest.TempDir(t)
	t.Setenv("TMPDIR", dir)
	c := NewChrome()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.Start(ctx, Options{URL: srv.URL + "/", ProfileDir: dir + "/profile", Browser: chromiumPath,
		// The test server's certificate is its own; the cookie's rules are what is tested.
		ExtraFlags: []string{"--headless", "--ignore-certificate-errors", "--disable-gpu", "--disable-dev-shm-usage"},
		Cookies: []*http.Cookie{{Name: "__Host-pg_session", Value: "token-2", Path: "/", Secure: true, HttpOnly: true,
			SameSite: http.SameSiteNoneMode, Partitioned: true}}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	select {
	case got := <-sent:
		if !strings.Contains(got, "__Host-pg_session=token-2") {
			t.Errorf("the first request's cookies = %q; want the device sign-on's session", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the window requested no page")
	}
}

// TestSplash: the window's first document is titled in the person's language, markup in
// the title stays text, and it is a data: URL the browser opens as one document.
func TestSplash(t *testing.T) {
	for _, c := range []struct{ title, want string }{
		{"Laster inn", "<!doctype html><title>Laster inn</title>"},
		{"Indlæser", "<!doctype html><title>Indlæser</title>"},
		{"", "<!doctype html><title>Loading</title>"},
		{"<b>&", "<!doctype html><title>&lt;b&gt;&amp;</title>"},
	} {
		u := splash(c.title)
		doc, ok := strings.CutPrefix(u, "data:text/html;charset=utf-8,")
		if !ok || strings.ContainsAny(doc, " #?") {
			t.Errorf("splash(%q) = %q, want a data: URL with nothing unescaped that ends or splits it", c.title, u)
			continue
		}
		if got, err := url.PathUnescape(doc); err != nil || got != c.want {
			t.Errorf("splash(%q) holds %q, %v; want %q", c.title, got, err, c.want)
		}
	}
}
