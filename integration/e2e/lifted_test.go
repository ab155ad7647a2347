package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/testpayload"
)

// goMemberQuestion is the question a browser new to testpayload.Go's member is asked.
const goMemberQuestion = "Continue as Jürgen Müller-Łukasz, Kliniken Öst?"

// TestLiftedLinkAsksAStranger: issue 34. A partner user posts a token of their own to /url
// from a server (no Origin to check) and sends the login URL to someone. That person's
// browser, which has never signed in to the account, is asked by name; Cancel leaves it
// signed out and the link spent. The account's own person, in their browser, answers
// Continue once and is signed in; their next link goes straight in, with no click.
func TestLiftedLinkAsksAStranger(t *testing.T) {
	s := startStack(t)

	stranger := newBrowser(t)
	lifted := s.linkURL(t, testpayload.Go())
	step(t, stranger, "open the lifted link", chromedp.Navigate(lifted), chromedp.WaitVisible(chromedp.ID("ask-continue")))
	if got := text(t, stranger, "ask-question"); got != goMemberQuestion {
		t.Errorf("question = %q, want %q", got, goMemberQuestion)
	}
	screenshot(t, stranger, "asked")
	step(t, stranger, "cancel", chromedp.Click(chromedp.ID("ask-cancel")), chromedp.WaitVisible(chromedp.ID("cancelled")))
	screenshot(t, stranger, "cancelled")
	step(t, stranger, "Go page after Cancel", chromedp.Navigate(s.gateway.URL+"/go"), chromedp.WaitVisible(chromedp.ID("session-ended")))
	step(t, stranger, "the lifted link again", chromedp.Navigate(lifted), chromedp.WaitVisible(chromedp.ID("problem")))
	if got := text(t, stranger, "code"); got != "login_code_used" {
		t.Errorf("the cancelled link opened again: code %q, want login_code_used", got)
	}

	owner := newBrowser(t)
	step(t, owner, "open the first link", chromedp.Navigate(s.linkURL(t, testpayload.Go())))
	continueAs(t, owner, goMemberQuestion, "member")
	// The next link reaches the member's page without a click: a question would wait.
	step(t, owner, "open the next link", chromedp.Navigate(s.linkURL(t, testpayload.Go())), chromedp.WaitVisible(chromedp.ID("member")))
	// And after signing out, too: the device cookie is the browser's, not the session's.
	step(t, owner, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signed-out")))
	step(t, owner, "a link after signing out", chromedp.Navigate(s.linkURL(t, testpayload.Go())), chromedp.WaitVisible(chromedp.ID("member")))
	checkNoPersonalData(t, s)
}

// TestQuestionInEveryLanguage: the question and its buttons in each of the five languages,
// as a browser set to that language shows them; a screenshot of each in
// integration/artifacts/e2e/.
func TestQuestionInEveryLanguage(t *testing.T) {
	s := startStack(t)
	for _, lang := range i18n.Languages {
		t.Run(lang, func(t *testing.T) {
			ctx := browserIn(t, lang)
			step(t, ctx, "open the link", chromedp.Navigate(s.linkURL(t, testpayload.Go())), chromedp.WaitVisible(chromedp.ID("ask-continue")))
			want := map[string]string{
				"ask-question": i18n.T(lang, "ask.question", "account", "Jürgen Müller-Łukasz", "organization", "Kliniken Öst"),
				"ask-explain":  i18n.T(lang, "ask.explain"),
				"ask-continue": i18n.T(lang, "ask.continue"),
				"ask-cancel":   i18n.T(lang, "ask.cancel"),
			}
			for id, w := range want {
				if got := words(text(t, ctx, id)); got != words(w) {
					t.Errorf("#%s = %q, want %q", id, got, w)
				}
			}
			if left := englishLeft(lang, eval[string](t, ctx, `document.body.innerText`)); lang != "en" && len(left) > 0 {
				t.Errorf("English left on the %s question: %q", lang, left)
			}
			screenshot(t, ctx, "question")
			step(t, ctx, "cancel", chromedp.Click(chromedp.ID("ask-cancel")), chromedp.WaitVisible(chromedp.ID("cancelled")))
			if got, w := text(t, ctx, "cancelled"), i18n.T(lang, "cancelled.title"); got != w {
				t.Errorf("after Cancel: %q, want %q", got, w)
			}
			screenshot(t, ctx, "cancelled")
		})
	}
}
