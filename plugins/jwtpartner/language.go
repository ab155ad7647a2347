package jwtpartner

import (
	"html/template"
	"net/http"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/problem"
)

// The /payload refusal page is read by a person (a nurse whose program opened the link), so
// it speaks the browser's language (Accept-Language, negotiated by the i18n package as
// the app service's pages are), with the app service's catalogue: the code's title, one
// sentence saying the link could not be opened, and the line with the code, status and
// request id. The code, status and request id are the same in every language; the
// verifier's detail and the fields' reasons are for the partner's developers and stay
// English, marked as such. /url's problem document is English whatever the request says.

// refusalPages holds the refusal page of each language but English, whose page is the
// problem package's own.
var refusalPages = func() map[string]*template.Template {
	m := make(map[string]*template.Template, len(i18n.Languages))
	for _, lang := range i18n.Languages {
		if lang == i18n.Default {
			continue
		}
		funcs := template.FuncMap{
			"lang": func() string { return lang },
			"t":    func(key string) string { return i18n.T(lang, key) },
			"codeLine": func(p problem.Problem) template.HTML {
				request := template.HTML("")
				if p.RequestID != "" {
					request = i18n.HTML(lang, "problem.request", "request", i18n.Element("code", "", p.RequestID))
				}
				return i18n.HTML(lang, "problem.code", "code", i18n.Element("code", "code", p.Code), "status", p.Status, "request", request)
			},
		}
		t := template.Must(problem.ParsePage(template.New("").Funcs(funcs)))
		m[lang] = template.Must(t.Parse(refusalBlocks))
	}
	return m
}()

// refusalBlocks are the blocks of the page that a language changes.
const refusalBlocks = `{{define "problem_lang"}}{{lang}}{{end}}` +
	`{{define "problem_detail"}}<p>{{t "problem.link_not_opened"}}</p>{{if .Detail}}
<p><small lang="en">{{.Detail}}</small></p>{{end}}{{end}}` +
	`{{define "problem_code"}}<p><small>{{codeLine .}}</small></p>{{end}}`

// writePage answers p as the refusal page in the language acceptLanguage asks for.
func writePage(w http.ResponseWriter, p problem.Problem, frameAncestors []string, acceptLanguage string) error {
	lang := i18n.Choose(acceptLanguage)
	t, ok := refusalPages[lang]
	if !ok {
		return problem.WritePage(w, p, frameAncestors, nil)
	}
	p.Title = i18n.ProblemTitle(lang, problem.Code(p.Code))
	w.Header().Set("Content-Language", lang)
	return problem.WritePage(w, p, frameAncestors, t)
}
