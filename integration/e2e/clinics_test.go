package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// kariSSN is the national identity number both clinics have for Kari.
const kariSSN = "17053550088"

// kariAt is Kari as Clinic A's and Clinic B's partner records have her: two contact ids
// and different details, one ssn.
func kariAt(clinic string) map[string]any {
	if clinic == "a" {
		return map[string]any{"id": "contact-1", "ssn": kariSSN, "firstname": "Kari", "lastname": "Nordmann",
			"birthdate": "1975-05-17", "email": "kari@a.example", "mobile": "+47 400 00 001"}
	}
	// The same number in another spelling, as clinic B writes it.
	return map[string]any{"id": "c-999", "ssn": kariSSN[:6] + " " + kariSSN[6:], "firstname": "Kari", "lastname": "Berg", "email": "kari@b.example"}
}

// clinicLink is a main-client link of the clinic's instructor with Kari in focus.
func clinicLink(clinic string) map[string]any {
	return map[string]any{
		"employeeId": "emp-" + clinic, "employeeUsername": "coach-" + clinic,
		"employeeFirstname": "Coach", "employeeLastname": strings.ToUpper(clinic), "employeeEmail": "coach@" + clinic + ".example",
		"organizationName": "Clinic " + strings.ToUpper(clinic), "organizationId": "org-" + clinic,
		"contact": kariAt(clinic),
	}
}

// clinicGoLink opens Kari's Go link from the clinic and waits for her list of plans.
func clinicGoLink(t *testing.T, s *stack, ctx context.Context, clinic string) {
	t.Helper()
	p := map[string]any{"organizationName": "Clinic " + strings.ToUpper(clinic), "organizationId": "org-" + clinic, "contact": kariAt(clinic)}
	openLink(t, ctx, s.linkURL(t, p), "member")
	waitView(t, ctx, "my-plans")
}

// apiAnswer is an answer of the JSON API as the page's own fetch sees it.
type apiAnswer struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// api calls the JSON API from the page, as the page's scripts do: its session cookie, its
// origin, the CSRF token of its meta element.
func api(t *testing.T, ctx context.Context, method, path, body string) apiAnswer {
	t.Helper()
	return eval[apiAnswer](t, ctx, `(async () => {
	const init = { method: `+strconv.Quote(method)+`, credentials: "same-origin", headers: {} };
	if (init.method !== "GET") {
		init.headers["Content-Type"] = "application/json";
		init.headers["X-CSRF-Token"] = document.querySelector('meta[name="csrf-token"]').content;
		init.body = `+strconv.Quote(body)+`;
	}
	const r = await fetch(`+strconv.Quote(path)+`, init);
	return { status: r.status, body: await r.json() };
})()`)
}

// apiPerson reads GET /app/api/persons/{id} in the page.
func apiPerson(t *testing.T, ctx context.Context, id int64) (int, map[string]any) {
	t.Helper()
	a := api(t, ctx, "GET", "/app/api/persons/"+strconv.FormatInt(id, 10), "")
	var v struct {
		Person map[string]any `json:"person"`
		Code   string         `json:"code"`
	}
	if err := json.Unmarshal(a.Body, &v); err != nil {
		t.Fatalf("GET /app/api/persons/%d answered %d %s: %v", id, a.Status, a.Body, err)
	}
	if a.Status != 200 {
		return a.Status, map[string]any{"code": v.Code}
	}
	return a.Status, v.Person
}

// wantFields fails the test unless person has each member as want says.
func wantFields(t *testing.T, what string, person map[string]any, want map[string]any) {
	t.Helper()
	for k, w := range want {
		got, _ := json.Marshal(person[k])
		exp, _ := json.Marshal(w)
		if string(got) != string(exp) {
			t.Errorf("%s: %s = %s, want %s", what, k, got, exp)
		}
	}
}

