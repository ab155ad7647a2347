package web

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/linkspec"
)

// getWith is b.get with the request's Accept-Language set.
func (b *browser) getWith(path, acceptLanguage string) (*http.Response, string) {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if acceptLanguage != "" {
		r.Header.Set("Accept-Language", acceptLanguage)
	}
	res := b.do(r)
	return res, body(b.t, res)
}

// TestLanguageOfSignIn: the sign-in page speaks the language the culture parameter names
// (and keeps it for the next page, in a cookie), else the browser's; English when neither
// is one of ours. What a person reads changes, the form does not.
func TestLanguageOfSignIn(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	for _, tt := range []struct {
		name, path, accept string
		lang, heading      string
	}{
		{"culture nb-NO", "/app/signin?culture=nb-NO", "de-DE,de;q=0.9", "nb", "<h1>Logg inn</h1>"},
		{"culture sv", "/app/signin?culture=sv", "", "sv", "<h1>Logga in</h1>"},
		{"culture da-DK", "/app/signin?culture=da-DK", "", "da", "<h1>Log ind</h1>"},
		{"Accept-Language de-AT", "/app/signin", "de-AT,de;q=0.9,en;q=0.5", "de", "<h1>Anmelden</h1>"},
		{"Accept-Language no", "/app/signin", "no", "nb", "<h1>Logg inn</h1>"},
		{"Accept-Language fr", "/app/signin", "fr-FR,fr;q=0.9", "en", "<h1>Sign in</h1>"},
		{"unknown culture falls to Accept-Language", "/app/signin?culture=xx-YY", "sv-SE", "sv", "<h1>Logga in</h1>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBrowser(t, f.h)
			res, page := b.getWith(tt.path, tt.accept)
			if res.StatusCode != http.StatusOK || !strings.Contains(page, `<html lang="`+tt.lang+`">`) || !strings.Contains(page, tt.heading) {
				t.Fatalf("GET %s (Accept-Language %q) = %d, want lang %s and %s:\n%s", tt.path, tt.accept, res.StatusCode, tt.lang, tt.heading, page)
			}
			if got := res.Header.Get("Content-Language"); got != tt.lang {
				t.Errorf("Content-Language = %q, want %q", got, tt.lang)
			}
			if !strings.Contains(page, `name="csrf"`) || !strings.Contains(page, `id="login"`) {
				t.Errorf("the translated page lost its form:\n%s", page)
			}
		})
	}

	t.Run("culture remembered", func(t *testing.T) {
		b := newBrowser(t, f.h)
		b.getWith("/app/signin?culture=nb-NO", "en")
		_, page := b.getWith("/app/signed-out", "en")
		if !strings.Contains(page, `<html lang="nb">`) || !strings.Contains(page, "Du er logget ut.") {
			t.Fatalf("next page after culture=nb-NO is not Norwegian:\n%s", page)
		}
		// a wrong password is said in the page's language too
		_, page = b.get("/app/signin")
		_, page = b.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"wrong"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
		if !strings.Contains(page, "Feil brukernavn eller passord.") {
			t.Errorf("wrong password in Norwegian, want %q:\n%s", "Feil brukernavn eller passord.", page)
		}
	})
}

// TestLanguageOfProblemPage: a problem page shows its code's title and its detail in the
// page's language and keeps the stable code; the partner API's problem document stays
// English, as documented for partner developers.
func TestLanguageOfProblemPage(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)
	res, page := b.getWith("/app/login?code=not-a-code&culture=de", "")
	for _, want := range []string{`<html lang="de">`, "<h1>Link ungültig</h1>", "Dieser Anmeldelink ist ungültig.", `<code id="code">login_code_invalid</code>`, "Fehlercode"} {
		if !strings.Contains(page, want) {
			t.Errorf("problem page in German lacks %q:\n%s", want, page)
		}
	}
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", res.StatusCode)
	}

	p := mainPayload()
	p.OrganizationID = ""
	r := forwardRequest(t, "url", p, string(linkspec.KindMain), f.now)
	r.Header.Set("Accept-Language", "nb-NO")
	res = serve(f.h, r)
	var doc struct{ Title, Detail, Code string }
	if err := json.Unmarshal([]byte(body(t, res)), &doc); err != nil || doc.Code != "payload_invalid" {
		t.Fatalf("/url refusal = %d %+v, %v", res.StatusCode, doc, err)
	}
	if doc.Title != "Payload invalid" || doc.Detail != "The link's payload does not fit its kind." {
		t.Errorf("/url refusal with Accept-Language nb = %+v, want the documented English title and detail", doc)
	}
	if got := res.Header.Get("Content-Language"); got != "" {
		t.Errorf("/url refusal's Content-Language = %q, want none: the document is the partner API's English", got)
	}
}

