package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/appservice/web/internal/goicon"
	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/linkspec"
)

// TestGoManifest: Go's web app manifest names Go in the language the shell links it in
// (and, without one, in the request's), starts at and keeps to /go, runs standalone, and
// names icons of 192 and 512 pixels, ordinary and maskable, that the site serves.
func TestGoManifest(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, lang := range i18n.Languages {
		t.Run(lang, func(t *testing.T) {
			res := serve(f.h, httptest.NewRequest(http.MethodGet, "/go/manifest.webmanifest?lang="+lang, nil))
			var m webManifest
			if err := json.Unmarshal([]byte(body(t, res)), &m); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("manifest = %d: %v", res.StatusCode, err)
			}
			if got := res.Header.Get("Content-Type"); got != "application/manifest+json" {
				t.Errorf("Content-Type = %q", got)
			}
			if m.Name != i18n.T(lang, "go.app_name") || m.Description != i18n.T(lang, "go.app_description") || m.Lang != lang {
				t.Errorf("manifest in %s names %q (%q, lang %q)", lang, m.Name, m.Description, m.Lang)
			}
			if lang != "en" && m.Name == i18n.T("en", "go.app_name") {
				t.Errorf("manifest in %s names Go in English", lang)
			}
			if m.ShortName != "Go" || m.StartURL != "/go" || m.Scope != "/go" || m.ID != "/go" || m.Display != "standalone" || m.ThemeColor != "#1d4e89" {
				t.Errorf("manifest = %+v", m)
			}
		})
	}
	t.Run("request's language", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "/go/manifest.webmanifest?lang=fr", nil)
		r.Header.Set("Accept-Language", "sv-SE,sv;q=0.9")
		var m webManifest
		json.Unmarshal([]byte(body(t, serve(f.h, r))), &m)
		if m.Lang != "sv" || m.Name != i18n.T("sv", "go.app_name") {
			t.Errorf("manifest for a Swedish browser, unknown lang parameter: %q %q", m.Lang, m.Name)
		}
	})
	t.Run("icons", func(t *testing.T) {
		var m webManifest
		json.Unmarshal([]byte(body(t, serve(f.h, httptest.NewRequest(http.MethodGet, "/go/manifest.webmanifest", nil)))), &m)
		got := map[string]bool{}
		for _, ic := range m.Icons {
			got[ic.Sizes+" "+ic.Purpose] = true
			res := serve(f.h, httptest.NewRequest(http.MethodGet, ic.Src, nil))
			img, err := png.Decode(res.Body)
			if res.StatusCode != http.StatusOK || err != nil || ic.Type != "image/png" {
				t.Fatalf("icon %s = %d: %v", ic.Src, res.StatusCode, err)
			}
			if b := img.Bounds(); ic.Sizes != fmt.Sprintf("%dx%d", b.Dx(), b.Dy()) {
				t.Errorf("icon %s is %v, the manifest says %s", ic.Src, b, ic.Sizes)
			}
		}
		for _, want := range []string{"192x192 any", "512x512 any", "192x192 maskable", "512x512 maskable"} {
			if !got[want] {
				t.Errorf("manifest lacks the %s icon: %+v", want, m.Icons)
			}
		}
	})
}

// TestGoIconsGenerated: the icons under static/go are what package goicon draws (go
// generate in appservice/web writes them); a changed drawing with stale PNGs fails.
func TestGoIconsGenerated(t *testing.T) {
	for _, size := range goicon.Sizes {
		name := fmt.Sprintf("static/go/icon-%d.png", size)
		got, err := staticFS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, goicon.PNG(size)) {
			t.Errorf("%s is not goicon.PNG(%d): run go generate in appservice/web", name, size)
		}
	}
}

