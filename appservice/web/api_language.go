package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/problem"
)

// apiSetLanguage saves the language a person picked in the page for their account, and
// in the language cookie, which the pages read before the account's choice: a culture the
// start URL gave earlier in this browser would otherwise still win. Instructors and
// members alike, with or without an organization. Body {"language": "nb"}: one of the
// catalogue's codes exactly, or "" to follow the browser again.
func (h *Handler) apiSetLanguage(r *apiRequest) (int, any, error) {
	if r.s == nil {
		return 0, nil, refusal{problem.New(problem.CodeSessionRequired, "Your session has ended. Open the link again from your partner application, or sign in.")}
	}
	var in struct {
		Language *string `json:"language"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	var fe fieldErrors
	switch {
	case in.Language == nil:
		fe.add("language", "required (empty follows the browser)")
	case *in.Language != "" && !i18n.Supported(*in.Language):
		fe.add("language", "must be one of "+strings.Join(i18n.Languages, ", ")+", or empty")
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	if err := h.cfg.Store.SetAccountLanguage(r.Context(), r.s.Account.ID, *in.Language); err != nil {
		return 0, nil, err
	}
	if *in.Language == "" {
		h.setCookie(r.w, r.Request, langCookie, "", -1)
	} else {
		h.setCookie(r.w, r.Request, langCookie, *in.Language, 0)
	}
	return http.StatusOK, map[string]string{"language": *in.Language}, nil
}

// messages answers the catalogue of one language as JSON, English filling its gaps: the
// page's JavaScript (static/app/i18n.js) reads its texts from it, so that they have one
// copy, the server's. Public: the texts are those of the pages anyone may open.
func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	lang := r.PathValue("lang")
	if !i18n.Supported(lang) {
		writeProblem(w, problem.New(problem.CodeNotFound, "There is no such language: the languages are "+strings.Join(i18n.Languages, ", ")+"."))
		return
	}
	b, err := json.Marshal(i18n.Messages(lang))
	if err != nil {
		h.log.Error("encoding messages failed", "error", err.Error())
		writeProblem(w, problem.New(problem.CodeInternal, "The messages could not be encoded."))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Language", lang)
	w.Write(b)
}
