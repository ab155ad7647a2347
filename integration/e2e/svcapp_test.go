package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/linkspec"
)

// The records window.svcApp hands a desktop wrapper (docs/appservice.md), the members the
// test reads.
type (
	svcPerson struct {
		ID        int64  `json:"id"`
		CustomID  string `json:"customId"`
		Firstname string `json:"firstname"`
		Lastname  string `json:"lastname"`
		Name      string `json:"name"`
		BirthDate string `json:"birthDate"`
	}
	svcExercise struct {
		ID           int64  `json:"id"`
		Name         string `json:"name"`
		Instructions string `json:"instructions"`
	}
	svcWorkout struct {
		ID            int64  `json:"id"`
		Name          string `json:"name"`
		Owner         string `json:"owner"`
		Executor      string `json:"executor"`
		PersonID      int64  `json:"personId"`
		Template      bool   `json:"template"`
		ExerciseCount int    `json:"exerciseCount"`
		LastChangedAt string `json:"lastChangedAt"`
		Exercises     []struct {
			ID         int64  `json:"id"`
			ExerciseID int64  `json:"exerciseId"`
			Name       string `json:"name"`
			Data       []struct {
				Key, Value, Unit string
			} `json:"data"`
		} `json:"exercises"`
	}
	svcStatus struct {
		SignedIn     bool   `json:"signedIn"`
		Role         string `json:"role"`
		CaseID       string `json:"caseId"`
		Organization *struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"organization"`
		Account *struct {
			DisplayName string `json:"displayName"`
		} `json:"account"`
		Person *svcPerson `json:"person"`
	}
	svcExport struct {
		ID        int64  `json:"id"`
		CaseID    string `json:"caseId"`
		WorkoutID int64  `json:"workoutId"`
		PersonID  int64  `json:"personId"`
		Filename  string `json:"filename"`
		SHA256    string `json:"sha256"`
		Size      int    `json:"size"`
	}
)

// TestSvcApp calls every window.svcApp function through the DevTools protocol, as the
// desktop wrapper will, and judges each by what the page then shows (the view, the list,
// the banner, the address) as well as by what it returns; a rejection carries its stable
// code. window.svcHost, installed before the page loads, hears ready, signedIn,
// personSelected and workoutOpened in that order, with their data.
func TestSvcApp(t *testing.T) {
	s := startStack(t)

	// Another organization's plan: the instructor signs in with the password first, which
	// lands in the account's own organization, and makes one there.
	other := newBrowser(t)
	signInWithPassword(t, s, other)
	waitFor(t, other, "svcApp in the other organization", `window.svcApp`)
	var otherPerson struct{ Person svcPerson }
	mustSvc(t, other, `svcApp.selectPerson({customid: "x-1", firstname: "Other", lastname: "Clinic"})`, &otherPerson)
	var foreign svcWorkout
	mustSvc(t, other, `svcApp.createWorkout({title: "Elsewhere"})`, &foreign)
	if foreign.ID == 0 || foreign.PersonID != otherPerson.Person.ID {
		t.Fatalf("the other organization's plan = %+v", foreign)
	}

	ctx := newBrowser(t)
	h := installHost(t, ctx)
	payload := mainPayload("emp-1001", "c-7", "Zoë", "Þórsdóttir", "1980-02-29")
	payload["contact"] = zoe()
	signInFirstSight(t, s, ctx, payload)
	waitView(t, ctx, "person")

	// ready, then signedIn with the account and the organization.
	var ready struct{ Version int }
	h.wait(t, "ready", 1, &ready)
	var signedIn svcStatus
	h.wait(t, "signedIn", 1, &signedIn)
	if ready.Version != 1 || signedIn.Account == nil || signedIn.Account.DisplayName != "Coach Carter" ||
		signedIn.Organization == nil || signedIn.Organization.Name != "Kliniken Öst" {
		t.Errorf("host events ready %+v, signedIn %+v; want version 1, Coach Carter at Kliniken Öst", ready, signedIn)
	}
	if got := eval[string](t, ctx, `[svcApp.version, Object.isFrozen(svcApp), typeof svcApp.status].join(" ")`); got != "1 true function" {
		t.Errorf("svcApp version, frozen, status = %q, want 1 true function", got)
	}

	// status: the signed-in instructor, the link's organization, person and case, which
	// the focus bar shows too.
	var st svcStatus
	mustSvc(t, ctx, `svcApp.status()`, &st)
	if !st.SignedIn || st.Role != "instructor" || st.Organization == nil || st.Organization.Name != "Kliniken Öst" ||
		st.Person == nil || st.Person.Name != "Zoë Þórsdóttir" || st.CaseID != "case-9" {
		t.Fatalf("status() = %+v", st)
	}
	if got := textOf(t, ctx, "#contact-name") + "|" + textOf(t, ctx, "#case"); got != "Zoë Þórsdóttir|case-9" {
		t.Errorf("focus bar = %q, want the status's person and case", got)
	}
	zoeID := st.Person.ID

	// queryExercises shows the exercise search with the text and its results.
	var exercises []svcExercise
	mustSvc(t, ctx, `svcApp.queryExercises("bridge")`, &exercises)
	if len(exercises) == 0 || !strings.Contains(strings.ToLower(exercises[0].Name), "bridge") || exercises[0].Instructions == "" {
		t.Fatalf(`queryExercises("bridge") = %+v`, exercises)
	}
	if got := pagePath(t, ctx); got != "/app/exercises?q=bridge" {
		t.Errorf("after queryExercises the page is %s", got)
	}
	if got, want := count(t, ctx, `[data-testid="exercise-result"]`), len(exercises); got != want {
		t.Errorf("the exercise search shows %d results, queryExercises returned %d", got, want)
	}
	if got := eval[string](t, ctx, `document.getElementById("exercise-q").value`); got != "bridge" {
		t.Errorf("the exercise search field = %q, want bridge", got)
	}
	screenshot(t, ctx, "01-queryExercises")

	// selectPerson creates a person with profile data and shows them; the host hears it.
	var sel struct {
		Person  svcPerson
		Created bool
		Matched int
	}
	mustSvc(t, ctx, `svcApp.selectPerson({userid: 0, customid: "K-100", firstname: "Kari", lastname: "Nordmann", dateofbirth: "1990-01-02",
		profiledata: [{key: "weight", name: "Weight", value: "70", unit: "kg", date: "2026-01-05 08:30"}]})`, &sel)
	if !sel.Created || sel.Person.ID == 0 || sel.Person.CustomID != "K-100" || sel.Person.BirthDate != "1990-01-02" {
		t.Fatalf("selectPerson = %+v, want Kari created with custom id K-100", sel)
	}
	kari := sel.Person.ID
	waitView(t, ctx, "person")
	if got := pagePath(t, ctx); got != "/app/persons/"+strconv.FormatInt(kari, 10) {
		t.Errorf("after selectPerson the page is %s", got)
	}
	for sel, want := range map[string]string{"#person-name": "Kari Nordmann", "#person-created": "A new person was created.",
		"#contact-name": "Kari Nordmann", `[data-testid="profile-row"] td.num`: "70"} {
		if got := textOf(t, ctx, sel); got != want {
			t.Errorf("after selectPerson %s = %q, want %q", sel, got, want)
		}
	}
	var selected struct{ Person svcPerson }
	h.wait(t, "personSelected", 1, &selected)
	if selected.Person.ID != kari {
		t.Errorf("personSelected event person = %+v, want id %d", selected.Person, kari)
	}
	screenshot(t, ctx, "02-selectPerson")

	// setCustomId changes it, and the open person view shows the new one.
	var renamed svcPerson
	mustSvc(t, ctx, `svcApp.setCustomId(`+strconv.FormatInt(kari, 10)+`, "K-200")`, &renamed)
	if renamed.CustomID != "K-200" {
		t.Errorf("setCustomId = %+v", renamed)
	}
	waitFor(t, ctx, "custom id shown", `document.getElementById("person-custom-id")?.textContent === "K-200"`)

	// getListOfUsers: all of the organization's persons, or those of one custom id; the
	// page stays where it is.
	before := pagePath(t, ctx)
	var all, byCustom []svcPerson
	mustSvc(t, ctx, `svcApp.getListOfUsers()`, &all)
	mustSvc(t, ctx, `svcApp.getListOfUsers({customId: "K-200"})`, &byCustom)
	if len(all) != 2 || len(byCustom) != 1 || byCustom[0].ID != kari {
		t.Errorf("getListOfUsers() = %+v, ({customId: K-200}) = %+v; want Zoë and Kari, then Kari", all, byCustom)
	}
	if got := pagePath(t, ctx); got != before {
		t.Errorf("getListOfUsers moved the page from %s to %s", before, got)
	}

	// createWorkout: for the person in focus (Kari, since selectPerson), from a template;
	// the editor shows it.
	template := eval[int64](t, ctx, `fetch("/app/api/workouts?template=true").then((r) => r.json()).then((j) => j.workouts.find((w) => w.name === "Low back basics").id)`)
	var plan svcWorkout
	mustSvc(t, ctx, `svcApp.createWorkout({templateId: `+strconv.FormatInt(template, 10)+`, title: "Kari's back"})`, &plan)
	if plan.ID == 0 || plan.PersonID != kari || plan.Executor != "Kari Nordmann" || plan.Owner != "Coach Carter" ||
		plan.Template || plan.ExerciseCount == 0 || len(plan.Exercises) != plan.ExerciseCount || len(plan.Exercises[0].Data) == 0 {
		t.Fatalf("createWorkout = %+v", plan)
	}
	planPath := "/app/workouts/" + strconv.FormatInt(plan.ID, 10)
	waitFor(t, ctx, "editor", `location.pathname === `+strconv.Quote(planPath)+` && document.getElementById("workout-title-input")?.value === "Kari's back"`)
	if got := count(t, ctx, `[data-testid="editor-item"]`); got != plan.ExerciseCount {
		t.Errorf("the editor shows %d exercises, createWorkout returned %d", got, plan.ExerciseCount)
	}
	var opened struct{ Workout svcWorkout }
	h.wait(t, "workoutOpened", 1, &opened)
	if opened.Workout.ID != plan.ID {
		t.Errorf("workoutOpened event = %+v, want workout %d", opened.Workout, plan.ID)
	}
	screenshot(t, ctx, "03-createWorkout")

	// queryWorkouts shows the organization's plans matching the text.
	var found []svcWorkout
	mustSvc(t, ctx, `svcApp.queryWorkouts("Kari's")`, &found)
	if len(found) != 1 || found[0].ID != plan.ID {
		t.Errorf(`queryWorkouts("Kari's") = %+v, want the plan`, found)
	}
	waitView(t, ctx, "workouts")
	if got := queryOf(t, pagePath(t, ctx), "q"); got != "Kari's" {
		t.Errorf("the workout search shows q=%q", got)
	}
	if got := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="workout-row"]')].map((r) => r.dataset.id)`); len(got) != 1 || got[0] != strconv.FormatInt(plan.ID, 10) {
		t.Errorf("the workout search lists %q, want the plan", got)
	}
	screenshot(t, ctx, "04-queryWorkouts")

	// getWorkoutsForClient by custom id and by service id; from filters by date.
	for call, want := range map[string]int{
		`svcApp.getWorkoutsForClient({customId: "K-200"})`:                            1,
		`svcApp.getWorkoutsForClient({userId: ` + strconv.FormatInt(kari, 10) + `})`:  1,
		`svcApp.getWorkoutsForClient({customId: "K-200", from: "2000-01-01"})`:        1,
		`svcApp.getWorkoutsForClient({customId: "K-200", from: "2999-01-01"})`:        0,
		`svcApp.getWorkoutsForClient({userId: ` + strconv.FormatInt(zoeID, 10) + `})`: 0,
	} {
		var ws []svcWorkout
		mustSvc(t, ctx, call, &ws)
		if len(ws) != want || (want == 1 && ws[0].ID != plan.ID) {
			t.Errorf("%s = %+v, want %d plan(s)", call, ws, want)
		}
	}

	// openWorkout shows it (and tells the host again).
	var again svcWorkout
	mustSvc(t, ctx, `svcApp.openWorkout(`+strconv.FormatInt(plan.ID, 10)+`)`, &again)
	waitFor(t, ctx, "opened", `location.pathname === `+strconv.Quote(planPath)+` && document.querySelector('[data-testid="editor-item"]')`)
	if again.ID != plan.ID || textOf(t, ctx, "#workout-title") != "Kari's back" {
		t.Errorf("openWorkout = %+v, page title %q", again, textOf(t, ctx, "#workout-title"))
	}
	h.wait(t, "workoutOpened", 2, nil)

	// setCase makes the session's case, shown in the focus bar.
	var cased svcStatus
	mustSvc(t, ctx, `svcApp.setCase("case-api")`, &cased)
	if cased.CaseID != "case-api" {
		t.Errorf("setCase = %+v", cased)
	}
	waitFor(t, ctx, "case shown", `document.getElementById("case")?.textContent === "case-api"`)

	// exportWorkout: the open plan, to the session's case; the editor's list shows it.
	var exp svcExport
	mustSvc(t, ctx, `svcApp.exportWorkout()`, &exp)
	if exp.ID == 0 || exp.CaseID != "case-api" || exp.WorkoutID != plan.ID || exp.PersonID != kari || len(exp.SHA256) != 64 || exp.Size == 0 {
		t.Errorf("exportWorkout() = %+v", exp)
	}
	waitFor(t, ctx, "export listed", `document.querySelector('#case-exports [data-testid="case-export"][data-id="`+strconv.FormatInt(exp.ID, 10)+`"]')`)
	screenshot(t, ctx, "05-exportWorkout")

	// showNotice: the banner with its text and download link.
	mustSvc(t, ctx, `svcApp.showNotice("The plan is in the case archive.", "https://files.example/plan.pdf")`, nil)
	waitFor(t, ctx, "notice", `!document.getElementById("notice").hidden`)
	if got := textOf(t, ctx, "#notice-text") + " " + eval[string](t, ctx, `document.getElementById("notice-link").href`); got != "The plan is in the case archive. https://files.example/plan.pdf" {
		t.Errorf("notice banner = %q", got)
	}
	screenshot(t, ctx, "06-showNotice")

	// Rejections carry their code, and leave the page as it was.
	here := pagePath(t, ctx)
	for _, c := range []struct{ call, code, field string }{
		{`svcApp.openWorkout(` + strconv.FormatInt(foreign.ID, 10) + `)`, "not_found", ""},
		{`svcApp.exportWorkout({workoutId: ` + strconv.FormatInt(foreign.ID, 10) + `})`, "not_found", ""},
		{`svcApp.createWorkout({personId: ` + strconv.FormatInt(otherPerson.Person.ID, 10) + `})`, "not_found", ""},
		{`svcApp.setCustomId(` + strconv.FormatInt(otherPerson.Person.ID, 10) + `, "stolen")`, "not_found", ""},
		{`svcApp.showNotice("Click me", "javascript:alert(1)")`, "invalid_argument", "url"},
		{`svcApp.selectPerson({customid: "K-300"})`, "invalid_argument", "firstname"},
		{`svcApp.setCase("` + strings.Repeat("x", linkspec.MaxIDLength+1) + `")`, "invalid_argument", "caseId"},
		{`svcApp.getWorkoutsForClient({})`, "invalid_argument", "customId"},
	} {
		err := svc(t, ctx, c.call, nil)
		switch {
		case err == nil:
			t.Errorf("%s resolved, want a rejection with %s", c.call, c.code)
			continue
		case err.Name != "SvcAppError" || err.Code != c.code:
			t.Errorf("%s rejected with %v, want SvcAppError %s", c.call, err, c.code)
		}
		if c.field != "" && (len(err.Fields) == 0 || err.Fields[0].Field != c.field) {
			t.Errorf("%s rejected with fields %+v, want %s first", c.call, err.Fields, c.field)
		}
	}
	if got := pagePath(t, ctx); got != here {
		t.Errorf("after the rejections the page is %s, want %s", got, here)
	}
	if got := textOf(t, ctx, "#notice-text"); got != "The plan is in the case archive." {
		t.Errorf("a refused notice changed the banner to %q", got)
	}
	if got := textOf(t, ctx, "#workout-title"); got != "Kari's back" {
		t.Errorf("after the rejections the plan title = %q", got)
	}
	if got := eval[string](t, other, `document.querySelector("#workout-title-input")?.value ?? ""`); got != "Elsewhere" {
		t.Errorf("the other organization's plan = %q, want it untouched", got)
	}

	// The events in order: ready, signedIn, personSelected, workoutOpened.
	if got := strings.Fields(h.names()); len(got) < 4 || strings.Join(got[:4], " ") != "ready signedIn personSelected workoutOpened" {
		t.Errorf("host events = %q, want ready signedIn personSelected workoutOpened first", got)
	}

	// The session ends while the page is open (signed out elsewhere): the next call
	// rejects with session_required, the page says the session ended, the host hears it.
	if !eval[bool](t, ctx, `fetch("/app/signout", {method: "POST", body: new URLSearchParams(new FormData(document.getElementById("signout-form")))}).then((r) => r.ok)`) {
		t.Fatal("signing out by the page's form failed")
	}
	if err := svc(t, ctx, `svcApp.openWorkout(`+strconv.FormatInt(plan.ID, 10)+`)`, nil); err == nil || err.Code != "session_required" {
		t.Errorf("openWorkout after sign-out = %v, want session_required", err)
	}
	waitView(t, ctx, "session-ended")
	if got := textOf(t, ctx, "#session-ended"); !strings.Contains(got, "Your session has ended") {
		t.Errorf("the ended view says %q", got)
	}
	h.wait(t, "signedOut", 1, nil)
	mustSvc(t, ctx, `svcApp.status()`, &st)
	if st.SignedIn {
		t.Errorf("status() after sign-out = %+v, want signedIn false", st)
	}
	screenshot(t, ctx, "07-session-ended")
}
