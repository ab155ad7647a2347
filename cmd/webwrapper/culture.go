package main

import (
	"net/url"
	"strings"
)

// cultureURL is the start URL u with culture=<culture> in its query, as the original
// wrapper appended its Culture to the start URL: the service shows its sign-in page and
// application in that language (docs/appservice.md, Languages), whatever language the
// browser asks for. A culture already in u is replaced; an empty culture, or a URL that
// does not parse, leaves u as it is.
func cultureURL(u, culture string) string {
	culture = strings.TrimSpace(culture)
	if culture == "" {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set("culture", culture)
	p.RawQuery = q.Encode()
	return p.String()
}
