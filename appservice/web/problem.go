package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strings"

	"github.com/partnergate/partnergate/linkspec"
)

// problemTypePrefix is the gateway's: one problem type namespace for the whole link flow.
const problemTypePrefix = "urn:partnergate:problem:"

// problem is an RFC 9457 problem in the gateway's shape. endpoint picks the rendering:
// problem+json for /url, a page a person can read everywhere else.
type problem struct {
	endpoint  string
	Type      string                `json:"type"`
	Title     string                `json:"title"`
	Status    int                   `json:"status"`
	Detail    string                `json:"detail,omitempty"`
	Code      string                `json:"code"`
	Fields    []linkspec.FieldError `json:"fields,omitempty"`
	RequestID string                `json:"request_id,omitempty"`
}

func (p problem) with(status int, code, title, detail string) problem {
	p.Type, p.Status, p.Code, p.Title, p.Detail = problemTypePrefix+code, status, code, title, detail
	return p
}

func (h *Handler) fail(w http.ResponseWriter, p problem) {
	if p.endpoint == "url" {
		body, _ := json.Marshal(p)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(p.Status)
		w.Write(body)
		return
	}
	h.render(w, p.Status, "problem", p)
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{"plain": plain}).ParseFS(templateFS, "templates/*.html"))

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
	return http.FileServerFS(sub)
}

// render executes a page into a buffer first, so a template error becomes a clean 500
// instead of half a page.
func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		h.log.Error("rendering page failed", "page", name, "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
