package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestCatalogueInNorwegian (issue 36): in browsers set to Norwegian, the instructor's
// exercise search finds the seeded squat by its Norwegian name and lists it as "styrke ·
// bein · ingen", a plan made from the knee template starts in Norwegian, and the member
// reads it in Go with the exercises' Norwegian names and instructions.
func TestCatalogueInNorwegian(t *testing.T) {
	s := startStack(t)
	ctx := browserIn(t, "nb-NO")
	signInFirstSight(t, s, ctx, clinicLink("a"))
	waitView(t, ctx, "person")
	if got := textOf(t, ctx, "header .who"); !strings.Contains(got, "(brukernavn instructor)") {
		t.Errorf("header = %q, want the username labelled in Norwegian", got)
	}

	step(t, ctx, "search knebøy", chromedp.Navigate(s.gateway.URL+"/app/exercises?q=KNEB%C3%98Y"), chromedp.WaitVisible(chromedp.ID("view")))
	waitView(t, ctx, "exercises")
	results := eval[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="exercise-result"]')].map((li) =>
	[li.querySelector(".exercise-link").textContent, li.querySelector(".meta").textContent])`)
	if len(results) != 1 || results[0][0] != "Knebøy" || results[0][1] != "styrke · bein · ingen" {
		t.Errorf("search for KNEBØY shows %q, want Knebøy · styrke · bein · ingen", results)
	}
	facets := eval[[]string](t, ctx, `[...document.querySelectorAll("#exercise-category option")].map((o) => o.textContent)`)
	if !strings.Contains(strings.Join(facets, "|"), "styrke|tøying") {
		t.Errorf("category choices = %q, want the Norwegian words", facets)
	}
	screenshot(t, ctx, "exercises-nb")
	step(t, ctx, "open Knebøy", chromedp.Click(chromedp.CSS(`[data-testid="exercise-result"] .exercise-link`)))
	waitView(t, ctx, "exercise")
	if got := textOf(t, ctx, "#exercise-instructions"); !strings.HasPrefix(got, "Stå med føttene i hoftebreddes avstand") {
		t.Errorf("Knebøy's instructions = %q, want Norwegian", got)
	}

	tpl := api(t, ctx, "GET", "/app/api/workouts?template=true&q=kneopptrening", "")
	var list struct {
		Workouts []struct {
			ID int64 `json:"id"`
		} `json:"workouts"`
	}
	if err := json.Unmarshal(tpl.Body, &list); err != nil || len(list.Workouts) != 1 {
		t.Fatalf("templates matching kneopptrening = %d %s", tpl.Status, tpl.Body)
	}
	// The same page in German: its body parts in German order, "oberer Rücken" among the
	// capitalized nouns.
	step(t, ctx, "exercises in German", chromedp.Navigate(s.gateway.URL+"/app/exercises?culture=de"), chromedp.WaitVisible(chromedp.ID("view")))
	waitView(t, ctx, "exercises")
	parts := eval[[]string](t, ctx, `[...document.querySelectorAll("#exercise-body-part option")].slice(1).map((o) => o.textContent)`)
	if got, want := strings.Join(parts, ", "), "Arme, Beine, Brust, Fußgelenk, ganzer Körper, Hüften, Knie, Nacken, oberer Rücken, Rücken, Rumpf, Schulter, Unterschenkel"; got != want {
		t.Errorf("German body parts = %s, want %s", got, want)
	}
	step(t, ctx, "back to Norwegian", chromedp.Navigate(s.gateway.URL+"/app?culture=nb"), chromedp.WaitVisible(chromedp.ID("view")))

	var plan svcWorkout
	mustSvc(t, ctx, `svcApp.createWorkout({templateId: `+strconv.FormatInt(list.Workouts[0].ID, 10)+`})`, &plan)

	m := browserIn(t, "nb-NO")
	clinicGoLink(t, s, m, "a")
	names := eval[[]string](t, m, `[...document.querySelectorAll('[data-testid="my-plan"] .workout-link')].map((a) => a.textContent)`)
	if len(names) != 1 || names[0] != "Kneopptrening, uke 1" {
		t.Fatalf("Go lists %q, want Kneopptrening, uke 1", names)
	}
	step(t, m, "open the plan", chromedp.Click(chromedp.CSS(`[data-testid="my-plan"] .workout-link`)))
	waitView(t, m, "workout")
	first := eval[[]string](t, m, `(() => { const li = document.querySelector('[data-testid="plan-exercise"]');
	return [li.querySelector("h2, h3").textContent, li.querySelector(".note").textContent, li.querySelector(".instructions").textContent]; })()`)
	if first[0] != "Ankelpumpe" || first[1] != "Flere ganger om dagen" || !strings.HasPrefix(first[2], "Sitt eller ligg med beina strake foran deg.") {
		t.Errorf("the plan's first exercise in Go = %q, want Ankelpumpe in Norwegian", first)
	}
	if left := englishLeft("nb", eval[string](t, m, `document.body.innerText`)); len(left) > 0 {
		t.Errorf("Go's plan shows English in Norwegian: %q", left)
	}
	for _, english := range []string{"Ankle pumps", "Heel slide", "Several times a day", "Sit or lie"} {
		if strings.Contains(eval[string](t, m, `document.body.innerText`), english) {
			t.Errorf("Go's plan in Norwegian shows %q", english)
		}
	}
	screenshot(t, m, "go-plan-nb")
}
