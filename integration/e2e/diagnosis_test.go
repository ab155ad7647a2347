package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/i18n"
)

// TestDiagnosisOnPersonPage: the diagnosis a main-client link gives its contact is on the
// person's page, where the instructor plans against it, labelled in each language and
// written as the clinic wrote it: markup in it stays text.
func TestDiagnosisOnPersonPage(t *testing.T) {
	s := startStack(t)
	ctx := newBrowser(t)

	const diagnosis = `M17.1 <b id="planted">gonartrose</b> & "høyre"`
	payload := mainPayload("emp-1001", "c-7", "Zoë", "Þórsdóttir", "1980-02-29")
	payload["contact"].(map[string]any)["diagnosis"] = diagnosis
	signInFirstSight(t, s, ctx, payload)
	waitView(t, ctx, "person")
	person := eval[string](t, ctx, `document.querySelector('[data-testid="person"]').dataset.id`)

	for _, lang := range i18n.Languages {
		step(t, ctx, "person page in "+lang, chromedp.Navigate(s.gateway.URL+"/app/persons/"+person+"?culture="+lang),
			chromedp.WaitVisible(chromedp.ID("view")))
		waitView(t, ctx, "person")
		if got := textOf(t, ctx, "#person-diagnosis"); got != diagnosis {
			t.Errorf("%s: diagnosis = %q, want %q", lang, got, diagnosis)
		}
		label := eval[string](t, ctx, `document.getElementById("person-diagnosis").previousElementSibling.textContent`)
		if want := i18n.T(lang, "person.diagnosis"); label != want {
			t.Errorf("%s: diagnosis label = %q, want %q", lang, label, want)
		}
		if n := count(t, ctx, "#planted"); n != 0 {
			t.Errorf("%s: the diagnosis became markup (%d elements #planted)", lang, n)
		}
		screenshot(t, ctx, "person-"+lang)
	}
}