// TestGoWorkerServed: the service worker answers at /go/sw.js as JavaScript, may take the
// scope /go (Service-Worker-Allowed), and its own CSP lets it fetch from the site only.
func TestGoWorkerServed(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	res := serve(f.h, httptest.NewRequest(http.MethodGet, "/go/sw.js", nil))
	src := body(t, res)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(src, "go-member-v1-") {
		t.Fatalf("/go/sw.js = %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if got := res.Header.Get("Service-Worker-Allowed"); got != "/go" {
		t.Errorf("Service-Worker-Allowed = %q, want /go", got)
	}
	if got := res.Header.Get("Content-Security-Policy"); got != "default-src 'none'; connect-src 'self'" {
		t.Errorf("worker CSP = %q", got)
	}
	if node, err := exec.LookPath("node"); err == nil {
		tmp := t.TempDir() + "/sw.js"
		os.WriteFile(tmp, []byte(src), 0o600)
		if out, err := exec.Command(node, "--check", tmp).CombinedOutput(); err != nil {
			t.Errorf("node --check sw.js: %v\n%s", err, out)
		}
	}
}

// TestGoShellInstallable: Go's shell links the manifest in its own language and the theme
// colour, and its CSP lets it read the manifest and register the worker; the instructor's
// shell does neither.
func TestGoShellInstallable(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	member := newBrowser(t, f.h)
	member.signInByLink(f.link(t, goPayload(), "go"))
	r := httptest.NewRequest(http.MethodGet, "/go", nil)
	r.Header.Set("Accept-Language", "da")
	res := member.do(r)
	page := body(t, res)
	for _, want := range []string{`<link rel="manifest" href="/go/manifest.webmanifest?lang=da">`, `<meta name="theme-color" content="` + themeColor + `">`} {
		if !strings.Contains(page, want) {
			t.Errorf("Go shell lacks %q", want)
		}
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "; worker-src 'self'; manifest-src 'self'; ") {
		t.Errorf("Go shell CSP = %q", csp)
	}
	instructor := newBrowser(t, f.h)
	instructor.signInByLink(f.link(t, mainPayload(), "main"))
	res, page = instructor.get("/app/signin")
	if strings.Contains(page, "manifest") || strings.Contains(res.Header.Get("Content-Security-Policy"), "manifest-src") {
		t.Errorf("a page of the instructor's links Go's manifest")
	}
}

// TestOfflineOwner: the Go shell and every API answer to a member's session say whose
// data they are (Go-Offline-Owner), the same key for the same session's member and another
// for another member; no answer without a member's session carries one.
func TestOfflineOwner(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	kari := newBrowser(t, f.h)
	kari.signInByLink(f.link(t, goPayload(), "go"))
	other := goPayload()
	other.Contact = &linkspec.Contact{ID: "c-3", Firstname: "Ola", Lastname: "Hansen", Email: "ola@example.com"}
	ola := newBrowser(t, f.h)
	ola.signInByLink(f.link(t, other, "go"))

	owner := func(b *browser, path string) string {
		res, _ := b.get(path)
		return res.Header.Get(offlineOwnerHeader)
	}
	k := owner(kari, "/go")
	if len(k) != 32 {
		t.Fatalf("Go shell's owner key = %q", k)
	}
	for _, p := range []string{"/app/api/status", "/app/api/me/workouts", "/app/api/workouts/999", "/go/workouts/1"} {
		if got := owner(kari, p); got != k {
			t.Errorf("GET %s owner = %q, want the shell's %q", p, got, k)
		}
	}
	if o := owner(ola, "/go"); o == "" || o == k {
		t.Errorf("another member's owner key = %q, Kari's %q", o, k)
	}
	instructor := newBrowser(t, f.h)
	instructor.signInByLink(f.link(t, mainPayload(), "main"))
	nobody := newBrowser(t, f.h)
	for _, c := range []struct {
		b    *browser
		path string
	}{{nobody, "/go"}, {nobody, "/app/api/status"}, {nobody, "/app/api/me/workouts"}, {instructor, "/app/api/status"}, {instructor, "/go"}} {
		if got := owner(c.b, c.path); got != "" {
			t.Errorf("GET %s without a member's session carries owner %q", c.path, got)
		}
	}
}
