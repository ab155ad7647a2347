package web

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/problem"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds the app's pages and the problem package's page, parsed first so that
// templates/problem.html's blocks put it inside the layout.
var pages = template.Must(template.Must(problem.ParsePage(template.New("").Funcs(template.FuncMap{"plain": plain, "segment": url.PathEscape}).Funcs(languageFuncs(i18n.Default)))).ParseFS(templateFS, "templates/*.html"))

// segment (url.PathEscape) makes a value one path segment of a link, as the page script's
// encodeURIComponent does: html/template escapes a URL for its attribute, not a value for
// its segment, so a "/" or "?" in a case id would otherwise lead elsewhere on the site.

// plain drops the Unicode bidirectional formatting characters (embeddings and overrides
// U+202A-U+202E, isolates U+2066-U+2069, the marks U+200E, U+200F and U+061C) from a
// partner-supplied name: a name holding U+202E could otherwise show reversed text on a
// page that asks a person to confirm who they are linking.
func plain(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e', r == '\u200f', r == '\u061c':
			return -1
		}
		return r
	}, s)
}

func staticFiles() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	return http.FileServerFS(filesOnly{sub})
}

// filesOnly is an fs.FS that opens files and no folder: http.FileServer lists a folder's
// contents, which would name every module of the application to anyone, and redirects a
// folder's path without its slash. A folder is not_found like a name that does not exist.
type filesOnly struct{ fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}

// render executes a page into a buffer first, so a template error becomes a clean 500
// instead of half a page.
func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := pagesFor(w).ExecuteTemplate(&buf, name, data); err != nil {
		h.log.Error("rendering page failed", "page", name, "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
