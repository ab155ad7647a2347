package web

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/appservice/store"
)

// TestCatalogueInTheReadersLanguage (issue 36): a Norwegian member's plan shows the seeded
// exercises' Norwegian names and instructions; the instructor's Norwegian page lists and
// finds them with the Norwegian category, body part and equipment words, makes a plan from
// a template in Norwegian, and exports it to a Norwegian PDF; the header labels the
// username beside the name.
func TestCatalogueInTheReadersLanguage(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext not found: apt-get install poppler-utils (scripts/test-deps.sh does)")
	}
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, _, _ := db.open(t)
			w := newAPIWorld(t, dsn)
			ctx := context.Background()
			nb := func(r *http.Request) { r.Header.Set("Accept-Language", "nb-NO,nb;q=0.9,en;q=0.5") }
			templates, err := w.f.st.Workouts(ctx, 0, store.WorkoutQuery{Templates: true, Text: "Knee rehabilitation"})
			if err != nil || len(templates) != 1 {
				t.Fatalf("knee template = %d, %v", len(templates), err)
			}
			knee := strconv.FormatInt(templates[0].ID, 10)

			// The member picks Norwegian; the plan an English page made for them reads in
			// Norwegian where it is the catalogue's, and as its author wrote it elsewhere.
			m := w.member
			m.t = t
			if res, b := m.call(http.MethodPut, "/app/api/me/language", `{"language":"nb"}`); res.StatusCode != http.StatusOK {
				t.Fatalf("PUT /app/api/me/language = %d %s", res.StatusCode, b)
			}
			if _, page := m.get("/go"); !strings.Contains(page, `<html lang="nb">`) {
				t.Errorf("the member's Go page is not in Norwegian:\n%s", page)
			}
			st := m.status()
			ms, err := w.f.st.Session(ctx, cookieOf(t, m.browser, sessionCookie).Value)
			if err != nil || st["role"] != "member" {
				t.Fatalf("member session = %v, %v", st, err)
			}
			plan, err := w.f.st.CreateWorkout(ctx, ms.Organization.ID, 0, ms.Person.ID, templates[0].ID, "")
			if err != nil {
				t.Fatal(err)
			}
			res, b := m.call(http.MethodGet, "/app/api/workouts/"+strconv.FormatInt(plan.ID, 10), "")
			var got workoutJSON
			if err := json.Unmarshal(b, &got); err != nil || res.StatusCode != http.StatusOK || len(got.Exercises) < 2 {
				t.Fatalf("member GET plan = %d %s", res.StatusCode, b)
			}
			if e := got.Exercises[0]; got.Name != "Knee rehabilitation, week 1" || e.Name != "Ankelpumpe" ||
				!strings.HasPrefix(e.Instructions, "Sitt eller ligg med beina strake foran deg.") || e.Note != "Several times a day" {
				t.Errorf("the Norwegian member's plan = %q, first exercise %q: %q (note %q), want the English page's plan with Ankelpumpe's Norwegian instructions",
					got.Name, e.Name, e.Instructions, e.Note)
			}
			if e := got.Exercises[1]; e.Name != "Hælskli" || !strings.Contains(e.Instructions, "plastpose") {
				t.Errorf("second exercise = %q: %q, want Hælskli in Norwegian", e.Name, e.Instructions)
			}
			res, b = m.call(http.MethodGet, "/app/api/exercises/"+strconv.FormatInt(got.Exercises[0].ExerciseID, 10), "")
			if !strings.Contains(string(b), `"name":"Ankelpumpe"`) || !strings.Contains(string(b), `"category":"bevegelighet","bodyPart":"ankel","equipment":"ingen"`) {
				t.Errorf("member GET exercise = %d %s, want Ankelpumpe · bevegelighet · ankel · ingen", res.StatusCode, b)
			}

			// The instructor's Norwegian page.
			in := w.instructor
			in.t = t
			res, b = in.call(http.MethodGet, "/app/api/exercises?q=KNEB%C3%98Y", "", nb)
			var list struct{ Exercises []exerciseJSON }
			if err := json.Unmarshal(b, &list); err != nil || res.StatusCode != http.StatusOK || len(list.Exercises) != 1 {
				t.Fatalf("GET exercises?q=KNEBØY in Norwegian = %d %s, want Knebøy", res.StatusCode, b)
			}
			if e := list.Exercises[0]; e.Name != "Knebøy" || strings.Join([]string{e.Category, e.BodyPart, e.Equipment}, " · ") != "styrke · bein · ingen" ||
				!strings.HasPrefix(e.Instructions, "Stå med føttene i hoftebreddes avstand") {
				t.Errorf("Knebøy = %+v, want styrke · bein · ingen with Norwegian instructions", e)
			}
			for _, q := range []string{"category=styrke&bodyPart=bein&equipment=ingen&q=kneb", "category=strength&q=kneb"} {
				if _, b := in.call(http.MethodGet, "/app/api/exercises?"+q, "", nb); !strings.Contains(string(b), `"name":"Knebøy"`) {
					t.Errorf("GET exercises?%s in Norwegian = %s, want Knebøy", q, b)
				}
			}
			if _, b := in.call(http.MethodGet, "/app/api/exercises?q=kneb%C3%B8y", ""); !strings.Contains(string(b), `"exercises":[]`) {
				t.Errorf("GET exercises?q=knebøy in English = %s, want none: the English page shows Squat", b)
			}
			if _, page := in.getWith("/app", "nb"); !strings.Contains(page, `Logget inn som <strong id="account">Demo Instructor</strong> (brukernavn <span id="username">instructor</span>)`) {
				t.Errorf("the Norwegian header does not label the username:\n%s", page)
			}

			// A plan made from the knee template on the Norwegian page, exported there.
			person := w.ids.Replace("{person}")
			res, b = in.call(http.MethodPost, "/app/api/workouts", `{"personId":`+person+`,"templateId":`+knee+`}`, nb)
			if err := json.Unmarshal(b, &got); err != nil || res.StatusCode != http.StatusCreated {
				t.Fatalf("POST workouts in Norwegian = %d %s", res.StatusCode, b)
			}
			if got.Name != "Kneopptrening, uke 1" || !strings.HasPrefix(got.Description, "Tidlige øvelser") || got.Exercises[0].Note != "Flere ganger om dagen" {
				t.Errorf("the plan made on the Norwegian page = %q, %q, %q, want the template's Norwegian texts", got.Name, got.Description, got.Exercises[0].Note)
			}
			for lang, want := range map[string]string{"nb": "Treningsprogram", "de": "Trainingsplan", "en": "Workout plan"} {
				_, b := in.call(http.MethodPost, "/app/api/workouts", `{"personId":`+person+`}`, func(r *http.Request) { r.Header.Set("Accept-Language", lang) })
				var empty workoutJSON
				if err := json.Unmarshal(b, &empty); err != nil || empty.Name != want {
					t.Errorf("an empty plan made on the %s page = %s, want the title %q", lang, b, want)
				}
			}
			res, b = in.call(http.MethodPost, "/app/api/workouts/"+strconv.FormatInt(got.ID, 10)+"/export", `{"caseId":"case-nb"}`, nb)
			var export exportJSON
			if err := json.Unmarshal(b, &export); err != nil || res.StatusCode != http.StatusCreated {
				t.Fatalf("export in Norwegian = %d %s", res.StatusCode, b)
			}
			res, pdf := in.call(http.MethodGet, export.URL, "")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d", export.URL, res.StatusCode)
			}
			file := filepath.Join(t.TempDir(), "plan.pdf")
			if err := os.WriteFile(file, pdf, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("pdftotext", "-raw", "-enc", "UTF-8", file, "-").CombinedOutput()
			if err != nil {
				t.Fatalf("pdftotext: %v: %s", err, out)
			}
			txt := strings.Join(strings.Fields(string(out)), " ")
			for _, want := range []string{"Kneopptrening, uke 1", "Tidlige øvelser etter en kneskade", "Øvelse", "Ankelpumpe", "Hælskli", "Løft av strakt bein",
				"Flere ganger om dagen", "Rolig, så langt det er behagelig", "Hold kneet strakt"} {
				if !strings.Contains(txt, want) {
					t.Errorf("the Norwegian PDF lacks %q:\n%s", want, txt)
				}
			}
			for _, english := range []string{"Ankle pumps", "Heel slide", "Several times a day", "Knee rehabilitation"} {
				if strings.Contains(txt, english) {
					t.Errorf("the Norwegian PDF shows English %q:\n%s", english, txt)
				}
			}
		})
	}
}