// TestLanguageSaved: the language picked in the page is saved for the account: it wins
// over Accept-Language in any browser the person signs in from, and a culture parameter
// still wins over it. The route follows the API's rules for writes.
func TestLanguageSaved(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, _, _ := db.open(t)
			w := newAPIWorld(t, dsn)
			c := w.instructor

			res, b := c.call(http.MethodPut, "/app/api/me/language", `{"language":"de"}`, func(r *http.Request) { r.Header.Del("X-CSRF-Token") })
			problemOf(t, res, b, http.StatusForbidden, "csrf_invalid")
			res, b = c.call(http.MethodPut, "/app/api/me/language", `{"language":"de"}`, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") })
			problemOf(t, res, b, http.StatusForbidden, "origin_forbidden")
			for _, bad := range []string{`{"language":"fr"}`, `{"language":"de-DE"}`, `{}`, `{"language":"de","LANGUAGE":"sv"}`} {
				res, b = c.call(http.MethodPut, "/app/api/me/language", bad)
				problemOf(t, res, b, http.StatusBadRequest, "invalid_argument")
			}
			anon := &apiClient{browser: newBrowser(t, w.f.h)}
			res, b = anon.call(http.MethodPut, "/app/api/me/language", `{"language":"de"}`, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-origin") })
			if res.StatusCode != http.StatusForbidden && res.StatusCode != http.StatusUnauthorized {
				t.Errorf("PUT me/language without a session = %d %s, want a refusal", res.StatusCode, b)
			}
			if _, page := c.getWith("/app", "sv-SE"); !strings.Contains(page, `<html lang="sv">`) {
				t.Fatalf("before a choice the shell follows Accept-Language sv:\n%s", page)
			}

			res, b = c.call(http.MethodPut, "/app/api/me/language", `{"language":"de"}`)
			if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"language":"de"`) {
				t.Fatalf("PUT me/language de = %d %s", res.StatusCode, b)
			}
			if _, page := c.getWith("/app", "sv-SE"); !strings.Contains(page, `<html lang="de">`) || !strings.Contains(page, ">Abmelden</button>") {
				t.Errorf("after choosing German the shell is not German:\n%s", page)
			}

			// Another browser, without the cookie: the account's choice beats its Accept-Language.
			fresh := newBrowser(t, w.f.h)
			_, page := fresh.getWith("/app/signin", "sv-SE")
			res, _ = fresh.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
			if res.Header.Get("Location") != "/app" {
				t.Fatalf("sign-in → %q", res.Header.Get("Location"))
			}
			if _, page := fresh.getWith("/app", "sv-SE"); !strings.Contains(page, `<html lang="de">`) || !strings.Contains(page, `<option value="de" lang="de" selected>`) {
				t.Errorf("saved German does not beat Accept-Language sv in another browser:\n%s", page)
			}
			if _, page := fresh.getWith("/app?culture=da", "sv-SE"); !strings.Contains(page, `<html lang="da">`) {
				t.Errorf("culture=da does not beat the saved German:\n%s", page)
			}

			// The member's page follows its own choice; "" follows the browser again.
			m := w.member
			if res, b := m.call(http.MethodPut, "/app/api/me/language", `{"language":"nb"}`); res.StatusCode != http.StatusOK {
				t.Fatalf("member PUT me/language nb = %d %s", res.StatusCode, b)
			}
			if _, page := m.getWith("/go", "en"); !strings.Contains(page, `<html lang="nb">`) || !strings.Contains(page, ">Mine program</a>") {
				t.Errorf("member's Go page is not Norwegian:\n%s", page)
			}
			if res, b := m.call(http.MethodPut, "/app/api/me/language", `{"language":""}`); res.StatusCode != http.StatusOK {
				t.Fatalf("member PUT me/language \"\" = %d %s", res.StatusCode, b)
			}
			if _, page := m.getWith("/go", "en"); !strings.Contains(page, `<html lang="en">`) {
				t.Errorf("after clearing the choice the Go page does not follow Accept-Language en:\n%s", page)
			}
		})
	}
}

// TestMessagesServed: the page's scripts get the one catalogue, per language, English
// filling nothing since every language is complete.
func TestMessagesServed(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)
	res, text := b.get("/app/messages/nb")
	var m map[string]string
	if err := json.Unmarshal([]byte(text), &m); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /app/messages/nb = %d %v", res.StatusCode, err)
	}
	if m["editor.save"] != "Lagre programmet" || res.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("messages nb: editor.save = %q, type %q", m["editor.save"], res.Header.Get("Content-Type"))
	}
	for _, path := range []string{"/app/messages/fr", "/app/messages/nb-NO", "/app/messages/"} {
		if res, _ := b.get(path); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, res.StatusCode)
		}
	}
}

// TestTranslateServer: a message the Go code writes in English reads in the page's
// language, a {placeholder}'s value kept; one the catalogue lacks stays as it is.
func TestTranslateServer(t *testing.T) {
	for _, tt := range []struct{ lang, english, want string }{
		{"nb", "Wrong username or password.", "Feil brukernavn eller passord."},
		{"de", "The username ada.l is taken. Choose another one.", "Der Benutzername ada.l ist vergeben. Wählen Sie einen anderen."},
		{"sv", "The path is not /partner/{name}/url or /partner/{name}/payload.", "Sökvägen är inte /partner/{name}/url eller /partner/{name}/payload."},
		{"da", "Something the catalogue does not have.", "Something the catalogue does not have."},
		{"en", "Wrong username or password.", "Wrong username or password."},
	} {
		if got := translateServer(tt.lang, tt.english); got != tt.want {
			t.Errorf("translateServer(%q, %q) = %q, want %q", tt.lang, tt.english, got, tt.want)
		}
	}
}

// englishLeft returns the English texts of the catalogue that page, written in lang,
// still shows: every piece of at least two words between an English message's
// placeholders, unless lang's own message has the same words.
func englishLeft(lang, page string) []string {
	text := html.UnescapeString(page)
	var left []string
	for _, k := range i18n.Keys(i18n.Default) {
		own := i18n.T(lang, k)
		for _, piece := range placeholder.Split(i18n.T(i18n.Default, k), -1) {
			piece = strings.TrimSpace(piece)
			if len(strings.Fields(piece)) < 2 || strings.Contains(own, piece) {
				continue
			}
			if strings.Contains(text, piece) {
				left = append(left, k+": "+piece)
			}
		}
	}
	return left
}

// TestPagesInNorwegian: every page of sign-in and first sight (the greeting, account
// creation with its refusals, the link question, the account switch, a problem page, a
// message page, signed out) and the shell of both roles, in a browser that asked for
// Norwegian, show no English text of the catalogue.
func TestPagesInNorwegian(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)
	check := func(name string, res *http.Response, page string) {
		t.Helper()
		if !strings.Contains(page, `<html lang="nb">`) {
			t.Errorf("%s (%d) is not in Norwegian:\n%s", name, res.StatusCode, page)
		}
		if left := englishLeft("nb", page); len(left) > 0 {
			t.Errorf("%s shows English: %q", name, left)
		}
	}
	res, page := b.get("/app/signin?culture=nb-NO")
	check("sign-in page", res, page)

	b.signInByLink(f.link(t, mainPayload(), "main"))
	res, page = b.get("/app/signin")
	check("first-sight page", res, page)
	if !strings.Contains(page, "Velkommen, Ida Berg.") {
		t.Errorf("first-sight page lacks the Norwegian greeting:\n%s", page)
	}
	token := csrfField.FindStringSubmatch(page)[1]
	res, page = b.post("/app/signup", url.Values{"username": {"a"}, "email": {"not-an-address"}, "displayname": {"Ida Berg"},
		"password": {"short"}, "password2": {"other"}, "csrf": {token}})
	check("account creation refused", res, page)
	for _, want := range []string{"Brukernavnet må ha 3 til 64 tegn", "E-postadressen er ikke gyldig", "Passordet må ha minst 12 tegn."} {
		if !strings.Contains(page, want) {
			t.Errorf("refused account creation lacks %q:\n%s", want, page)
		}
	}
	res, _ = b.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {token}})
	if res.Header.Get("Location") != "/app/link" {
		t.Fatalf("sign-in → %q, want /app/link", res.Header.Get("Location"))
	}
	res, page = b.get("/app/link")
	check("link question", res, page)
	if !strings.Contains(page, `Koble partnerbruker <strong id="link-employee">Ida Berg</strong> hos <strong id="link-organization">North Clinic</strong>`) {
		t.Errorf("link question is not the Norwegian sentence with its names:\n%s", page)
	}
	b.post("/app/link", url.Values{"action": {"link"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	res, page = b.get("/app")
	check("instructor's shell", res, page)

	res = b.do(httptest.NewRequest(http.MethodGet, f.link(t, goPayload(), "go"), nil))
	page = body(t, res)
	check("account switch question", res, page)
	if !strings.Contains(page, "Du er logget inn som <strong>Demo Instructor</strong>") {
		t.Errorf("switch question lacks the Norwegian sentence:\n%s", page)
	}
	res, page = b.get("/app/login?code=not-a-code")
	check("problem page", res, page)

	m := newBrowser(t, f.h)
	m.get("/app/signin?culture=nb")
	m.signInByLink(f.link(t, goPayload(), "go"))
	res, page = m.get("/go")
	check("member's shell", res, page)
	res, page = m.get("/app/signed-out")
	check("signed-out page", res, page)
	other := newBrowser(t, f.h)
	_, page = other.get("/app/signin?culture=nb")
	res, page = other.post("/app/signup", url.Values{"username": {"ida"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}})
	check("no pending session message", res, page)
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("account creation without a pending session = %d, want 403", res.StatusCode)
	}

	// The check itself sees English: the English sign-in page fails it.
	en := newBrowser(t, f.h)
	if _, page := en.get("/app/signin"); len(englishLeft("nb", page)) == 0 {
		t.Error("englishLeft finds no English on the English sign-in page")
	}
}
