package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/linkspec"
)

// TestMain stops the private PostgreSQL cluster the API tests started.

// apiClient calls the JSON API as the page does: the browser's cookies, this site's
// Origin, and the CSRF token from the status answer on state-changing calls.
type apiClient struct {
	*browser
	csrf string
}

// call sends method path with body (JSON unless ct says otherwise); edit changes the
// request before it is sent.
func (c *apiClient) call(method, path, payload string, edit ...func(*http.Request)) (*http.Response, []byte) {
	c.t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(payload))
	if method != http.MethodGet {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Origin", "http://localhost:8080")
		r.Header.Set("X-CSRF-Token", c.csrf)
	}
	for _, e := range edit {
		e(r)
	}
	res := c.do(r)
	return res, []byte(body(c.t, res))
}

// status reads the session's status and keeps its CSRF token.
func (c *apiClient) status() map[string]any {
	c.t.Helper()
	res, b := c.call(http.MethodGet, "/app/api/status", "")
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil || res.StatusCode != http.StatusOK {
		c.t.Fatalf("GET /app/api/status = %d %s", res.StatusCode, b)
	}
	if tok, _ := st["csrfToken"].(string); tok != "" {
		c.csrf = tok
	}
	return st
}

// apiWorld is an instructor of the Demo clinic with its demo data, and a Go member of
// another organization (North Clinic) with a plan and an export there: the member's ids
// are the "foreign" ids the instructor must never reach.
type apiWorld struct {
	f                  *fixture
	instructor, member *apiClient
	ids                *strings.Replacer
}

func newAPIWorld(t *testing.T, dsn string) *apiWorld {
	t.Helper()
	ctx := context.Background()
	f := newFixtureOn(t, "http://localhost:8080", dsn, nil)
	w := &apiWorld{f: f}

	ib := newBrowser(t, f.h)
	_, page := ib.get("/app/signin")
	if res, _ := ib.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}}); res.Header.Get("Location") != "/app" {
		t.Fatalf("instructor sign-in → %q, want /app", res.Header.Get("Location"))
	}
	w.instructor = &apiClient{browser: ib}
	w.instructor.status()
	account, org, err := f.st.InstructorHome(ctx, "instructor")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.SeedDemo(ctx, org, account); err != nil {
		t.Fatal(err)
	}
	ase, err := f.st.Persons(ctx, org, "demo-1", 1)
	if err != nil || len(ase) != 1 {
		t.Fatalf("demo-1 = %v, %v", ase, err)
	}
	plans, err := f.st.Workouts(ctx, org, store.WorkoutQuery{PersonID: ase[0].ID})
	if err != nil || len(plans) == 0 {
		t.Fatalf("demo-1's plans = %v, %v", plans, err)
	}
	templates, err := f.st.Workouts(ctx, org, store.WorkoutQuery{Templates: true})
	if err != nil || len(templates) == 0 {
		t.Fatalf("templates = %v, %v", templates, err)
	}
	exercises, err := f.st.Exercises(ctx, org, store.ExerciseQuery{Text: "squat"})
	if err != nil || len(exercises) == 0 {
		t.Fatalf("exercises = %v, %v", exercises, err)
	}
	export, err := f.st.AddCaseExport(ctx, org, account, store.CaseExport{CaseID: "case-1", WorkoutID: plans[0].ID, Filename: "a.pdf"}, []byte("%PDF-1.4 demo"))
	if err != nil {
		t.Fatal(err)
	}

	mb := newBrowser(t, f.h)
	if res := mb.signInByLink(f.link(t, goPayload(), "go")); res.Header.Get("Location") != "/go" {
		t.Fatalf("Go login → %q, want /go", res.Header.Get("Location"))
	}
	w.member = &apiClient{browser: mb}
	w.member.status()
	ms, err := f.st.Session(ctx, cookieOf(t, mb, sessionCookie).Value)
	if err != nil || ms.Person == nil {
		t.Fatalf("member session = %+v, %v", ms, err)
	}
	fplan, err := f.st.CreateWorkout(ctx, ms.Organization.ID, account, ms.Person.ID, templates[0].ID, "Kari's plan")
	if err != nil {
		t.Fatal(err)
	}
	fexport, err := f.st.AddCaseExport(ctx, ms.Organization.ID, account, store.CaseExport{CaseID: "case-x", WorkoutID: fplan.ID, Filename: "x.pdf"}, []byte("%PDF-1.4 x"))
	if err != nil {
		t.Fatal(err)
	}
	id := func(n int64) string { return strconv.FormatInt(n, 10) }
	w.ids = strings.NewReplacer("{person}", id(ase[0].ID), "{plan}", id(plans[0].ID), "{template}", id(templates[0].ID),
		"{exercise}", id(exercises[0].ID), "{export}", id(export.ID),
		"{fperson}", id(ms.Person.ID), "{fplan}", id(fplan.ID), "{fexport}", id(fexport.ID))
	return w
}

