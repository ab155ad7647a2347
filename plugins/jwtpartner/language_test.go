package jwtpartner

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
)

// TestRefusalPageLanguage: the /payload refusal page a person sees speaks the browser's
// language, keeps the code, status and request id, and shows the verifier's detail in
// English marked as such; English (and a language the catalogue lacks) is the page as it
// was; /url's problem document stays English for the partner's developers.
func TestRefusalPageLanguage(t *testing.T) {
	f := newFixture(t, nil)
	expired := func() string {
		return "payload=" + url.QueryEscape(f.token(t, "ES256", harness.Token{Now: f.now.Add(-10 * time.Minute)}))
	}
	for _, tt := range []struct {
		accept, lang, title, codeLine string
	}{
		{"nb-NO,nb;q=0.9,en;q=0.5", "nb", "<h1>Ukjent partner</h1>", "Feilkode"},
		{"de-AT", "de", "<h1>Unbekannter Partner</h1>", "Fehlercode"},
		{"sv", "sv", "<h1>Okänd partner</h1>", "Felkod"},
		{"da", "da", "<h1>Ukendt partner</h1>", "Fejlkode"},
	} {
		r := payloadRequest("nobody", "payload=x.y.z")
		r.Header.Set("Accept-Language", tt.accept)
		w, _, repl, _ := f.serve(r)
		body := w.Body.String()
		id, _ := repl.GetString("http.jwt_partner.request_id")
		if !strings.Contains(body, `<html lang="`+tt.lang+`">`) || w.Header().Get("Content-Language") != tt.lang {
			t.Errorf("Accept-Language %s: page is not in %s (Content-Language %q):\n%s", tt.accept, tt.lang, w.Header().Get("Content-Language"), body)
		}
		if !strings.Contains(body, tt.title) {
			t.Errorf("Accept-Language %s: page lacks %s:\n%s", tt.accept, tt.title, body)
		}
		if !strings.Contains(body, tt.codeLine) || !strings.Contains(body, `<code id="code">`) || id == "" || !strings.Contains(body, id) {
			t.Errorf("Accept-Language %s: the code line is not in %s with the code and request id %q:\n%s", tt.accept, tt.lang, id, body)
		}
	}

	// A verifier rejection: the title translated, the detail kept in English, marked.
	r := payloadRequest("demo", expired())
	r.Header.Set("Accept-Language", "nb")
	w, _, _, _ := f.serve(r)
	body := w.Body.String()
	for _, want := range []string{"<title>Lenken er utløpt</title>", "<h1>Lenken er utløpt</h1>", "<p>Lenken kunne ikke åpnes.</p>", `<small lang="en">`, `<code id="code">token_expired</code>`, "(HTTP 401)"} {
		if !strings.Contains(body, want) {
			t.Errorf("expired token, Norwegian: page lacks %s:\n%s", want, body)
		}
	}
	if w.Code != 401 || w.Header().Get("Content-Security-Policy") != "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'" {
		t.Errorf("Norwegian page: status %d, CSP %q: the page's status and headers must not change with its language", w.Code, w.Header().Get("Content-Security-Policy"))
	}

	// English, and a language the catalogue lacks: the page as before.
	for _, accept := range []string{"en-GB", "fr-FR", ""} {
		r := payloadRequest("demo", expired())
		r.Header.Set("Accept-Language", accept)
		w, _, _, _ := f.serve(r)
		body := w.Body.String()
		if !strings.Contains(body, `<html lang="en">`) || !strings.Contains(body, "<h1>Token expired</h1>") || !strings.Contains(body, "The link could not be opened: ") || w.Header().Get("Content-Language") != "" {
			t.Errorf("Accept-Language %q: want the English page as before:\n%s", accept, body)
		}
	}

	// /url: the problem document stays English.
	r = urlRequest("demo", f.token(t, "ES256", harness.Token{Now: f.now.Add(-10 * time.Minute)}))
	r.Header.Set("Accept-Language", "nb")
	w, _, _, _ = f.serve(r)
	if p := decodeProblem(t, w); p.Title != "Token expired" || w.Header().Get("Content-Language") != "" {
		t.Errorf("/url with Accept-Language nb: title %q, Content-Language %q; want English", p.Title, w.Header().Get("Content-Language"))
	}
}
