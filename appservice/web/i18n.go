package web

import (
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"strings"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/problem"
)

// The language of a request (docs/appservice.md, Languages) is chosen in ServeHTTP from
// the culture query parameter, which a start URL carries (the desktop wrapper appends
// culture=<Culture>), then the cookie that remembers it, then Accept-Language; a page that
// reads the session puts the account's saved choice before Accept-Language. The choice is
// the answer's Content-Language, which render and fail read to write the page in it: the
// handlers need not pass it along, and the header says what the page is in.
const (
	cultureParam = "culture"
	langCookie   = "pg_lang"
)

// chooseLanguage sets the answer's Content-Language from the request alone, and remembers
// an explicit culture parameter in the language cookie for the pages that follow. Answers
// that are no page for a person get none: the JSON API and /url's problem documents are
// English for developers, the static files and the catalogue are what they are.
func (h *Handler) chooseLanguage(w http.ResponseWriter, r *http.Request) {
	if !isPage(r.URL.Path) {
		return
	}
	if lang, ok := h.explicitLanguage(r); ok {
		if c := r.URL.Query().Get(cultureParam); c != "" && h.cookie(r, langCookie) != lang {
			h.setCookie(w, r, langCookie, lang, 0)
		}
		w.Header().Set("Content-Language", lang)
		return
	}
	w.Header().Set("Content-Language", i18n.Choose(r.Header.Get("Accept-Language")))
}

// isPage reports whether path is answered with a page a person reads.
func isPage(path string) bool {
	switch {
	case strings.HasPrefix(path, apiPrefix), strings.HasPrefix(path, "/app/static/"), strings.HasPrefix(path, "/app/messages/"),
		path == "/healthz", strings.HasPrefix(path, "/partner/") && strings.HasSuffix(path, "/url"):
		return false
	}
	return true
}

// explicitLanguage is the language the person asked for in this browser: the culture
// parameter of this request, else the cookie's.
func (h *Handler) explicitLanguage(r *http.Request) (string, bool) {
	if r.Method == http.MethodGet {
		if lang, ok := i18n.Match(r.URL.Query().Get(cultureParam)); ok {
			return lang, true
		}
	}
	if lang := h.cookie(r, langCookie); i18n.Supported(lang) {
		return lang, true
	}
	return "", false
}

// sessionLanguage puts the account's saved choice before Accept-Language, once the
// session is known: an explicit culture still comes first.
func (h *Handler) sessionLanguage(w http.ResponseWriter, r *http.Request, s *store.Session) {
	if s == nil || s.Account == nil || !i18n.Supported(s.Account.Language) {
		return
	}
	if _, ok := h.explicitLanguage(r); !ok {
		w.Header().Set("Content-Language", s.Account.Language)
	}
}

// answerLanguage is the language chosen for the answer w.
func answerLanguage(w http.ResponseWriter) string {
	if lang := w.Header().Get("Content-Language"); i18n.Supported(lang) {
		return lang
	}
	return i18n.Default
}

// pagesFor returns the page templates that write in the answer's language.
func pagesFor(w http.ResponseWriter) *template.Template {
	return pagesByLanguage[answerLanguage(w)]
}

// pagesByLanguage holds a clone of pages per language whose t, th, tr and lang functions
// speak it; pages itself is parsed with English ones.
var pagesByLanguage = func() map[string]*template.Template {
	m := make(map[string]*template.Template, len(i18n.Languages))
	for _, lang := range i18n.Languages {
		m[lang] = template.Must(pages.Clone()).Funcs(languageFuncs(lang))
	}
	return m
}()

// language is an entry of the language picker: the code and the language's own name.
type language struct{ Code, Name string }

var languageNames = []language{{"en", "English"}, {"nb", "Norsk (bokmål)"}, {"sv", "Svenska"}, {"da", "Dansk"}, {"de", "Deutsch"}}