// apiCase is one route and what to send it: a success, arguments that fail (with the
// fields that must be named), and a request naming another organization's ids.
type apiCase struct {
	name         string
	method, path string
	body         string
	member       bool                                 // a member's route
	either       bool                                 // a route for instructors and members alike
	file         bool                                 // the success is a PDF download
	want         int                                  // the success status
	check        func(t *testing.T, v map[string]any) // judges the success answer
	badPath      string                               // with badBody: invalid arguments
	badBody      string
	badFields    []string
	foreignPath  string // with foreignBody: another organization's ids, 404
	foreignBody  string
	noSessionRes int // the answer without a session; 401 when 0
}

var apiCases = []apiCase{
	{name: "status", method: "GET", path: "/app/api/status", want: 200, noSessionRes: 200,
		check: func(t *testing.T, v map[string]any) {
			org, _ := v["organization"].(map[string]any)
			acc, _ := v["account"].(map[string]any)
			if v["signedIn"] != true || v["role"] != "instructor" || v["csrfToken"] == "" || v["version"] != 1.0 ||
				org["name"] != "Demo clinic" || acc["displayName"] != "Demo Instructor" || acc["username"] != "instructor" {
				t.Errorf("status = %v", v)
			}
		}},
	{name: "exercises", method: "GET", path: "/app/api/exercises?q=squat&limit=1000", want: 200,
		check:   func(t *testing.T, v map[string]any) { wantSome(t, v, "exercises", "name", "Squat") },
		badPath: "/app/api/exercises?limit=0&q=%01", badFields: []string{"q", "limit"}},
	{name: "exercise", method: "GET", path: "/app/api/exercises/{exercise}", want: 200, either: true,
		check: func(t *testing.T, v map[string]any) {
			if v["instructions"] == "" || v["bodyPart"] == nil {
				t.Errorf("exercise = %v", v)
			}
		},
		badPath: "/app/api/exercises/abc", badFields: []string{"id"},
		// Exercises are a global catalogue; an id no organization sees is the nearest case.
		foreignPath: "/app/api/exercises/999999999"},
	{name: "workouts", method: "GET", path: "/app/api/workouts?customId=demo-1&from=2020-01-01", want: 200,
		check:   func(t *testing.T, v map[string]any) { wantSome(t, v, "workouts", "executor", "Åse Ødegård") },
		badPath: "/app/api/workouts?from=yesterday&template=maybe&limit=-1", badFields: []string{"limit", "template", "from"},
		foreignPath: "/app/api/workouts?personId={fperson}"},
	{name: "templates", method: "GET", path: "/app/api/workouts?template=true", want: 200,
		check:   func(t *testing.T, v map[string]any) { wantSome(t, v, "workouts", "template", true) },
		badPath: "/app/api/workouts?personId=1&customId=x", badFields: []string{"customId"},
		foreignPath: "/app/api/workouts?customId=c-2"},
	{name: "workout", method: "GET", path: "/app/api/workouts/{plan}", want: 200, either: true,
		check:   checkWorkout,
		badPath: "/app/api/workouts/0", badFields: []string{"id"}, foreignPath: "/app/api/workouts/{fplan}"},
	{name: "create workout", method: "POST", path: "/app/api/workouts", body: `{"personId":{person},"templateId":{template}}`, want: 201,
		check:   checkWorkout,
		badBody: `{"personId":0,"templateId":-1,"title":"a\u0000b"}`, badFields: []string{"personId", "templateId", "title"},
		foreignBody: `{"personId":{fperson}}`},
	{name: "update workout", method: "PUT", path: "/app/api/workouts/{plan}",
		body: `{"title":"Week 2","notes":"Twice a day","items":[{"exerciseId":{exercise},"sets":3,"reps":10,"load":"5 kg","restSeconds":60,"note":"slowly"}]}`, want: 200,
		check: func(t *testing.T, v map[string]any) {
			ex, _ := v["exercises"].([]any)
			if v["name"] != "Week 2" || v["description"] != "Twice a day" || v["exerciseCount"] != 1.0 || len(ex) != 1 {
				t.Fatalf("updated workout = %v", v)
			}
			data, _ := json.Marshal(ex[0].(map[string]any)["data"])
			// in the answer's order; members sorted, as Marshal writes a map
			want := `[{"key":"sets","unit":"","value":"3"},{"key":"reps","unit":"","value":"10"},{"key":"load","unit":"kg","value":"5"},{"key":"rest","unit":"s","value":"60"},{"key":"note","unit":"","value":"slowly"}]`
			if string(data) != want {
				t.Errorf("data = %s, want %s", data, want)
			}
		},
		badBody:     `{"title":"","items":[{"exerciseId":999999999,"sets":-1,"load":"` + strings.Repeat("x", 65) + `"}]}`,
		badFields:   []string{"title", "items[0].exerciseId", "items[0].sets", "items[0].load"},
		foreignPath: "/app/api/workouts/{fplan}"},
	{name: "export", method: "POST", path: "/app/api/workouts/{plan}/export", body: `{"caseId":"case-1"}`, want: 201,
		check: func(t *testing.T, v map[string]any) {
			if v["caseId"] != "case-1" || len(v["sha256"].(string)) != 64 || v["size"].(float64) < 1000 ||
				!regexp.MustCompile(`^/app/api/exports/\d+\.pdf$`).MatchString(v["url"].(string)) || v["createdBy"] != "Demo Instructor" {
				t.Errorf("export = %v", v)
			}
		},
		// The password session has no case: without one in the body there is none.
		badBody: `{}`, badFields: []string{"caseId"}, foreignPath: "/app/api/workouts/{fplan}/export"},
	{name: "persons", method: "GET", path: "/app/api/persons?customId=demo-1", want: 200,
		check:   func(t *testing.T, v map[string]any) { wantSome(t, v, "persons", "name", "Åse Ødegård") },
		badPath: "/app/api/persons?limit=5000", badFields: []string{"limit"}},
	{name: "person", method: "GET", path: "/app/api/persons/{person}", want: 200,
		check: func(t *testing.T, v map[string]any) {
			p, _ := v["person"].(map[string]any)
			profile, _ := v["profile"].([]any)
			ws, _ := v["workouts"].([]any)
			if p["customId"] != "demo-1" || p["birthDate"] != "1958-04-12" || len(profile) != 3 || len(ws) == 0 {
				t.Errorf("person = %v", v)
			}
			if e := profile[0].(map[string]any); e["date"] != "2026-02-02 09:30:00" || e["source"] != "demo" {
				t.Errorf("profile[0] = %v", e)
			}
		},
		badPath: "/app/api/persons/x", badFields: []string{"id"}, foreignPath: "/app/api/persons/{fperson}"},
	{name: "select person", method: "POST", path: "/app/api/persons/select",
		body: `{"userid":"0","customId":"new-1","firstname":"Ny","lastname":"Person","gender":"K","profiledata":[{"key":"w","value":"70","date":"2026-01-02"}]}`, want: 200,
		check: func(t *testing.T, v map[string]any) {
			p, _ := v["person"].(map[string]any)
			if v["created"] != true || v["matched"] != 0.0 || p["gender"] != "female" || p["customId"] != "new-1" {
				t.Errorf("select = %v", v)
			}
		},
		badBody: `{"userid":-1,"gender":"x"}`, badFields: []string{"userid", "gender", "firstname", "lastname", "customid"},
		foreignBody: `{"userid":{fperson},"firstname":"A","lastname":"B"}`},
	{name: "set custom id", method: "PUT", path: "/app/api/persons/{person}/customId", body: `{"customId":"demo-1b"}`, want: 200,
		check: func(t *testing.T, v map[string]any) {
			if v["customId"] != "demo-1b" || v["id"] == nil {
				t.Errorf("person = %v", v)
			}
		},
		badBody: `{"customId":"a\u0001b"}`, badFields: []string{"customId"}, foreignPath: "/app/api/persons/{fperson}/customId"},
	{name: "session person", method: "PUT", path: "/app/api/session/person", body: `{"personId":{person}}`, want: 200,
		check: func(t *testing.T, v map[string]any) {
			if p, _ := v["person"].(map[string]any); p["name"] != "Åse Ødegård" || v["csrfToken"] == "" {
				t.Errorf("status = %v", v)
			}
		},
		badBody: `{"personId":"1"}`, badFields: []string{"personId"}, foreignBody: `{"personId":{fperson}}`},
	{name: "session case", method: "PUT", path: "/app/api/session/case", body: `{"caseId":"case-7"}`, want: 200,
		check: func(t *testing.T, v map[string]any) {
			if v["caseId"] != "case-7" {
				t.Errorf("status = %v", v)
			}
		},
		badBody: `{"caseId":"` + strings.Repeat("c", linkspec.MaxIDLength+1) + `"}`, badFields: []string{"caseId"}},
	{name: "case exports", method: "GET", path: "/app/api/cases/case-1/exports", want: 200,
		check:   func(t *testing.T, v map[string]any) { wantSome(t, v, "exports", "filename", "a.pdf") },
		badPath: "/app/api/cases/" + strings.Repeat("c", linkspec.MaxIDLength+1) + "/exports", badFields: []string{"caseId"}},
	{name: "export pdf", method: "GET", path: "/app/api/exports/{export}.pdf", want: 200, file: true,
		badPath: "/app/api/exports/abc.pdf", badFields: []string{"id"}, foreignPath: "/app/api/exports/{fexport}.pdf"},
	{name: "my workouts", method: "GET", path: "/app/api/me/workouts", member: true, want: 200,
		check: func(t *testing.T, v map[string]any) {
			wantSome(t, v, "workouts", "name", "Kari's plan")
			wantSome(t, v, "workouts", "organization", "North Clinic")
		}},
}

