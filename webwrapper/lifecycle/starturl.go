package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
)

// cultureURL is the start URL u with culture=<culture> in its query, as the original
// wrapper appended its Culture to the start URL: the service shows its sign-in page and
// application in that language (docs/appservice.md, Languages), whatever language the
// browser asks for. A culture already in u is replaced; an empty culture, or a URL that
// does not parse, leaves u as it is.
func cultureURL(u, culture string) string {
	return withQuery(u, "culture", strings.TrimSpace(culture))
}

// adfsURL is the AdfsUrl setting with key=value added to its query, as the original
// appended signon=<user> and signout=1; an empty value adds nothing.
func adfsURL(adfs, key, value string) string {
	return withQuery(adfs, key, value)
}

// withQuery sets key=value in u's query; an empty value, or a URL that does not parse,
// leaves u as it is.
func withQuery(u, key, value string) string {
	if value == "" {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String()
}

// sessionKey names the kept session of the window after the external user a start signs
// on as, so that a start with another external user finds no session and asks for a
// sign-in, while the same user (in any case: DOMAIN\asa) comes back signed in. No
// external user has the one session of a wrapper without single sign-on ("").
func sessionKey(external string) string {
	if external == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.ToLower(external)))
	return hex.EncodeToString(sum[:8])
}
