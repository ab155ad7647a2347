// Package site makes the desktop wrapper's download and update site, {webwrapper_site}
// (B-INST, VER-3), from a built MSI: the installer under its versioned name, the update
// feed of the stable channel that the wrapper reads (update.Release), and a download page
// in the service's languages (i18n) that shows the version and the installer's SHA-256.
// The files are static, for any web server; the deployment's Caddy serves them
// (Caddyfile.example, deploy/Caddyfile). scripts/build-windows.sh runs it through
// cmd/webwrappersite.
package site

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/webwrapper/update"
)

// Files the site is made of, besides the installers: the page and the stable channel's
// feed.
const (
	Page = "index.html"
	Feed = update.DefaultChannel + ".json"
)

// cultures are the culture the page's silent-install example names, by language.
var cultures = map[string]string{"en": "en-GB", "nb": "nb-NO", "sv": "sv-SE", "da": "da-DK", "de": "de-DE"}

//go:embed page.html
var pageHTML string

// base is the parsed page, never executed itself: html/template clones only a template
// that has not run.
var base = template.Must(template.New("site").Funcs(template.FuncMap{
	"t": func(string, ...string) string { panic("site: t is bound per language") },
}).Parse(pageHTML))

// style shows one language at a time: the one the address names (#nb), else English.
const style = `body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1d2327}
nav a{margin-right:.75rem}
section{display:none}
section:target,main:not(:has(section:target)) #en{display:block}
a.download{display:inline-block;padding:.6rem 1.2rem;background:#0b5cad;color:#fff;border-radius:.3rem;text-decoration:none;font-weight:600}
code.sha256{word-break:break-all}
pre{background:#f3f4f5;padding:.6rem;overflow-x:auto}`

// script opens the page in the first of the browser's languages that the page has, when
// the address names none.
const script = `(function(){if(location.hash)return;var have={en:1,nb:1,sv:1,da:1,de:1},alias={no:"nb",nn:"nb"},ls=navigator.languages||[navigator.language];for(var i=0;i<ls.length;i++){var b=String(ls[i]).toLowerCase().split("-")[0];b=alias[b]||b;if(have[b]){if(b!=="en")location.replace("#"+b);return}}})();`

// Write makes the site of the installer msi, version version, in dir: the installer as
// update.MSIName(version) (copied, unless msi is that file already), the feed (its
// version and SHA-256; without url, so the link is the installer next to it, wherever the
// site is served) and the page. It returns the feed's release.
func Write(dir, msi, version string) (update.Release, error) {
	if _, err := update.Compare(version, version); err != nil {
		return update.Release{}, fmt.Errorf("making the site: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return update.Release{}, fmt.Errorf("making the site: %w", err)
	}
	name := update.MSIName(version)
	sum, err := copyInstaller(msi, filepath.Join(dir, name))
	if err != nil {
		return update.Release{}, fmt.Errorf("making the site: %w", err)
	}
	r := update.Release{Version: version, SHA256: sum}
	feed, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return update.Release{}, err
	}
	html, err := render(r, name)
	if err != nil {
		return update.Release{}, fmt.Errorf("making the site: %w", err)
	}
	// The installer first, then the page and the feed that name it.
	for _, f := range []struct {
		name string
		data []byte
	}{{Page, html}, {Feed, append(feed, '\n')}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return update.Release{}, fmt.Errorf("making the site: %w", err)
		}
	}
	return r, nil
}

// copyInstaller copies src to dst (unless they are one file) and returns its SHA-256.
func copyInstaller(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	h := sha256.New()
	same := false
	if a, err := in.Stat(); err == nil {
		if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
			same = true
		}
	}
	if same {
		if _, err := io.Copy(h, in); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		out.Close()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// section is one language's part of the page.
type section struct {
	Lang, Name string
	HTML       template.HTML
}

// render writes the page: a section per language, English first.
func render(r update.Release, msi string) ([]byte, error) {
	var sections []section
	for _, lang := range i18n.Languages {
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		t.Funcs(template.FuncMap{"t": func(key string, args ...string) string { return i18n.T(lang, key, args...) }})
		var b bytes.Buffer
		err = t.ExecuteTemplate(&b, "section", map[string]string{
			"Lang": lang, "MSI": msi, "Version": r.Version, "SHA256": r.SHA256, "Culture": cultures[lang],
		})
		if err != nil {
			return nil, err
		}
		sections = append(sections, section{Lang: lang, Name: i18n.T(lang, "language.name"), HTML: template.HTML(b.String())})
	}
	page, err := base.Clone()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = page.ExecuteTemplate(&b, "page", map[string]any{
		"Version":    r.Version,
		"Sections":   sections,
		"Style":      template.CSS(style),
		"Script":     template.JS(script),
		"StyleHash":  cspHash(style),
		"ScriptHash": cspHash(script),
	})
	return b.Bytes(), err
}

// cspHash is the Content-Security-Policy source of an inline element's text.
func cspHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}