// wantSome checks that v[list] has an element whose key is want.
func wantSome(t *testing.T, v map[string]any, list, key string, want any) {
	t.Helper()
	items, _ := v[list].([]any)
	for _, it := range items {
		if m, _ := it.(map[string]any); m[key] == want {
			return
		}
	}
	t.Errorf("%s has no element with %s = %v: %v", list, key, want, v)
}

func checkWorkout(t *testing.T, v map[string]any) {
	t.Helper()
	ex, _ := v["exercises"].([]any)
	if v["id"] == nil || v["name"] == "" || v["executor"] != "Åse Ødegård" || v["owner"] != "Demo Instructor" ||
		v["exerciseCount"] != float64(len(ex)) || len(ex) == 0 || v["lastChangedAt"] == "" {
		t.Fatalf("workout = %v", v)
	}
	if e := ex[0].(map[string]any); e["name"] == "" || e["instructions"] == "" || e["data"] == nil {
		t.Errorf("workout exercise = %v", e)
	}
}

// problemOf decodes a problem answer and checks its status, type and code.
func problemOf(t *testing.T, res *http.Response, b []byte, status int, code string) problemBody {
	t.Helper()
	var p problemBody
	if err := json.Unmarshal(b, &p); err != nil || res.StatusCode != status || p.Code != code ||
		p.Type != "urn:partnergate:problem:"+code || p.Status != status || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("answer = %d %s %s, want %d %s", res.StatusCode, res.Header.Get("Content-Type"), b, status, code)
	}
	return p
}

