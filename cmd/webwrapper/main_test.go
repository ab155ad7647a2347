package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/instance"
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
	if code := run(context.Background(), []string{`provider=Nope.Component, Nope`}, &stderr); code != exitUnknown {
		t.Errorf("run(provider=Nope) = %d, want %d", code, exitUnknown)
	}
	if !strings.Contains(stderr.String(), "unknown protocol provider") {
		t.Errorf("stderr = %q, want the unknown provider named", stderr.String())
	}
}

func TestSecondStartForwards(t *testing.T) {
	userDirs(t)
	dir, err := instance.Dir(vendor, product)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	primary, inst, err := instance.Acquire(ctx, dir, nil)
	if err != nil || !primary {
		t.Fatalf("Acquire = %v, %v", primary, err)
	}
	defer inst.Close()
	xml := filepath.Join(wintest.TempDir(t), "input.xml")
	t.Chdir(filepath.Dir(xml))
	var stderr bytes.Buffer
	if code := run(ctx, []string{"input.xml"}, &stderr); code != exitOK {
		t.Fatalf("second start = %d (%s), want 0", code, stderr.String())
	}
	select {
	case got := <-inst.Args():
		if want := []string{xml}; !reflect.DeepEqual(got, want) {
			t.Errorf("forwarded %q, want %q (the path made absolute)", got, want)
		}
	case <-ctx.Done():
		t.Fatal("nothing forwarded")
	}
}

func TestEngineOptions(t *testing.T) {
	dir := wintest.TempDir(t)
	app := filepath.Join(dir, "webwrapper.config")
	if err := os.WriteFile(app, []byte(`<?xml version="1.0"?>
<configuration><appSettings>
  <add key="AppUrl" value="https://svc.example/app/signin"/>
  <add key="Culture" value="nb-NO"/>
  <add key="Debug" value="True"/>
  <add key="BrowserEngine" value="WebViewBrowser"/>
</appSettings></configuration>`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(app, filepath.Join(dir, "user.config"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.SetInt(config.Left, 10)
	cfg.SetInt(config.Top, 20)
	cfg.SetInt(config.Width, 800)
	cfg.SetInt(config.Height, 600)
	cfg.SetBool(config.Maximized, false)
	cfg.SetFloat(config.ZoomFactor, 1.25)
	w := &wrapper{cfg: cfg, dir: dir, flags: flags{browser: "/usr/bin/chromium", browserFlags: multiFlag{"--headless=new"}}}
	got, warning := w.engineOptions()
	want := engine.Options{
		URL: "https://svc.example/app/signin", ProfileDir: filepath.Join(dir, "profile"),
		Bounds: engine.Bounds{Left: 10, Top: 20, Width: 800, Height: 600}, Zoom: 1.25,
		Language: "nb-NO", Debug: true, Browser: "/usr/bin/chromium", PreferEdge: true, ExtraFlags: []string{"--headless=new"},
		KeepSession: true, // RememberLoggedInUser's default
	}
	if !reflect.DeepEqual(got, want) || warning != "" {
		t.Errorf("engineOptions() = %+v, %q\nwant %+v", got, warning, want)
	}
	w.flags.appURL, w.flags.profile = "http://localhost:9/app", filepath.Join(dir, "p2")
	cfg.Set(config.BrowserEngine, "InternetExplorer")
	got, warning = w.engineOptions()
	if got.URL != w.flags.appURL || got.ProfileDir != w.flags.profile || got.PreferEdge || warning == "" {
		t.Errorf("with flags and InternetExplorer: %+v, %q; want the flags, the default engine and a warning", got, warning)
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

func TestSessionKey(t *testing.T) {
	a := sessionKey([]string{"provider=x", `signon=CLINIC\asa`}, "")
	if a == "" || a != sessionKey([]string{`SIGNON=clinic\ASA`}, "osuser") {
		t.Errorf("sessionKey differs for one user in another case: %q", a)
	}
	if b := sessionKey([]string{`signon=CLINIC\bo`}, ""); b == a || b == "" {
		t.Errorf("sessionKey(bo) = %q, want a key of its own", b)
	}
	if sessionKey(nil, "osuser") == "" || sessionKey(nil, "") != "" {
		t.Errorf("without signon: the operating-system user's key, or none without one")
	}
}
