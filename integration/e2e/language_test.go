package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/harness/browser"
)

// browserIn starts a headless chromium whose language is acceptLanguage: the browser's
// Accept-Language, as a person's browser set to that language sends it.
func browserIn(t *testing.T, acceptLanguage string) context.Context {
	t.Helper()
	return browser.New(t, chromedp.WindowSize(1000, 760), chromedp.Flag("lang", acceptLanguage), chromedp.Flag("accept-lang", acceptLanguage))
}

// dateTimes are the dates and times of each language as the page writes them (the
// template library's "changed" times).
var dateTimes = map[string]*regexp.Regexp{
	"nb": regexp.MustCompile(`\b\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}\b`),
	"sv": regexp.MustCompile(`\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}\b`),
	"de": regexp.MustCompile(`\b\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}\b`),
	"da": regexp.MustCompile(`\b\d{2}\.\d{2}\.\d{4} \d{2}\.\d{2}\b`),
	"en": regexp.MustCompile(`\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}\b`),
}

// language is what a person sees of one language: the sign-in page's heading and the
// application's texts (server-rendered navigation, script-rendered view).
type language struct {
	code, signIn, signOut, templates, search string
}

var (
	norwegian = language{"nb", "Logg inn", "Logg ut", "Malbibliotek", "Søk"}
	swedish   = language{"sv", "Logga in", "Logga ut", "Mallbibliotek", "Sök"}
	german    = language{"de", "Anmelden", "Abmelden", "Vorlagenbibliothek", "Suchen"}
	danish    = language{"da", "Log ind", "Log ud", "Skabelonbibliotek", "Søg"}
)

// seeSignIn checks the sign-in page the browser shows is in lang.
func seeSignIn(t *testing.T, ctx context.Context, lang language) {
	t.Helper()
	step(t, ctx, "sign-in page in "+lang.code, chromedp.WaitVisible(chromedp.ID("password")))
	if got := eval[string](t, ctx, `document.documentElement.lang`); got != lang.code {
		t.Errorf("sign-in page lang = %q, want %q", got, lang.code)
	}
	if got := textOf(t, ctx, "h1"); got != lang.signIn {
		t.Errorf("sign-in heading = %q, want %q", got, lang.signIn)
	}
	if got := textOf(t, ctx, "#signin"); got != lang.signIn {
		t.Errorf("sign-in button = %q, want %q", got, lang.signIn)
	}
}

// signIn signs in on the sign-in page the browser shows.
func signIn(t *testing.T, ctx context.Context) {
	t.Helper()
	step(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.ID("login"), "instructor"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("view")))
}

// seeApplication opens the template library and checks the application is in lang: the
// navigation the server wrote, the view the scripts drew from the served catalogue, and
// the dates as Intl writes them in the language.
func seeApplication(t *testing.T, s *stack, ctx context.Context, lang language) {
	t.Helper()
	step(t, ctx, "template library", chromedp.Navigate(s.gateway.URL+"/app/templates"), chromedp.WaitVisible(chromedp.ID("view")))
	waitView(t, ctx, "templates")
	if got := eval[string](t, ctx, `document.documentElement.lang`); got != lang.code {
		t.Errorf("application lang = %q, want %q", got, lang.code)
	}
	for sel, want := range map[string]string{"#signout": lang.signOut, "#templates h1": lang.templates, "#template-search-submit": lang.search} {
		if got := textOf(t, ctx, sel); got != want {
			t.Errorf("%s = %q, want %q (%s)", sel, got, want, lang.code)
		}
	}
	meta := textOf(t, ctx, "#template-results .meta")
	if !dateTimes[lang.code].MatchString(meta) {
		t.Errorf("template's date line %q does not write a date and time as %s does", meta, lang.code)
	}
	if got := eval[string](t, ctx, `document.getElementById("language").value`); got != lang.code {
		t.Errorf("language picker shows %q, want %q", got, lang.code)
	}
}