func TestAPIRoutes(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, _, _ := db.open(t)
			w := newAPIWorld(t, dsn)
			for _, c := range apiCases {
				t.Run(c.name, func(t *testing.T) { w.testRoute(t, c) })
			}
		})
	}
}

// testRoute sends the case's requests: every refusal first (none may change anything),
// then the success.
func (w *apiWorld) testRoute(t *testing.T, c apiCase) {
	client, other := w.instructor, w.member
	if c.member {
		client, other = w.member, w.instructor
	}
	client.t, other.t = t, t
	path, body := w.ids.Replace(c.path), w.ids.Replace(c.body)
	changes := c.method != http.MethodGet

	t.Run("no session", func(t *testing.T) {
		anon := &apiClient{browser: newBrowser(t, w.f.h)}
		res, b := anon.call(c.method, path, body)
		if c.noSessionRes == http.StatusOK {
			if res.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `{"signedIn":false}` {
				t.Errorf("%s %s without session = %d %s", c.method, c.path, res.StatusCode, b)
			}
			return
		}
		problemOf(t, res, b, http.StatusUnauthorized, "session_required")
	})
	if !c.either && c.noSessionRes == 0 {
		t.Run("other role", func(t *testing.T) {
			other.t = t
			res, b := other.call(c.method, path, body)
			problemOf(t, res, b, http.StatusForbidden, "role_forbidden")
		})
	}
	if changes {
		for _, r := range []struct {
			name   string
			edit   func(*http.Request)
			status int
			code   string
		}{
			{"no csrf token", func(r *http.Request) { r.Header.Del("X-CSRF-Token") }, 403, "csrf_invalid"},
			{"wrong csrf token", func(r *http.Request) { r.Header.Set("X-CSRF-Token", w.member.csrf) }, 403, "csrf_invalid"},
			{"foreign origin", func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, 403, "origin_forbidden"},
			{"null origin", func(r *http.Request) { r.Header.Set("Origin", "null") }, 403, "origin_forbidden"},
			{"origin of another scheme", func(r *http.Request) { r.Header.Set("Origin", "https://localhost:8080") }, 403, "origin_forbidden"},
			{"no origin, cross-site fetch", func(r *http.Request) {
				r.Header.Del("Origin")
				r.Header.Set("Sec-Fetch-Site", "cross-site")
			}, 403, "origin_forbidden"},
			{"wrong content type", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, 415, "unsupported_media_type"},
			{"body over the limit", func(r *http.Request) {
				big := `{"x":"` + strings.Repeat("a", maxAPIBody) + `"}`
				r.Body, r.ContentLength = io.NopCloser(strings.NewReader(big)), int64(len(big))
			}, 413, "body_too_large"},
			{"body over the limit, no length", func(r *http.Request) {
				big := `{"x":"` + strings.Repeat("a", maxAPIBody) + `"}`
				r.Body, r.ContentLength = io.NopCloser(strings.NewReader(big)), -1
			}, 413, "body_too_large"},
		} {
			t.Run(r.name, func(t *testing.T) {
				client.t = t
				res, b := client.call(c.method, path, body, r.edit)
				problemOf(t, res, b, r.status, r.code)
			})
		}
	}
	if c.badPath != "" || c.badBody != "" {
		t.Run("invalid arguments", func(t *testing.T) {
			client.t = t
			p, b := path, body
			if c.badPath != "" {
				p = w.ids.Replace(c.badPath)
			}
			if c.badBody != "" {
				b = w.ids.Replace(c.badBody)
			}
			res, out := client.call(c.method, p, b)
			pb := problemOf(t, res, out, http.StatusBadRequest, "invalid_argument")
			var got []string
			for _, f := range pb.Fields {
				got = append(got, f.Field)
				if f.Reason == "" {
					t.Errorf("field %q has no reason", f.Field)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.badFields, " ") {
				t.Errorf("fields = %q, want %q", got, c.badFields)
			}
		})
	}
	if c.foreignPath != "" || c.foreignBody != "" {
		t.Run("another organization's id", func(t *testing.T) {
			client.t = t
			p, b := path, body
			if c.foreignPath != "" {
				p = w.ids.Replace(c.foreignPath)
			}
			if c.foreignBody != "" {
				b = w.ids.Replace(c.foreignBody)
			}
			res, out := client.call(c.method, p, b)
			problemOf(t, res, out, http.StatusNotFound, "not_found")
		})
	}
	t.Run("success", func(t *testing.T) {
		client.t = t
		res, b := client.call(c.method, path, body)
		if res.StatusCode != c.want {
			t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, res.StatusCode, b, c.want)
		}
		if c.file {
			if ct, cd := res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"); ct != "application/pdf" ||
				cd != "attachment; filename=a.pdf" || !strings.HasPrefix(string(b), "%PDF-") {
				t.Errorf("download = %q %q %.20q", ct, cd, b)
			}
			return
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("answer %s: %v", b, err)
		}
		c.check(t, v)
	})
}