// TestClinicsKeepTheirOwnRecords is issue 25's two-organization scenario through the real
// gateway and app service in a browser: Clinic B's main link carries the ssn of Clinic A's
// patient, and B's instructor (who made his account at first sight) posts persons/select
// with A's userid. A's record stays as A's link made it, B sees only what B's link gave.
// The member behind both records is one, but what a Go link's session sees is its clinic's
// only (issue 34): A's Go link shows A's plan under A's name for her, B's Go link (its own
// contact id, the ssn in another spelling) B's plan under B's name, and A's plan, notes,
// instructor and name appear nowhere in B's session.
func TestClinicsKeepTheirOwnRecords(t *testing.T) {
	s := startStack(t)

	// Clinic A: the instructor's first link, Kari in focus, a plan for her.
	actx := newBrowser(t)
	signInFirstSight(t, s, actx, clinicLink("a"))
	waitView(t, actx, "person")
	var stA svcStatus
	mustSvc(t, actx, `svcApp.status()`, &stA)
	if stA.Person == nil || stA.Person.Name != "Kari Nordmann" {
		t.Fatalf("A's person in focus = %+v, want Kari Nordmann", stA.Person)
	}
	kariA := stA.Person.ID
	var planA svcWorkout
	mustSvc(t, actx, `svcApp.createWorkout({title: "Knee plan from A"})`, &planA)
	const notesA = "Notes only clinic A wrote"
	if a := api(t, actx, "PUT", "/app/api/workouts/"+strconv.FormatInt(planA.ID, 10), `{"title":"Knee plan from A","notes":"`+notesA+`","items":[]}`); a.Status != 200 {
		t.Fatalf("A's PUT of its plan's notes = %d %s", a.Status, a.Body)
	}
	asA := map[string]any{"name": "Kari Nordmann", "birthDate": "1975-05-17", "email": "kari@a.example",
		"mobile": "+47 400 00 001", "address": "", "gender": "", "customId": "contact-1", "partnerIds": []string{"contact-1"}}
	_, p := apiPerson(t, actx, kariA)
	wantFields(t, "A's record", p, asA)

	// Clinic B: another instructor, whose account is made at first sight; B's link has
	// Kari's ssn under B's contact id.
	bctx := newBrowser(t)
	const beaPassword = "clinic-b-coach-7Kq2x9vT"
	step(t, bctx, "open B's first link", chromedp.Navigate(s.linkURL(t, clinicLink("b"))), chromedp.WaitVisible(chromedp.ID("signup-password")))
	step(t, bctx, "create B's instructor account",
		chromedp.SendKeys(chromedp.ID("signup-password"), beaPassword),
		chromedp.SendKeys(chromedp.ID("signup-password2"), beaPassword),
		chromedp.Click(chromedp.ID("signup")),
		chromedp.WaitVisible(chromedp.ID("contact-name")))
	waitView(t, bctx, "person")
	screenshot(t, bctx, "1-clinic-b")
	var stB svcStatus
	mustSvc(t, bctx, `svcApp.status()`, &stB)
	if stB.Person == nil || stB.Organization == nil || stB.Organization.Name != "Clinic B" {
		t.Fatalf("B's status = %+v, want Kari in focus at Clinic B", stB)
	}
	if stB.Person.ID == kariA {
		t.Errorf("B's person in focus is A's record %d, want a record of Clinic B's own", kariA)
	}
	kariB := stB.Person.ID
	_, p = apiPerson(t, bctx, kariB)
	wantFields(t, "B's record after B's link", p, map[string]any{"name": "Kari Berg", "birthDate": "", "email": "kari@b.example",
		"mobile": "", "customId": "c-999", "partnerIds": []string{"c-999"}})
	for sel, want := range map[string]string{"#person-name": "Kari Berg", "#contact-birthdate": "not given", "#contact-partner-id": "c-999"} {
		if got := textOf(t, bctx, sel); got != want {
			t.Errorf("B's page %s = %q, want %q", sel, got, want)
		}
	}

	// B's instructor with A's userid: not found, for reading and for writing.
	if status, p := apiPerson(t, bctx, kariA); status != 404 || p["code"] != "not_found" {
		t.Errorf("B's GET /app/api/persons/%d = %d %v, want 404 not_found", kariA, status, p)
	}
	edit := `{"userid":` + strconv.FormatInt(kariA, 10) + `,"firstname":"Edited","lastname":"ByOrgB","email":"edited@evil.example",` +
		`"address":"Evil street 1","dateofbirth":"2000-01-01","gender":"male"}`
	if a := api(t, bctx, "POST", "/app/api/persons/select", edit); a.Status != 404 || !strings.Contains(string(a.Body), `"code":"not_found"`) {
		t.Errorf("B's POST /app/api/persons/select with A's userid = %d %s, want 404 not_found", a.Status, a.Body)
	}
	if a := api(t, bctx, "PUT", "/app/api/persons/"+strconv.FormatInt(kariA, 10)+"/customId", `{"customId":"b-1"}`); a.Status != 404 {
		t.Errorf("B's PUT customId of A's userid = %d %s, want 404", a.Status, a.Body)
	}
	// With B's own userid the edit changes B's record, and only it.
	edit = strings.Replace(edit, `"userid":`+strconv.FormatInt(kariA, 10), `"userid":`+strconv.FormatInt(kariB, 10), 1)
	if a := api(t, bctx, "POST", "/app/api/persons/select", edit); a.Status != 200 {
		t.Fatalf("B's POST /app/api/persons/select with B's userid = %d %s", a.Status, a.Body)
	}
	var planB svcWorkout
	mustSvc(t, bctx, `svcApp.createWorkout({title: "Back plan from B"})`, &planB)

	_, p = apiPerson(t, actx, kariA)
	wantFields(t, "A's record after B's link and B's instructor", p, asA)
	_, p = apiPerson(t, bctx, kariB)
	wantFields(t, "B's record after B's instructor", p, map[string]any{"name": "Edited ByOrgB", "birthDate": "2000-01-01",
		"email": "edited@evil.example", "address": "Evil street 1", "gender": "male", "partnerIds": []string{"c-999"}})

	// Kari's Go link from Clinic A: A's plan, under A's name for her.
	mctx := newBrowser(t)
	clinicGoLink(t, s, mctx, "a")
	checkMemberPlans(t, mctx, "Kari Nordmann", map[string]string{planA.Name: "Clinic A · for Kari Nordmann"})
	screenshot(t, mctx, "2-member-plans")

	// Her Go link from Clinic B matches her member by ssn only, under another contact id:
	// the same account, but the session is B's: B's plan under B's name for her, and
	// nothing of A's, also when asked for A's plan by its id.
	clinicGoLink(t, s, mctx, "b")
	checkMemberPlans(t, mctx, "Kari Berg", map[string]string{planB.Name: "Clinic B · for Kari Berg"})
	if got := textOf(t, mctx, "#organization"); got != "Clinic B" {
		t.Errorf("Go page after B's link: #organization = %q, want Clinic B", got)
	}
	if a := api(t, mctx, "GET", "/app/api/workouts/"+strconv.FormatInt(planA.ID, 10), ""); a.Status != 404 || !strings.Contains(string(a.Body), `"code":"not_found"`) {
		t.Errorf("B's Go session GET A's plan = %d %s, want 404 not_found", a.Status, a.Body)
	}
	mine := api(t, mctx, "GET", "/app/api/me/workouts", "")
	page := eval[string](t, mctx, `document.body.innerText`)
	for _, of := range []string{planA.Name, notesA, "Nordmann", "kari@a.example", "Coach Carter"} {
		if strings.Contains(string(mine.Body), of) || strings.Contains(page, of) {
			t.Errorf("B's Go session shows clinic A's %q (page %q, GET /app/api/me/workouts %s)", of, page, mine.Body)
		}
	}
	step(t, mctx, "open B's plan", chromedp.Click(chromedp.CSS(`[data-testid="my-plan"][data-id="`+strconv.FormatInt(planB.ID, 10)+`"] .workout-link`)))
	waitView(t, mctx, "workout")
	if got := textOf(t, mctx, "#member-plan-clinic"); got != "Clinic B · for Kari Berg" {
		t.Errorf("B's plan in Go names %q, want Clinic B · for Kari Berg", got)
	}
	screenshot(t, mctx, "3-member-plan-b")
	checkNoPersonalData(t, s)
	for name, logs := range map[string]string{"app service": s.appLogs.String(), "gateway": s.gateway.Logs()} {
		for _, secret := range []string{kariSSN, kariSSN[:6] + " " + kariSSN[6:], "kari@a.example", "kari@b.example", "ByOrgB"} {
			if strings.Contains(logs, secret) {
				t.Errorf("%s log contains the personal value %q", name, secret)
			}
		}
	}
}

