package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// zoe is the contact of the instructor's link, and the member of the Go link.
func zoe() map[string]any {
	return map[string]any{"id": "c-7", "firstname": "Zoë", "lastname": "Þórsdóttir", "birthdate": "1980-02-29",
		"ssn": "20400229-1237", "email": "zoe@example.org"}
}

// TestPlanFromLinkToMember is the application's reason to exist, in a browser: an
// instructor opens a main-client link with a case, finds an exercise and its
// instructions, makes a plan for the contact in focus from a template, edits and saves it,
// exports it to the link's case and downloads the PDF; then the contact's Go link shows
// the member that plan and its instructions. Reload and back/forward keep the views, and
// after sign-out a view says the session ended.
func TestPlanFromLinkToMember(t *testing.T) {
	s := startStack(t)
	ctx := newBrowser(t)

	payload := mainPayload("emp-1001", "c-7", "Zoë", "Þórsdóttir", "1980-02-29")
	payload["contact"] = zoe()
	signInFirstSight(t, s, ctx, payload)
	waitView(t, ctx, "person")
	if got := pagePath(t, ctx); got != "/app" {
		t.Errorf("the link landed on %s, want /app", got)
	}
	for sel, want := range map[string]string{"#person-name": "Zoë Þórsdóttir", "#contact-name": "Zoë Þórsdóttir",
		"#person-birthdate": "1980-02-29", "#case": "case-9", "#organization": "Kliniken Öst", "#person-in-focus": "In focus"} {
		if got := textOf(t, ctx, sel); got != want {
			t.Errorf("contact in focus: %s = %q, want %q", sel, got, want)
		}
	}
	screenshot(t, ctx, "01-contact-in-focus")

	// The exercise catalogue: a search is a deep link, an exercise shows its instructions.
	step(t, ctx, "exercises", chromedp.Click(chromedp.CSS(`[data-testid="nav-exercises"]`)))
	waitView(t, ctx, "exercises")
	step(t, ctx, "search plank", chromedp.SendKeys(chromedp.ID("exercise-q"), "plank"), chromedp.Click(chromedp.ID("exercise-search-submit")))
	waitFor(t, ctx, "search results", `location.search === "?q=plank" && !document.getElementById("view").hasAttribute("aria-busy") && document.querySelector('[data-testid="exercise-result"]')`)
	names := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="exercise-result"] .exercise-link')].map((a) => a.textContent)`)
	if len(names) == 0 || !strings.Contains(strings.ToLower(strings.Join(names, "|")), "plank") {
		t.Fatalf("exercise search for plank shows %q", names)
	}
	screenshot(t, ctx, "02-exercise-search")
	step(t, ctx, "open exercise", chromedp.Click(chromedp.CSS(`[data-testid="exercise-result"] .exercise-link`)))
	waitView(t, ctx, "exercise")
	if got := textOf(t, ctx, "#exercise-name"); got != names[0] {
		t.Errorf("exercise view name = %q, want %q", got, names[0])
	}
	if got := textOf(t, ctx, "#exercise-instructions"); len(got) < 40 {
		t.Errorf("exercise instructions = %q, want real instructions", got)
	}
	exercisePath := pagePath(t, ctx)
	idIn(t, exercisePath, "/app/exercises/")
	screenshot(t, ctx, "03-exercise")

	// The other lists, one screenshot each.
	for _, v := range []struct{ nav, view string }{{"nav-persons", "persons"}, {"nav-workouts", "workouts"}, {"nav-templates", "templates"}} {
		step(t, ctx, v.view, chromedp.Click(chromedp.CSS(`[data-testid="`+v.nav+`"]`)))
		waitView(t, ctx, v.view)
		screenshot(t, ctx, "04-"+v.view)
	}
	step(t, ctx, "open template", chromedp.Click(chromedp.CSS(`[data-testid="template"] .workout-link`)))
	waitFor(t, ctx, "template", `document.getElementById("template-use") && !document.getElementById("view").hasAttribute("aria-busy")`)
	if got := textOf(t, ctx, "#template-use"); got != "Use for Zoë Þórsdóttir" {
		t.Errorf("template view offers %q, want to use it for the contact in focus", got)
	}
	screenshot(t, ctx, "04-template")

	// A plan from a template for the contact in focus.
	step(t, ctx, "contact", chromedp.Click(chromedp.ID("contact-link")))
	waitView(t, ctx, "person")
	template := eval[string](t, ctx, `(() => {
	const s = document.getElementById("new-plan-template");
	const o = [...s.options].find((o) => o.text === "Knee rehabilitation, week 1");
	if (!o) return "";
	s.value = o.value;
	return o.value;
})()`)
	if template == "" {
		t.Fatal(`the new plan form offers no template "Knee rehabilitation, week 1"`)
	}
	step(t, ctx, "create plan", chromedp.Click(chromedp.ID("new-plan-create")))
	waitFor(t, ctx, "editor", `location.pathname.startsWith("/app/workouts/") && document.querySelector('[data-testid="editor-item"]')`)
	planPath := pagePath(t, ctx)
	planID := idIn(t, planPath, "/app/workouts/")
	if got := textOf(t, ctx, "#workout-executor"); got != "Zoë Þórsdóttir" {
		t.Errorf("new plan is for %q, want Zoë Þórsdóttir", got)
	}
	items := count(t, ctx, `[data-testid="editor-item"]`)
	if items < 4 {
		t.Errorf("plan from the template has %d exercises, want the template's (4 or more)", items)
	}
	firstExercise := eval[string](t, ctx, `document.querySelector("#item-1-name a").textContent`)

	// Edit: title, the first exercise's sets and note; save.
	fill(t, ctx, "workout-title-input", "Zoë's knee plan")
	fill(t, ctx, "item-1-sets", "4")
	step(t, ctx, "edit plan", chromedp.SendKeys(chromedp.ID("item-1-note"), " – morning and evening"), chromedp.Click(chromedp.ID("workout-save")))
	waitFor(t, ctx, "saved", `document.getElementById("editor-saved") && document.getElementById("editor-dirty").hidden`)
	if got := textOf(t, ctx, "#workout-title"); got != "Zoë's knee plan" {
		t.Errorf("saved plan title = %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById("item-1-sets").value`); got != "4" {
		t.Errorf("saved first exercise sets = %q, want 4", got)
	}
	screenshot(t, ctx, "05-editor")

	// Reload on the plan shows the same plan, as it was saved.
	step(t, ctx, "reload plan", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("view")))
	waitFor(t, ctx, "plan after reload", `document.querySelector('[data-testid="editor-item"]')`)
	if got := pagePath(t, ctx); got != planPath {
		t.Errorf("after reload the page is %s, want %s", got, planPath)
	}
	if got := eval[string](t, ctx, `document.getElementById("workout-title-input").value + "|" + document.getElementById("item-1-sets").value + "|" + document.getElementById("item-1-note").value`); !strings.HasPrefix(got, "Zoë's knee plan|4|") || !strings.HasSuffix(got, "– morning and evening") {
		t.Errorf("plan after reload = %q, want the saved title, sets and note", got)
	}

	// Export to the link's case (prefilled); the case's list shows it.
	if got := eval[string](t, ctx, `document.getElementById("export-case-id").value`); got != "case-9" {
		t.Errorf("export case field = %q, want the link's case-9", got)
	}
	step(t, ctx, "export", chromedp.Click(chromedp.ID("export-button")))
	waitFor(t, ctx, "exported", `document.getElementById("export-done") && document.querySelector('#case-exports [data-testid="case-export"]')`)
	screenshot(t, ctx, "06-exported")
	step(t, ctx, "case", chromedp.Click(chromedp.ID("case-link")))
	waitView(t, ctx, "case")
	if got := pagePath(t, ctx); got != "/app/cases/case-9" {
		t.Errorf("case link opened %s", got)
	}
	if got := count(t, ctx, `[data-testid="case-export"]`); got != 1 {
		t.Fatalf("case-9 lists %d exports, want 1", got)
	}
	listed := eval[string](t, ctx, `document.querySelector('[data-testid="case-export"] .hash').title`)
	screenshot(t, ctx, "07-case")

	// The download, through the browser's own session.
	pdf := eval[struct {
		Status int    `json:"status"`
		Type   string `json:"type"`
		Body   string `json:"body"`
	}](t, ctx, `(async () => {
	const a = document.querySelector('[data-testid="case-export"] a.export-link');
	const r = await fetch(a.href, { credentials: "same-origin" });
	const bytes = new Uint8Array(await r.arrayBuffer());
	let s = "";
	for (const b of bytes) s += String.fromCharCode(b);
	return { status: r.status, type: r.headers.get("Content-Type") || "", body: btoa(s) };
})()`)
	body, err := base64.StdEncoding.DecodeString(pdf.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if pdf.Status != 200 || pdf.Type != "application/pdf" || !bytes.HasPrefix(body, []byte("%PDF")) {
		t.Errorf("download = %d %s, %d bytes starting %q, want a PDF", pdf.Status, pdf.Type, len(body), body[:min(len(body), 8)])
	}
	if want := "SHA-256 " + hex.EncodeToString(sum[:]); listed != want {
		t.Errorf("the case lists %q, the download's hash is %q", listed, want)
	}

	// Back and forward walk the views the links opened.
	for _, w := range []struct{ how, path string }{{"history.back()", planPath}, {"history.forward()", "/app/cases/case-9"}, {"history.back()", planPath}} {
		eval[bool](t, ctx, w.how+`, true`)
		waitFor(t, ctx, w.how, `location.pathname === `+strconv.Quote(w.path)+` && !document.getElementById("view").hasAttribute("aria-busy") && document.querySelector('#view [data-testid]')`)
	}
	if got := textOf(t, ctx, "#workout-title"); got != "Zoë's knee plan" {
		t.Errorf("after back the plan title = %q", got)
	}

	// The member's Go link, in the member's own browser: the plan and its instructions.
	mctx := newBrowser(t)
	goLink(t, s, mctx, zoe())
	screenshot(t, mctx, "08-member-plans")
	if got := textOf(t, mctx, `[data-testid="my-plan"] .workout-link`); got != "Zoë's knee plan" {
		t.Fatalf("the member's plans show %q, want Zoë's knee plan", got)
	}
	step(t, mctx, "open member plan", chromedp.Click(chromedp.CSS(`[data-testid="my-plan"] .workout-link`)))
	waitView(t, mctx, "workout")
	if got := pagePath(t, mctx); got != "/go/workouts/"+strconv.FormatInt(planID, 10) {
		t.Errorf("member plan path = %s, want /go/workouts/%d", got, planID)
	}
	if got := count(t, mctx, `[data-testid="plan-exercise"]`); got != items {
		t.Errorf("member plan shows %d exercises, want %d", got, items)
	}
	if got := textOf(t, mctx, "#plan-exercise-1"); got != firstExercise {
		t.Errorf("member plan's first exercise = %q, want %q", got, firstExercise)
	}
	if got := textOf(t, mctx, `[data-testid="plan-exercise"] .dose`); !strings.HasPrefix(got, "4 × ") {
		t.Errorf("member plan's first dose = %q, want the 4 sets saved", got)
	}
	if got := textOf(t, mctx, `[data-testid="plan-exercise"] .instructions`); len(got) < 40 {
		t.Errorf("member plan's first instructions = %q, want real instructions", got)
	}
	screenshot(t, mctx, "09-member-plan")
	step(t, mctx, "member reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("member")))
	waitView(t, mctx, "workout")
	eval[bool](t, mctx, `history.back(), true`)
	waitView(t, mctx, "my-plans")

	// Sign-out: a deep link of the application says the session ended, and offers sign-in.
	step(t, ctx, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signed-out")))
	step(t, ctx, "plan after sign-out", chromedp.Navigate(s.gateway.URL+planPath), chromedp.WaitVisible(chromedp.ID("session-ended")))
	if got := textOf(t, ctx, "#session-ended"); !strings.Contains(got, "Your session has ended") {
		t.Errorf("after sign-out the plan's address shows %q, want it to say the session ended", got)
	}
	if n := count(t, ctx, "#nav, #workout"); n != 0 {
		t.Errorf("after sign-out the page still shows %d parts of the application", n)
	}
	screenshot(t, ctx, "10-session-ended")
	checkNoPersonalData(t, s)
}