// TestLanguageByCulture: a start URL with culture=nb-NO, as the desktop wrapper opens it,
// shows the sign-in page and then the application in Norwegian, whatever the browser's own
// language.
func TestLanguageByCulture(t *testing.T) {
	s := startStack(t)
	ctx := browserIn(t, "en-US")
	step(t, ctx, "open sign-in with culture", chromedp.Navigate(s.gateway.URL+"/app/signin?culture=nb-NO"))
	seeSignIn(t, ctx, norwegian)
	if got := textOf(t, ctx, "#languages strong"); got != "Norsk (bokmål)" {
		t.Errorf("language links mark %q as current, want Norsk (bokmål)", got)
	}
	screenshot(t, ctx, "signin-nb")
	signIn(t, ctx)
	seeApplication(t, s, ctx, norwegian)
	screenshot(t, ctx, "app-nb")

	// A person put in focus by the desktop program: the birth date as Norwegian writes it,
	// in the bar and the person's view.
	mustSvc(t, ctx, `svcApp.selectPerson({customid: "nb-1", firstname: "Ola", lastname: "Nordmann", dateofbirth: "1960-03-04"})`, nil)
	waitView(t, ctx, "person")
	for _, sel := range []string{"#contact-birthdate", "#person-birthdate"} {
		if got := textOf(t, ctx, sel); got != "04.03.1960" {
			t.Errorf("%s = %q, want the Norwegian 04.03.1960", sel, got)
		}
	}
	screenshot(t, ctx, "person-nb")

	// Every view the scripts draw, in Norwegian, shows no English of the catalogue.
	step(t, ctx, "template library again", chromedp.Navigate(s.gateway.URL+"/app/templates"), chromedp.WaitVisible(chromedp.ID("view")))
	waitView(t, ctx, "templates")
	tpl := eval[string](t, ctx, `document.querySelector("#template-results .workout-link").getAttribute("href")`)
	for _, v := range []struct{ path, testid string }{
		{"/app", "person"}, {"/app/persons", "persons"}, {"/app/exercises", "exercises"},
		{"/app/workouts", "workouts"}, {tpl, "workout"}, {"/app/cases/case-1", "case"},
	} {
		step(t, ctx, "open "+v.path, chromedp.Navigate(s.gateway.URL+v.path), chromedp.WaitVisible(chromedp.ID("view")))
		waitView(t, ctx, v.testid)
		if left := englishLeft("nb", eval[string](t, ctx, `document.body.innerText`)); len(left) > 0 {
			screenshot(t, ctx, "english-"+v.testid)
			t.Errorf("%s shows English in Norwegian: %q", v.path, left)
		}
	}
}

// englishLeft returns the English texts of the catalogue that text, shown in lang, still
// holds: every piece of at least two words between an English message's placeholders,
// unless lang's own message has the same words.
func englishLeft(lang, text string) []string {
	var left []string
	for _, k := range i18n.Keys(i18n.Default) {
		own := i18n.T(lang, k)
		for _, piece := range regexp.MustCompile(`\{[a-z]+\}`).Split(i18n.T(i18n.Default, k), -1) {
			piece = strings.TrimSpace(piece)
			if len(strings.Fields(piece)) >= 2 && !strings.Contains(own, piece) && strings.Contains(text, piece) {
				left = append(left, k+": "+piece)
			}
		}
	}
	return left
}

// TestLanguageByAcceptLanguage: a browser set to Swedish sees Swedish, and one set to a
// language the service does not speak sees English.
func TestLanguageByAcceptLanguage(t *testing.T) {
	s := startStack(t)
	ctx := browserIn(t, "sv-SE")
	step(t, ctx, "open sign-in", chromedp.Navigate(s.gateway.URL+"/app/signin"))
	seeSignIn(t, ctx, swedish)
	signIn(t, ctx)
	seeApplication(t, s, ctx, swedish)
	screenshot(t, ctx, "app-sv")

	fr := browserIn(t, "fr-FR")
	step(t, fr, "open sign-in in French", chromedp.Navigate(s.gateway.URL+"/app/signin"))
	seeSignIn(t, fr, language{code: "en", signIn: "Sign in"})
}

// TestLanguageSavedForAccount: a person changes the language in the page; the page shows
// it at once, and the choice is the account's: another browser, set to Swedish, shows the
// application in German after sign-in, and a culture parameter still overrides it.
func TestLanguageSavedForAccount(t *testing.T) {
	s := startStack(t)
	ctx := browserIn(t, "sv-SE")
	step(t, ctx, "open sign-in", chromedp.Navigate(s.gateway.URL+"/app/signin"))
	signIn(t, ctx)
	seeApplication(t, s, ctx, swedish)
	eval[bool](t, ctx, `(() => { const s = document.getElementById("language"); s.value = "de"; s.dispatchEvent(new Event("change")); return true; })()`)
	step(t, ctx, "page again in German", chromedp.WaitVisible(chromedp.CSS(`html[lang="de"] #view [data-testid="templates"]`)))
	seeApplication(t, s, ctx, german)

	other := browserIn(t, "sv-SE")
	step(t, other, "open sign-in elsewhere", chromedp.Navigate(s.gateway.URL+"/app/signin"))
	seeSignIn(t, other, swedish) // no account known yet: the browser's language
	signIn(t, other)
	seeApplication(t, s, other, german)
	screenshot(t, other, "app-de-saved")

	step(t, other, "culture overrides", chromedp.Navigate(s.gateway.URL+"/app?culture=da-DK"), chromedp.WaitVisible(chromedp.ID("view")))
	seeApplication(t, s, other, danish)
	if got := strings.TrimSpace(textOf(t, other, "#nav [data-testid=nav-persons]")); got != "Personer" {
		t.Errorf("Danish navigation = %q, want Personer", got)
	}
}
