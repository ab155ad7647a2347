package i18n

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/partnergate/partnergate/problem"
)

// ProblemTitle is the title of a problem code in lang: every code of the problem package
// has one in the catalogue ("problem.title.<code>", TestProblemTitles), so the app
// service's pages and the gateway's refusal page translate a code the same way. A code
// the catalogue lacks keeps its English title.
func ProblemTitle(lang string, code problem.Code) string {
	key := "problem.title." + string(code)
	if !Has(key) {
		return problem.Title(code)
	}
	return T(lang, key)
}

// Element is <tag id="id">text</tag> with text and id escaped, for HTML's placeholders;
// only the inline elements a message may hold.
func Element(tag, id, text string) template.HTML {
	switch tag {
	case "strong", "code", "span":
	default:
		panic("i18n element: tag " + tag + " not allowed")
	}
	attr := ""
	if id != "" {
		attr = ` id="` + template.HTMLEscapeString(id) + `"`
	}
	return template.HTML("<" + tag + attr + ">" + template.HTMLEscapeString(text) + "</" + tag + ">")
}

// HTML is the message key in lang, escaped, with its {name} placeholders filled from args,
// given as name, value pairs: a value of type template.HTML as it is (made by Element),
// anything else escaped.
func HTML(lang, key string, args ...any) template.HTML {
	pairs := make([]string, 0, len(args))
	for i := 0; i+1 < len(args); i += 2 {
		name := "{" + fmt.Sprint(args[i]) + "}"
		switch v := args[i+1].(type) {
		case template.HTML:
			pairs = append(pairs, name, string(v))
		default:
			pairs = append(pairs, name, template.HTMLEscapeString(fmt.Sprint(v)))
		}
	}
	msg := template.HTMLEscapeString(T(lang, key))
	return template.HTML(strings.NewReplacer(pairs...).Replace(msg))
}
