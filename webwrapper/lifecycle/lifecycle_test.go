package lifecycle

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/engine/enginetest"
	"github.com/partnergate/partnergate/webwrapper/instance"
	"github.com/partnergate/partnergate/webwrapper/provider"
)

// userDirs points the user's folders at the test's own.
func userDirs(t *testing.T) string {
	t.Helper()
	home := wintest.TempDir(t)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_RUNTIME_DIR", "")
	// Windows keeps these folders where these variables say (under Wine too): the tests'
	// user.config, instance lock and profile stay in the test's folder.
	t.Setenv("LOCALAPPDATA", filepath.Join(home, "local"))
	t.Setenv("APPDATA", filepath.Join(home, "roaming"))
	return home
}

func TestUnknownProvider(t *testing.T) {
	userDirs(t)
	var stderr bytes.Buffer
	if code := Run(context.Background(), []string{`provider=Nope.Component, Nope`}, Options{Stderr: &stderr, Alert: newShown().show}); code != ExitUsage {
		t.Errorf("Run(provider=Nope) = %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(stderr.String(), "unknown protocol provider") {
		t.Errorf("stderr = %q, want the unknown provider named", stderr.String())
	}
}

// runningWrapper holds the instance lock of the test's user as the running wrapper does,
// so that the test's Run is a later start; it is released when the test ends.
func runningWrapper(t *testing.T, ctx context.Context) *instance.Instance {
	t.Helper()
	dir, err := instance.Dir(vendor, product)
	if err != nil {
		t.Fatal(err)
	}
	primary, inst, err := instance.Acquire(ctx, dir, nil)
	if err != nil || !primary {
		t.Fatalf("Acquire = %v, %v", primary, err)
	}
	t.Cleanup(func() { inst.Close() })
	return inst
}

// A second start hands its command line to the running wrapper, as its provider reads it:
// the input.xml path made absolute, since the running wrapper's working folder differs.
func TestSecondStartForwards(t *testing.T) {
	userDirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst := runningWrapper(t, ctx)
	xml := filepath.Join(wintest.TempDir(t), "input.xml")
	t.Chdir(filepath.Dir(xml))
	var stderr bytes.Buffer
	if code := Run(ctx, []string{"culture=nb-NO", "input.xml"}, Options{Stderr: &stderr}); code != ExitOK {
		t.Fatalf("second start = %d (%s), want 0", code, stderr.String())
	}
	select {
	case got := <-inst.Args():
		if want := []string{"culture=nb-NO", xml}; !reflect.DeepEqual(got, want) {
			t.Errorf("forwarded %q, want %q (the path made absolute)", got, want)
		}
	case <-ctx.Done():
		t.Fatal("nothing forwarded")
	}
	if _, err := os.Stat(xml); !os.IsNotExist(err) {
		t.Errorf("a second start made or touched %s (%v)", xml, err)
	}
}

// testConfig is a configuration of the application settings in appSettings, with its
// user.config in dir.
func testConfig(t *testing.T, dir string, appSettings string) *config.Config {
	t.Helper()
	app := filepath.Join(dir, "webwrapper.config")
	if err := os.WriteFile(app, []byte(`<?xml version="1.0"?>
<configuration><appSettings>`+appSettings+`</appSettings></configuration>`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(app, filepath.Join(dir, "user.config"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestEngineOptions(t *testing.T) {
	dir := wintest.TempDir(t)
	cfg := testConfig(t, dir, `
  <add key="AppUrl" value="https://svc.example/app/signin"/>
  <add key="Culture" value="nb-NO"/>
  <add key="Debug" value="True"/>
  <add key="BrowserEngine" value="WebViewBrowser"/>`)
	cfg.SetInt(config.Left, 10)
	cfg.SetInt(config.Top, 20)
	cfg.SetInt(config.Width, 800)
	cfg.SetInt(config.Height, 600)
	cfg.SetBool(config.Maximized, false)
	cfg.SetFloat(config.ZoomFactor, 1.25)
	w := &wrapper{cfg: cfg, dir: dir, o: Options{Browser: "/usr/bin/chromium", BrowserFlags: []string{"--headless=new"}}}
	got, warning := w.engineOptions()
	want := engine.Options{
		URL: "https://svc.example/app/signin", ServiceURL: "https://svc.example/app/signin", ProfileDir: filepath.Join(dir, "profile"),
		Bounds: engine.Bounds{Left: 10, Top: 20, Width: 800, Height: 600}, Zoom: 1.25,
		Language: "nb-NO", LoadingTitle: "Laster inn", Debug: true, Browser: "/usr/bin/chromium", PreferEdge: true, ExtraFlags: []string{"--headless=new"},
		KeepSession: true, // RememberLoggedInUser's default
	}
	if !reflect.DeepEqual(got, want) || warning != "" {
		t.Errorf("engineOptions() = %+v, %q\nwant %+v", got, warning, want)
	}
	w.o.AppURL, w.o.Profile = "http://localhost:9/app", filepath.Join(dir, "p2")
	cfg.Set(config.BrowserEngine, "InternetExplorer")
	got, warning = w.engineOptions()
	if got.URL != w.o.AppURL || got.ServiceURL != w.o.AppURL || got.ProfileDir != w.o.Profile || got.PreferEdge || warning == "" {
		t.Errorf("with flags and InternetExplorer: %+v, %q; want the flags, the default engine and a warning", got, warning)
	}
	w.o.Profile, w.session = "", "x11-_1"
	if got, _ = w.engineOptions(); got.ProfileDir != filepath.Join(dir, "profile-x11-_1") {
		t.Errorf("in session x11-_1: ProfileDir = %q, want the session's own profile-x11-_1", got.ProfileDir)
	}
	cfg.SetBool(config.RememberLoggedInUser, false)
	if got, _ = w.engineOptions(); got.KeepSession {
		t.Errorf("with RememberLoggedInUser=False: KeepSession = true, want the session not kept")
	}
	cfg.SetBool(config.SignonWithWindowsUser, true)
	if got, _ = w.engineOptions(); !got.KeepSession {
		t.Errorf("with SignonWithWindowsUser=True: KeepSession = false, want it kept")
	}
}

// The window's start follows what the start's provider read, and nothing else: culture=
// with either provider (the original read it whatever the provider), signon= with the
// Arguments provider only (the original's XML provider named no sign-on user), here seen
// in the directory sign-in's login hint and the kept session's name.
func TestStartOptions(t *testing.T) {
	dir := wintest.TempDir(t)
	cfg := testConfig(t, dir, `
  <add key="AppUrl" value="https://svc.example/app/signin"/>
  <add key="AdfsUrl" value="https://svc.example/app/directory/clinic/signin"/>
  <add key="Culture" value="nb-NO"/>`)
	w := &wrapper{cfg: cfg, dir: dir, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	read := func(name string, args ...string) provider.Start {
		p, err := provider.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.Read(args)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tt := range []struct {
		name     string
		start    provider.Start
		url      string
		language string
		external string
	}{
		{"xml", read(provider.XML, `signon=CLINIC\asa`, "culture=sv-SE"),
			"https://svc.example/app/directory/clinic/signin?culture=sv-SE", "sv-SE", ""},
		{"arguments", read(provider.Arguments, `signon=CLINIC\asa`, "culture=sv-SE"),
			"https://svc.example/app/directory/clinic/signin?culture=sv-SE&signon=CLINIC%5Casa", "sv-SE", `CLINIC\asa`},
		{"none", provider.Start{},
			"https://svc.example/app/directory/clinic/signin?culture=nb-NO", "nb-NO", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts, external, signOut := w.startOptions(tt.start)
			if opts.URL != tt.url || opts.Language != tt.language || external != tt.external || opts.SessionKey != sessionKey(tt.external) {
				t.Errorf("startOptions = URL %q, language %q, external %q, session %q; want %q, %q, %q, %q",
					opts.URL, opts.Language, external, opts.SessionKey, tt.url, tt.language, tt.external, sessionKey(tt.external))
			}
			if opts.ServiceURL != "https://svc.example/app/signin" {
				t.Errorf("service URL = %q, want AppUrl's: the directory sign-in does not move the service", opts.ServiceURL)
			}
			if signOut != "https://svc.example/app/directory/clinic/signin?signout=1" {
				t.Errorf("sign-out URL = %q, want AdfsUrl with signout=1", signOut)
			}
		})
	}
}

// Every later start brings the window to the front, with arguments or without, as the
// original's did; its commands run after.
func TestLaterStartBringsWindow(t *testing.T) {
	dir := wintest.TempDir(t)
	w := &wrapper{cfg: testConfig(t, dir, ``), dir: dir, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	eng := enginetest.New()
	if err := eng.Start(context.Background(), engine.Options{URL: "http://app/"}); err != nil {
		t.Fatal(err)
	}
	a := app.New(eng, app.Options{Version: "2.1.5.0"})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-a.Done() }()
	go a.Run(ctx)
	for i, args := range [][]string{nil, {"provider=" + provider.Arguments, "culture=nb-NO"}} {
		if err := eng.Minimize(ctx); err != nil {
			t.Fatal(err)
		}
		w.applyLater(ctx, a, args)
		if minimized, restores := eng.Minimized(); minimized || restores != i+1 {
			t.Errorf("after a later start with %q: minimised %v, restored %d times; want restored", args, minimized, restores)
		}
	}
}
