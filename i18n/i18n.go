// Package i18n is the app service's message catalogue and language choice: one JSON file
// per language under messages/ (English, Norwegian bokmål, Swedish, Danish, German), used
// by the Go templates, the case PDF and the page's JavaScript (served to it as JSON), with
// English as the fallback; the negotiation of a language from what a request offers
// (golang.org/x/text/language's matcher, never a string prefix); and dates and times
// written as the language writes them, for the PDF (the page uses Intl).
package i18n

import (
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/text/language"
)

// Default is the fallback language: a key missing from another language is English.
const Default = "en"

// supported are the languages of the catalogue, Default first: the matcher answers the
// first with confidence No when nothing matches.
var supported = []language.Tag{language.English, language.MustParse("nb"), language.Swedish, language.Danish, language.German}

// Languages are the codes of the supported languages (BCP 47 base tags), Default first.
var Languages = []string{"en", "nb", "sv", "da", "de"}

var matcher = language.NewMatcher(supported)

//go:embed messages/*.json
var files embed.FS

// catalogue holds every language's messages by key.
var catalogue = load()

func load() map[string]map[string]string {
	c := make(map[string]map[string]string, len(Languages))
	for _, lang := range Languages {
		b, err := files.ReadFile("messages/" + lang + ".json")
		if err != nil {
			panic(fmt.Sprintf("i18n: reading messages of %s: %v", lang, err))
		}
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			panic(fmt.Sprintf("i18n: decoding messages of %s: %v", lang, err))
		}
		c[lang] = m
	}
	return c
}

// Supported reports whether lang is one of Languages, exactly.
func Supported(lang string) bool {
	return slices.Contains(Languages, lang)
}

// Match returns the supported language that best serves tag, a BCP 47 tag (a culture such
// as nb-NO, a saved choice, a cookie) or an Accept-Language header's value, and whether it
// serves it at all: "no" and "nn-NO" match bokmål, "de-AT" German, "fr" nothing. Parsing
// and matching are the language package's (CLDR's distances), so "nob" is bokmål and
// "english" is nothing.
func Match(tag string) (string, bool) {
	tag = strings.TrimSpace(tag)
	if tag == "" || len(tag) > 256 {
		return "", false
	}
	tags, _, err := language.ParseAcceptLanguage(tag)
	if err != nil || len(tags) == 0 {
		return "", false
	}
	_, i, conf := matcher.Match(tags...)
	if conf == language.No {
		return "", false
	}
	return Languages[i], true
}

// Choose returns the language of a request from its sources in order of precedence, the
// first that matches winning: an explicit culture (the start URL's culture parameter, or
// the one a cookie remembers), the account's saved choice, the browser's Accept-Language.
// Without any, Default.
func Choose(sources ...string) string {
	for _, s := range sources {
		if lang, ok := Match(s); ok {
			return lang
		}
	}
	return Default
}

// T returns the message key in lang with its {name} placeholders replaced by args, given
// as name, value pairs; the English message when lang has none, the key itself when
// English has none either (the catalogue test makes sure neither happens).
func T(lang, key string, args ...string) string {
	msg, ok := catalogue[lang][key]
	if !ok {
		msg, ok = catalogue[Default][key]
	}
	if !ok {
		return key
	}
	if len(args) == 0 {
		return msg
	}
	pairs := make([]string, 0, len(args))
	for i := 0; i+1 < len(args); i += 2 {
		pairs = append(pairs, "{"+args[i]+"}", args[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(msg)
}

// Has reports whether key is in the catalogue.
func Has(key string) bool {
	_, ok := catalogue[Default][key]
	return ok
}

// Messages returns lang's whole catalogue with English filling its gaps: what the page's
// JavaScript gets.
func Messages(lang string) map[string]string {
	m := maps.Clone(catalogue[Default])
	maps.Copy(m, catalogue[lang])
	return m
}

// Keys returns the keys of lang's own messages, sorted.
func Keys(lang string) []string {
	return slices.Sorted(maps.Keys(catalogue[lang]))
}