// languageFuncs are the template functions of lang:
//
//	t key [name value]...      the message, placeholders filled, escaped by the template
//	th key [name value]...     the message with HTML pieces (el, username, ...) in its
//	                           placeholders; the message's own text and string values are escaped
//	tr english                 a message the Go code wrote in English (a server.* key's text)
//	el tag id text             <strong>, <code> or <span> with the escaped text (id optional)
//	day yyyy-MM-dd             the date as the language writes one (a birth date)
//	lang, languages            the page's language; every language with its own name
func languageFuncs(lang string) template.FuncMap {
	t := func(key string, args ...any) string { return i18n.T(lang, key, stringArgs(args)...) }
	th := func(key string, args ...any) template.HTML { return i18n.HTML(lang, key, args...) }
	return template.FuncMap{
		"t":         t,
		"th":        th,
		"tr":        func(english string) string { return translateServer(lang, english) },
		"lang":      func() string { return lang },
		"day":       func(isoDate string) string { return i18n.Day(lang, isoDate) },
		"languages": func() []language { return languageNames },
		"el":        i18n.Element,
		"username": func(username, id string) template.HTML {
			if username == "" {
				return ""
			}
			return " (" + i18n.Element("code", id, plain(username)) + ")"
		},
		"partnerIDs": func(username, id string) template.HTML {
			if username == "" {
				return th("ids.id", "id", i18n.Element("code", "", plain(id)))
			}
			return th("ids.username_id", "username", i18n.Element("code", "", plain(username)), "id", i18n.Element("code", "", plain(id)))
		},
		"requestID": func(id string) template.HTML {
			if id == "" {
				return ""
			}
			return th("problem.request", "request", i18n.Element("code", "", id))
		},
	}
}

func stringArgs(args []any) []string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = fmt.Sprint(a)
	}
	return s
}

// serverMessages maps the English text of each server.* message to its key, and
// serverPatterns matches those with a {placeholder} (the username in "The username
// {username} is taken"). Messages the Go code writes (a sign-in refusal, a problem's
// detail) are English there, as gettext's message ids are: the partner API's problem
// documents keep that English detail, as documented for partner developers, and a page
// shows its translation.
var serverMessages, serverPatterns = func() (map[string]string, []serverPattern) {
	m := map[string]string{}
	var pats []serverPattern
	for _, k := range i18n.Keys(i18n.Default) {
		if !strings.HasPrefix(k, "server.") {
			continue
		}
		v := i18n.T(i18n.Default, k)
		m[v] = k
		names := placeholder.FindAllStringSubmatch(v, -1)
		if len(names) == 0 {
			continue
		}
		pieces := placeholder.Split(v, -1)
		for i := range pieces {
			pieces[i] = regexp.QuoteMeta(pieces[i])
		}
		pat := "^" + strings.Join(pieces, "(.+)") + "$"
		pats = append(pats, serverPattern{key: k, re: regexp.MustCompile(pat), names: names})
	}
	return m, pats
}()

type serverPattern struct {
	key   string
	re    *regexp.Regexp
	names [][]string
}

// placeholder is a {name} in a message.
var placeholder = regexp.MustCompile(`\{([a-z]+)\}`)

// translateServer is english in lang when the catalogue has it, else english as it is.
func translateServer(lang, english string) string {
	if key, ok := serverMessages[english]; ok {
		return i18n.T(lang, key)
	}
	for _, p := range serverPatterns {
		if m := p.re.FindStringSubmatch(english); m != nil {
			args := make([]string, 0, 2*len(p.names))
			for i, n := range p.names {
				args = append(args, n[1], m[i+1])
			}
			return i18n.T(lang, p.key, args...)
		}
	}
	return english
}

// localProblem is p as a page in the answer's language shows it: the title of its code
// and its detail translated; code, status and request id unchanged. A title the Go code
// set itself (not the code's) is a server.* message.
func localProblem(w http.ResponseWriter, p problem.Problem) problem.Problem {
	lang := answerLanguage(w)
	if p.Title == problem.Title(problem.Code(p.Code)) {
		p.Title = i18n.ProblemTitle(lang, problem.Code(p.Code))
	} else {
		p.Title = translateServer(lang, p.Title)
	}
	p.Detail = translateServer(lang, p.Detail)
	return p
}

// apiLanguage is the language of an API call's answer (the case PDF): the explicit
// culture, then the account's saved choice, then Accept-Language, as for the pages.
func (h *Handler) apiLanguage(r *apiRequest) string {
	if lang, ok := h.explicitLanguage(r.Request); ok {
		return lang
	}
	saved := ""
	if r.s != nil && r.s.Account != nil {
		saved = r.s.Account.Language
	}
	return i18n.Choose(saved, r.Header.Get("Accept-Language"))
}
