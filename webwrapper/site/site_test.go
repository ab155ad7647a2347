package site

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/update"
)

// msi writes a stand-in installer and returns its path and SHA-256.
func msi(t *testing.T, content string) (string, string) {
	t.Helper()
	path := filepath.Join(wintest.TempDir(t), "built.msi")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	return path, hex.EncodeToString(sum[:])
}

// The site's feed is what the wrapper's update check reads: served as it is, an older
// wrapper is offered the installer next to the feed, the newest is not.
func TestFeedReadByTheWrapper(t *testing.T) {
	src, sum := msi(t, "an installer")
	dir := wintest.TempDir(t)
	r, err := Write(dir, src, "2.1.5.9")
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != "2.1.5.9" || r.SHA256 != sum || r.URL != "" {
		t.Errorf("Write = %+v, want version 2.1.5.9, sha256 %s, no url", r, sum)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "SvcWebwrapper-2.1.5.9.msi")); err != nil || string(b) != "an installer" {
		t.Errorf("the site's installer = %q, %v; want the build's", b, err)
	}
	var feed map[string]string
	if b, err := os.ReadFile(filepath.Join(dir, "stable.json")); err != nil || json.Unmarshal(b, &feed) != nil {
		t.Fatalf("stable.json = %s (%v)", b, err)
	}
	if len(feed) != 2 || feed["version"] != "2.1.5.9" || feed["sha256"] != sum {
		t.Errorf("stable.json = %v, want version and sha256", feed)
	}

	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	feedURL := update.FeedURL(srv.URL+"/", "")
	for _, tt := range []struct {
		current string
		newer   bool
	}{{"2.1.5.0", true}, {"2.1.5.9", false}} {
		got, newer, err := update.Check(context.Background(), srv.Client(), feedURL, tt.current)
		if err != nil || newer != tt.newer {
			t.Errorf("update.Check(%s) = %v, %v; want newer %v", tt.current, newer, err, tt.newer)
			continue
		}
		if got.URL != srv.URL+"/SvcWebwrapper-2.1.5.9.msi" {
			t.Errorf("update.Check(%s) links %q, want the installer next to the feed", tt.current, got.URL)
		}
	}
}

// The page has a section in each of the service's languages with the version, the
// download and the checksum, and its inline style and script are the ones its policy
// allows.
func TestPage(t *testing.T) {
	src, sum := msi(t, "an installer")
	dir := wintest.TempDir(t)
	if _, err := Write(dir, src, "2.1.5.9"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, lang := range i18n.Languages {
		start := strings.Index(page, `<section id="`+lang+`" lang="`+lang+`">`)
		if start < 0 {
			t.Errorf("no section in %s", lang)
			continue
		}
		sec := page[start : start+strings.Index(page[start:], "</section>")]
		for _, want := range []string{
			i18n.T(lang, "webwrapper_site.title"),
			i18n.T(lang, "webwrapper_site.download", "version", "2.1.5.9"),
		} {
			if !strings.Contains(sec, template.HTMLEscapeString(want)) {
				t.Errorf("the %s section lacks %q", lang, want)
			}
		}
		for _, want := range []string{
			`<a class="download" href="SvcWebwrapper-2.1.5.9.msi"`,
			`<code class="sha256">` + sum + `</code>`,
		} {
			if !strings.Contains(sec, want) {
				t.Errorf("the %s section lacks %q", lang, want)
			}
		}
		if !strings.Contains(page, `hreflang="`+lang+`">`+template.HTMLEscapeString(i18n.T(lang, "language.name"))+`</a>`) {
			t.Errorf("the language menu lacks %s", lang)
		}
	}
	policy := regexp.MustCompile(`style-src '([^']+)'; script-src '([^']+)'`).FindStringSubmatch(page)
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(page)
	script := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindStringSubmatch(page)
	if policy == nil || style == nil || script == nil {
		t.Fatalf("the page has no policy, style or script:\n%s", page)
	}
	// The policy is an attribute's value, with + written &#43;.
	if html.UnescapeString(policy[1]) != cspHash(style[1]) || html.UnescapeString(policy[2]) != cspHash(script[1]) {
		t.Errorf("the policy allows %q and %q, not the page's own style and script", policy[1], policy[2])
	}
}

func TestWriteRefuses(t *testing.T) {
	src, _ := msi(t, "an installer")
	for _, version := range []string{"", "2.1.5.x", "2.1.5.9.1", "2.1.5.9<"} {
		if _, err := Write(wintest.TempDir(t), src, version); err == nil {
			t.Errorf("Write(version %q) succeeded, want an error", version)
		}
	}
	if _, err := Write(wintest.TempDir(t), filepath.Join(wintest.TempDir(t), "missing.msi"), "2.1.5.9"); err == nil {
		t.Error("Write of a missing installer succeeded")
	}
}

// The build writes the MSI into the site's folder itself: it stays as it is.
func TestWriteInPlace(t *testing.T) {
	dir := wintest.TempDir(t)
	path := filepath.Join(dir, "SvcWebwrapper-2.1.5.9.msi")
	if err := os.WriteFile(path, []byte("in place"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, path, "2.1.5.9"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "in place" {
		t.Errorf("the installer written in place = %q, %v", b, err)
	}
}