// TestAPIMember: a Go member reads the plans made for them in the link's organization, and
// nothing else: another person's plan is not found, not forbidden.
func TestAPIMember(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, _, _ := db.open(t)
			w := newAPIWorld(t, dsn)
			m := w.member
			m.t = t
			for _, c := range []struct {
				path   string
				status int
				code   string
			}{
				{"/app/api/workouts/{fplan}", 200, ""},
				{"/app/api/exercises/{exercise}", 200, ""},
				{"/app/api/workouts/{plan}", 404, "not_found"},
				{"/app/api/workouts/999999999", 404, "not_found"},
				{"/app/api/workouts", 403, "role_forbidden"},
				{"/app/api/persons/{fperson}", 403, "role_forbidden"},
			} {
				res, b := m.call(http.MethodGet, w.ids.Replace(c.path), "")
				if c.code != "" {
					problemOf(t, res, b, c.status, c.code)
					continue
				}
				if res.StatusCode != c.status {
					t.Errorf("member GET %s = %d %s, want %d", c.path, res.StatusCode, b, c.status)
				}
			}
			st := m.status()
			if st["role"] != "member" || st["signedIn"] != true {
				t.Errorf("member status = %v", st)
			}
		})
	}
}

// TestAPIGoLinkSeesItsOrganizationsPlans is issue 34's finding through the handler: clinic
// B's Go link with its own contact id and clinic A's patient's ssn in another spelling.
// B's session reads B's plans only: A's plan, its notes and instructor, and A's record's
// name, are not in any answer, and A's plan id is not found. A's own Go link reads A's.
func TestAPIGoLinkSeesItsOrganizationsPlans(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, _, _ := db.open(t)
			f := newFixtureOn(t, "http://localhost:8080", dsn, nil)
			ctx := context.Background()
			const ssn = "01013550022"
			kariAtA := &linkspec.Payload{OrganizationID: "org-a", OrganizationName: "Clinic A",
				Contact: &linkspec.Contact{ID: "contact-1", SSN: ssn, Firstname: "Kari", Lastname: "Nordmann", Email: "kari@a.example"}}
			a, err := f.st.ResolveLink(ctx, store.Link{Partner: "demo", Endpoint: "url", RequestID: "a-1", Kind: linkspec.KindGo, Payload: kariAtA})
			if err != nil {
				t.Fatal(err)
			}
			coach, _, err := f.st.InstructorHome(ctx, "instructor")
			if err != nil {
				t.Fatal(err)
			}
			planA, err := f.st.CreateWorkout(ctx, a.OrganizationID, coach, a.PersonID, 0, "Knee plan from A")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.UpdateWorkout(ctx, a.OrganizationID, planA.ID, planA.Title, "Notes only clinic A wrote", nil); err != nil {
				t.Fatal(err)
			}
			planAID := strconv.FormatInt(planA.ID, 10)

			kariAtB := &linkspec.Payload{OrganizationID: "org-b", OrganizationName: "Clinic B",
				Contact: &linkspec.Contact{ID: "c-999", SSN: ssn[:6] + " " + ssn[6:], Firstname: "Kari", Lastname: "Berg", Email: "kari@b.example"}}
			mb := newBrowser(t, f.h)
			if res := mb.signInByLink(f.link(t, kariAtB, "go")); res.Header.Get("Location") != "/go" {
				t.Fatalf("B's Go login → %q, want /go", res.Header.Get("Location"))
			}
			m := &apiClient{browser: mb}
			st := m.status()
			if acct, _ := st["account"].(map[string]any); acct["displayName"] != "Kari Berg" {
				t.Errorf("B's Go session status account = %v, want B's record's name Kari Berg", st["account"])
			}
			_, shell := mb.get("/go")
			_, list := m.call(http.MethodGet, "/app/api/me/workouts", "")
			res, one := m.call(http.MethodGet, "/app/api/workouts/"+planAID, "")
			problemOf(t, res, one, http.StatusNotFound, "not_found")
			for what, answer := range map[string]string{"GET /go": shell, "GET /app/api/me/workouts": string(list)} {
				for _, of := range []string{"Knee plan from A", "Notes only clinic A wrote", "Demo Instructor", "Nordmann", "kari@a.example"} {
					if strings.Contains(answer, of) {
						t.Errorf("%s in B's Go session shows clinic A's %q", what, of)
					}
				}
			}

			ab := newBrowser(t, f.h)
			kariAtA.Contact.Email = "kari@a.example"
			if res := ab.signInByLink(f.link(t, kariAtA, "go")); res.Header.Get("Location") != "/go" {
				t.Fatalf("A's Go login → %q, want /go", res.Header.Get("Location"))
			}
			ma := &apiClient{browser: ab}
			ma.status()
			if res, b := ma.call(http.MethodGet, "/app/api/workouts/"+planAID, ""); res.StatusCode != http.StatusOK || !strings.Contains(string(b), "Notes only clinic A wrote") {
				t.Errorf("A's Go session GET its plan = %d %s, want 200 with A's notes", res.StatusCode, b)
			}
		})
	}
}