// TestPlaceholderSSNDoesNotMerge is issue 34's placeholder finding through the real gateway
// and app service: two patients of one clinic whose partner records hold "N/A" as the
// identity number, each under a contact id of their own. The gateway drops the value with a
// warning that names the field and not the value; each Go link signs in to an account of
// its own, greeting its own patient. Before, "N/A" matched: one record and one account.
func TestPlaceholderSSNDoesNotMerge(t *testing.T) {
	s := startStack(t)
	accounts := map[int64]string{}
	for _, c := range []map[string]any{
		{"id": "c-na-1", "firstname": "Per", "lastname": "Hansen", "email": "per@example.org", "ssn": "N/A"},
		{"id": "c-na-2", "firstname": "Liv", "lastname": "Dahl", "email": "liv@example.org", "ssn": "N/A"},
	} {
		ctx := newBrowser(t)
		goLink(t, s, ctx, c)
		name := c["firstname"].(string) + " " + c["lastname"].(string)
		if got := textOf(t, ctx, "#greeting"); got != "Hi "+name {
			t.Errorf("Go link of %s greets %q, want Hi %s", c["id"], got, name)
		}
		var st struct {
			Account struct {
				ID int64 `json:"id"`
			} `json:"account"`
		}
		if a := api(t, ctx, "GET", "/app/api/status", ""); a.Status != 200 || json.Unmarshal(a.Body, &st) != nil {
			t.Fatalf("GET /app/api/status = %d %s", a.Status, a.Body)
		}
		if other, ok := accounts[st.Account.ID]; ok {
			t.Errorf("Go links of %s and %s signed in to one account, %d: the placeholder matched them", other, name, st.Account.ID)
		}
		accounts[st.Account.ID] = name
	}
	gw := s.gateway.Logs()
	if !strings.Contains(gw, `"msg":"optional payload field dropped"`) || !strings.Contains(gw, `"field":"contact.ssn"`) {
		t.Error("the gateway's log has no warning naming the dropped contact.ssn")
	}
	for name, logs := range map[string]string{"app service": s.appLogs.String(), "gateway": gw} {
		if strings.Contains(logs, "N/A") {
			t.Errorf("%s log contains the dropped value", name)
		}
	}
}

// checkMemberPlans checks the member's /go list: the greeting names her as the link's
// clinic does, and each plan by name shows its clinic line.
func checkMemberPlans(t *testing.T, ctx context.Context, name string, want map[string]string) {
	t.Helper()
	if got := textOf(t, ctx, "#greeting"); got != "Hi "+name {
		t.Errorf("Go greeting = %q, want Hi %s", got, name)
	}
	got := eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('[data-testid="my-plan"]')].map((li) =>
	[li.querySelector(".workout-link").textContent, li.querySelector('[data-testid="my-plan-clinic"]')?.textContent ?? ""]))`)
	if len(got) != len(want) {
		t.Errorf("Go lists plans %v, want %v", got, want)
	}
	for name, line := range want {
		if got[name] != line {
			t.Errorf("Go plan %q: clinic line = %q, want %q", name, got[name], line)
		}
	}
}