// TestAPIUnknownRoutes: a path without a route is not_found, a method the path does not
// take is method_not_allowed with Allow, both as problem+json.
func TestAPIUnknownRoutes(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	c := &apiClient{browser: newBrowser(t, f.h)}
	res, b := c.call(http.MethodGet, "/app/api/nothing", "")
	problemOf(t, res, b, http.StatusNotFound, "not_found")
	res, b = c.call(http.MethodDelete, "/app/api/workouts/1", "")
	problemOf(t, res, b, http.StatusMethodNotAllowed, "method_not_allowed")
	if allow := res.Header.Get("Allow"); allow != "GET, PUT" {
		t.Errorf("Allow = %q, want GET, PUT", allow)
	}
}

// TestAPISessionNotSignedIn: a first-time employee's pending session and a session waiting
// for the link confirmation are not signed in for the API; a declined link leaves a session
// without an organization.
func TestAPISessionNotSignedIn(t *testing.T) {
	f := newFixture(t, "http://localhost:8080")
	b := newBrowser(t, f.h)
	if res := b.signInByLink(f.link(t, mainPayload(), "main")); res.Header.Get("Location") != "/app/signin" {
		t.Fatalf("first-sight login → %q", res.Header.Get("Location"))
	}
	c := &apiClient{browser: b}
	res, out := c.call(http.MethodGet, "/app/api/persons", "")
	problemOf(t, res, out, http.StatusUnauthorized, "session_required")
	if st := c.status(); st["signedIn"] != false {
		t.Errorf("pending status = %v", st)
	}

	_, page := b.get("/app/signin")
	if res, _ := b.post("/app/signin", url.Values{"login": {"instructor"}, "password": {"pass-word-1"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}}); res.Header.Get("Location") != "/app/link" {
		t.Fatalf("sign-in → %q, want /app/link", res.Header.Get("Location"))
	}
	res, out = c.call(http.MethodGet, "/app/api/persons", "")
	problemOf(t, res, out, http.StatusUnauthorized, "session_required")

	// Declined, the session is signed in without the link's organization: the instructor's
	// routes say so rather than answering for no organization.
	_, page = b.get("/app/link")
	if res, _ := b.post("/app/link", url.Values{"action": {"decline"}, "csrf": {csrfField.FindStringSubmatch(page)[1]}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("declining the link = %d", res.StatusCode)
	}
	if st := c.status(); st["signedIn"] != true || st["organization"] != nil {
		t.Errorf("status after declining = %v", st)
	}
	res, out = c.call(http.MethodGet, "/app/api/persons", "")
	problemOf(t, res, out, http.StatusForbidden, "organization_required")
}

// TestAPISecFetchSite: a browser that sends no Origin but Sec-Fetch-Site: same-origin is
// this site's page.
func TestAPISecFetchSite(t *testing.T) {
	w := newAPIWorld(t, filepath.Join(t.TempDir(), "app.db"))
	c := w.instructor
	c.t = t
	res, b := c.call(http.MethodPut, "/app/api/session/case", `{"caseId":"c-1"}`, func(r *http.Request) {
		r.Header.Del("Origin")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
	})
	if res.StatusCode != http.StatusOK {
		t.Errorf("PUT with Sec-Fetch-Site same-origin = %d %s", res.StatusCode, b)
	}
	res, b = c.call(http.MethodPut, "/app/api/session/case", `{"caseId":"c-1"}`, func(r *http.Request) { r.Header.Del("Origin") })
	problemOf(t, res, b, http.StatusForbidden, "origin_forbidden")
}

// TestAPIDatabaseDown: a database that does not answer is 503 unavailable with
// Retry-After, so the page and the wrapper know to try again.
func TestAPIDatabaseDown(t *testing.T) {
	w := newAPIWorld(t, filepath.Join(t.TempDir(), "app.db"))
	c := w.instructor
	c.t = t
	w.f.st.Close()
	res, b := c.call(http.MethodGet, "/app/api/persons", "")
	problemOf(t, res, b, http.StatusServiceUnavailable, "unavailable")
	if ra := res.Header.Get("Retry-After"); ra != "5" {
		t.Errorf("Retry-After = %q, want 5", ra)
	}
}

// TestAPILogsNoValues: refusals and answers log codes and routes, never what was sent.
func TestAPILogsNoValues(t *testing.T) {
	w := newAPIWorld(t, filepath.Join(t.TempDir(), "app.db"))
	var logs strings.Builder
	h, err := New(Config{Store: w.f.st, UpstreamSecret: upstreamSecret, AppSecret: appSecret, PublicURL: "http://localhost:8080",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Now: func() time.Time { return w.f.now }})
	if err != nil {
		t.Fatal(err)
	}
	c := w.instructor
	c.t, c.h = t, h
	for _, body := range []string{`{"userid":0,"firstname":"Zebulon","gender":"Quux"}`, `{"userid":0,"customid":"Zebulon","firstname":"Zebulon","lastname":"Quux"}`} {
		c.call(http.MethodPost, "/app/api/persons/select", body)
	}
	c.call(http.MethodPut, "/app/api/session/case", `{"caseId":"Zebulon`+strings.Repeat("x", 200)+`"}`)
	if strings.Contains(logs.String(), "Zebulon") || strings.Contains(logs.String(), "Quux") {
		t.Errorf("logs hold a request value:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "outcome=invalid_argument") {
		t.Errorf("logs have no refusal:\n%s", logs.String())
	}
}

// apiCall matches a call of the JSON API in api.js: request("METHOD", "path" or `path`).
var apiCall = regexp.MustCompile("request\\(\"([A-Z]+)\", [\"`]([^\"`]+)[\"`]")

// TestModuleAPICalls: every call api.js makes has a route, so the page calls nothing that
// answers not_found or method_not_allowed.
func TestModuleAPICalls(t *testing.T) {
	src, err := staticFS.ReadFile("static/app/api.js")
	if err != nil {
		t.Fatal(err)
	}
	calls := apiCall.FindAllStringSubmatch(string(src), -1)
	if len(calls) < 15 {
		t.Fatalf("api.js has %d calls, want every route's", len(calls))
	}
	f := newFixture(t, "http://localhost:8080")
	mux := f.h.apiRoutes().(*http.ServeMux)
	param := regexp.MustCompile(`\$\{[^}]+\}`)
	for _, c := range calls {
		path := apiPrefix + param.ReplaceAllString(c[2], "1")
		if _, pattern := mux.Handler(httptest.NewRequest(c[1], path, nil)); pattern == apiPrefix {
			t.Errorf("api.js calls %s %s, which has no route", c[1], path)
		}
	}
}

// TestAPIForeignCase: a case id is no record of its own; another organization's case lists
// none of its exports.
func TestAPIForeignCase(t *testing.T) {
	w := newAPIWorld(t, filepath.Join(t.TempDir(), "app.db"))
	c := w.instructor
	c.t = t
	res, b := c.call(http.MethodGet, "/app/api/cases/case-x/exports", "")
	if res.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `{"exports":[]}` {
		t.Errorf("GET another organization's case = %d %s, want 200 and no exports", res.StatusCode, b)
	}
}

// TestAPIDuplicateMembers: a body is read with the claims decoder's rules (linkspec's
// StrictClaims): member names are exact, a name given twice is refused, and so is one that
// differs from a route's member only in case, where encoding/json matched it anyway and kept
// the last (issue 25: {"caseId":"a","CASEID":"b"} set b). Nothing changes on a refusal.
func TestAPIDuplicateMembers(t *testing.T) {
	w := newAPIWorld(t, filepath.Join(t.TempDir(), "app.db"))
	c := w.instructor
	c.t = t
	if res, b := c.call(http.MethodPut, "/app/api/session/case", `{"caseId":"before"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT /app/api/session/case = %d %s", res.StatusCode, b)
	}
	plan := w.ids.Replace("/app/api/workouts/{plan}")
	_, before := c.call(http.MethodGet, plan, "")
	for _, tt := range []struct {
		name, path, body string
		field, reason    string
	}{
		{"case variant after", "/app/api/session/case", `{"caseId":"a","CASEID":"b"}`, "CASEID", "differs from caseId only in case: member names are case-sensitive"},
		{"case variant before", "/app/api/session/case", `{"CaseId":"b","caseId":"a"}`, "CaseId", "differs from caseId only in case: member names are case-sensitive"},
		{"case variant alone", "/app/api/session/case", `{"CASEID":"b"}`, "CASEID", "differs from caseId only in case: member names are case-sensitive"},
		{"same name twice", "/app/api/session/case", `{"caseId":"a","caseId":"b"}`, "caseId", "given more than once"},
		{"unknown member", "/app/api/session/case", `{"caseId":"a","case":"b"}`, "case", "unknown member"},
		{"nested case variant", plan, `{"title":"T","items":[{"exerciseId":1,"sets":1,"SETS":50}]}`, "items[0].SETS", "differs from sets only in case: member names are case-sensitive"},
		{"nested name twice", plan, `{"title":"T","items":[{"exerciseId":1,"sets":1,"sets":50}]}`, "items[0].sets", "given more than once"},
		{"wrong type", "/app/api/session/case", `{"caseId":7}`, "caseId", "must be a JSON string"},
		{"nested wrong type", plan, `{"title":"T","items":[{"exerciseId":"1"}]}`, "items[0].exerciseId", "must be a JSON number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			res, b := c.call(http.MethodPut, tt.path, tt.body)
			p := problemOf(t, res, b, http.StatusBadRequest, "invalid_argument")
			if len(p.Fields) != 1 || p.Fields[0].Field != tt.field || p.Fields[0].Reason != tt.reason {
				t.Errorf("PUT %s %s: fields = %+v, want %s: %s", tt.path, tt.body, p.Fields, tt.field, tt.reason)
			}
		})
	}
	c.t = t
	if st := c.status(); st["caseId"] != "before" {
		t.Errorf("session case after the refusals = %v, want before", st["caseId"])
	}
	if _, after := c.call(http.MethodGet, plan, ""); string(after) != string(before) {
		t.Errorf("plan after the refusals =\n%s\nwant\n%s", after, before)
	}
}
