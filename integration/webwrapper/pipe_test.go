package webwrapper

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/webwrapper/pipe"
	"github.com/partnergate/partnergate/webwrapper/signon"
)

// arguments is the provider argument of the Arguments protocol, one argv element as a
// Windows command line's provider="Svc.Desktop.Arguments.Component, Svc.Desktop" gives it.
const arguments = "provider=Svc.Desktop.Arguments.Component, Svc.Desktop"

// The records the pipe returns, the members the test reads. JSON decoding ignores case,
// so the original's Pascal-case names (Id, Name, …) fill them as the page's camelCase would.
type (
	pipePerson struct {
		ID        int64  `json:"id"`
		CustomID  string `json:"customId"`
		Firstname string `json:"firstname"`
		Lastname  string `json:"lastname"`
	}
	pipeWorkout struct {
		ID            int64  `json:"id"`
		Name          string `json:"name"`
		Description   string `json:"description"`
		LastChangedAt string `json:"lastChangedAt"`
		Owner         int64  `json:"owner"`
		Executor      int64  `json:"executor"`
		OwnerName     string `json:"ownerName"`
		ExecutorName  string `json:"executorName"`
		ExerciseCount int    `json:"exerciseCount"`
		Exercises     []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
			Data []struct {
				Key, Value, Unit string
			} `json:"data"`
		} `json:"exercises"`
	}
)

var fourPart = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)\.(\d+)$`)

// versionAtLeast reports whether the four-part version v is at least min.
func versionAtLeast(v string, min [4]int) bool {
	m := fourPart.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	for i := range 4 {
		n, _ := strconv.Atoi(m[i+1])
		if n != min[i] {
			return n > min[i]
		}
	}
	return true
}

// TestPipe is the first start of a desktop program's day: the wrapper starts with the
// Arguments provider and the program's user (signon), the instructor signs in on the
// window, and the program drives it over the pipe: version, selectperson with profile
// data, getlistofusers for two persons sharing a custom id, setcustomid,
// getworkoutsforclient with from, openworkout, hide and show (the X window state), and
// close: the reply, then the process exits, the pipe is gone and the lock is free.
func TestPipe(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, nil)
	w := d.start(t, arguments, `signon=CLINIC\asa`)
	p := w.attach(t)
	p.do(t, "sign-in page", chromedp.WaitVisible(chromedp.ID("password")))
	d.waitWindow(t, "normal")
	p.screenshot(t, "signin")

	// version needs no sign-in: the bare four-part text, at least the original's.
	if v := string(w.call(t, "version", nil)); !versionAtLeast(v, [4]int{2, 1, 4, 19787}) {
		t.Errorf("version = %q, want four dotted numbers, at least 2.1.4.19787", v)
	}
	if out, code := w.svcpipe(t, "Version"); code != 0 || !versionAtLeast(out, [4]int{2, 1, 4, 19787}) {
		t.Errorf("svcpipe Version = %q, exit %d; want the version, exit 0", out, code)
	}

	// A command that needs the page waits for the sign-in, which the person does meanwhile.
	listed := make(chan []byte, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		reply, err := pipe.Call(ctx, w.pipePath(), "GetListOfUsers", map[string]any{"customId": "nobody"})
		if err != nil {
			reply = []byte(err.Error())
		}
		listed <- reply
	}()
	p.signIn(t)
	p.screenshot(t, "signed-in")
	if got := string(<-listed); got != "[]" {
		t.Errorf("getlistofusers waiting for the sign-in = %s, want []", got)
	}
	// The program's user is linked to the account that signed in (B-SSO).
	links := signon.Open(filepath.Join(filepath.Dir(d.home), "config", "Svc", "Svc Webwrapper", signon.FileName))
	if l, ok, err := links.Get(`CLINIC\asa`); !ok || err != nil || l.Username != "instructor" {
		t.Errorf("sign-on link of CLINIC\\asa = %+v, %v, %v; want the instructor", l, ok, err)
	}

	// selectperson with profile data, as the original's sample client sends it (string
	// values, dateOfBirth, source, the gender as a Norwegian word): the reply is the
	// selected user's record, in the original's member names; the page shows the person
	// and the profile table.
	var selected map[string]any
	if reply := w.call(t, "SelectPerson", map[string]any{
		"userid": "0", "customId": "1001", "firstName": "Åsa", "lastName": "Ørnø", "gender": "Kvinne",
		"dateOfBirth": "1950-07-01", "source": "EHR",
		"profiledata": []any{
			map[string]any{"key": "weight", "name": "Weight", "value": "72.5", "unit": "kg", "date": "2024-03-05 08:30", "source": "scale"},
			map[string]any{"key": "height", "name": "Height", "value": "168", "unit": "cm", "date": "2024-03-05"},
		},
	}); json.Unmarshal(reply, &selected) != nil || selected["CustomId"] != "1001" || selected["Firstname"] != "Åsa" ||
		selected["DateOfBirth"] != "1950-07-01T00:00:00" || selected["Id"] == nil || selected["Id"] == 0.0 {
		t.Errorf("selectperson replied %s, want Åsa's user record", reply)
	}
	p.waitFor(t, "Åsa's person view", `document.getElementById("person-name") && document.getElementById("person-name").textContent === "Åsa Ørnø" && document.getElementById("profile-table")`)
	rows := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="profile-row"]')].map((r) => [...r.cells].map((c) => c.textContent).join("|"))`)
	// Profile times are written as the page's language writes them (issue 28): English
	// writes ISO 8601 to the minute.
	if want := []string{"Weight|72.5|kg|2024-03-05 08:30|scale", "Height|168|cm|2024-03-05 00:00|"}; strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("profile table rows = %q, want %q", rows, want)
	}
	if got := p.text(t, "#contact-name"); got != "Åsa Ørnø" {
		t.Errorf("the focus bar shows %q, want Åsa Ørnø in focus", got)
	}
	p.screenshot(t, "selectperson")

	// getlistofusers: Åsa by her custom id; a second person, then given the same custom
	// id with setcustomid: both.
	var asa []pipePerson
	w.callJSON(t, "GetListOfUsers", map[string]any{"customId": "1001"}, &asa)
	if len(asa) != 1 || asa[0].Firstname != "Åsa" || asa[0].ID == 0 {
		t.Fatalf("getlistofusers customid=1001 = %+v, want Åsa alone", asa)
	}
	// The original's sample client reads these six members through a dynamic object,
	// case-sensitively, and takes a DateOfBirth starting "000" for none.
	var dyn []map[string]any
	w.callJSON(t, "GetListOfUsers", map[string]any{"customId": "1001"}, &dyn)
	for k, want := range map[string]any{"Id": float64(asa[0].ID), "CustomId": "1001", "DateOfBirth": "1950-07-01T00:00:00",
		"Firstname": "Åsa", "Lastname": "Ørnø", "Email": ""} {
		if len(dyn) != 1 || dyn[0][k] != want {
			t.Errorf("getlistofusers member %s = %v, want %v (case-sensitive)", k, dyn, want)
		}
	}

	// A selectperson at the size the wrapper accepts (200 profile entries of 1 KiB) is
	// accepted by the app service's API too: the two limits are one.
	big := make([]any, 200)
	for i := range big {
		big[i] = map[string]any{"key": "k" + strconv.Itoa(i), "value": strings.Repeat("x", 1024)}
	}
	if reply := w.call(t, "selectperson", map[string]any{"userid": asa[0].ID, "firstname": "Åsa", "lastname": "Ørnø", "profiledata": big}); json.Unmarshal(reply, &selected) != nil || selected["Id"] != float64(asa[0].ID) {
		t.Errorf("selectperson with 200 profile entries of 1 KiB replied %.300s, want Åsa's record", reply)
	}
	w.call(t, "selectperson", map[string]any{"userid": 0, "customid": "2002", "firstname": "Bo", "lastname": "Lund"})
	p.waitFor(t, "Bo's person view", `document.getElementById("person-name") && document.getElementById("person-name").textContent === "Bo Lund"`)
	var bo []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "2002"}, &bo)
	if len(bo) != 1 || bo[0].Firstname != "Bo" {
		t.Fatalf("getlistofusers customid=2002 = %+v, want Bo alone", bo)
	}
	var set pipePerson
	w.callJSON(t, "SetCustomId", map[string]any{"userid": strconv.FormatInt(bo[0].ID, 10), "customid": "1001"}, &set)
	if set.ID != bo[0].ID || set.CustomID != "1001" {
		t.Errorf("setcustomid = %+v, want Bo (%d) with custom id 1001", set, bo[0].ID)
	}
	var both []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "1001"}, &both)
	names := []string{}
	for _, x := range both {
		names = append(names, x.Firstname)
	}
	if strings.Join(names, ",") != "Åsa,Bo" && strings.Join(names, ",") != "Bo,Åsa" {
		t.Errorf("getlistofusers customid=1001 = %q, want Åsa and Bo", names)
	}
	var none []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "2002"}, &none)
	if len(none) != 0 {
		t.Errorf("getlistofusers customid=2002 after setcustomid = %+v, want nobody", none)
	}

	// A plan for Åsa, made in the window as the instructor would; getworkoutsforclient
	// lists it for a from before today and not for one after.
	w.call(t, "selectperson", map[string]any{"userid": asa[0].ID, "firstname": "Åsa", "lastname": "Ørnø"})
	p.waitFor(t, "Åsa in focus", `document.getElementById("contact-name") && document.getElementById("contact-name").textContent === "Åsa Ørnø"`)
	p.waitFor(t, "Åsa's person view", `document.getElementById("new-plan-template")`)
	plan := eval[struct {
		ID int64 `json:"id"`
	}](t, p, `(() => {
	const o = [...document.getElementById("new-plan-template").options].find((o) => o.text === "Knee rehabilitation, week 1");
	return svcApp.createWorkout({title: "Åsa's knee plan", templateId: Number(o.value)});
})()`)
	if plan.ID == 0 {
		t.Fatal("createWorkout made no plan")
	}
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	var workouts []pipeWorkout
	w.callJSON(t, "GetWorkoutsForClient", map[string]any{"userId": strconv.FormatInt(asa[0].ID, 10), "from": yesterday}, &workouts)
	if len(workouts) != 1 || workouts[0].ID != plan.ID || workouts[0].Name != "Åsa's knee plan" ||
		workouts[0].Executor != asa[0].ID || workouts[0].Owner == 0 || workouts[0].ExecutorName != "Åsa Ørnø" || workouts[0].OwnerName != "Coach Carter" || workouts[0].LastChangedAt == "" ||
		workouts[0].ExerciseCount < 4 || len(workouts[0].Exercises) != workouts[0].ExerciseCount ||
		workouts[0].Exercises[0].Name == "" || len(workouts[0].Exercises[0].Data) == 0 {
		t.Errorf("getworkoutsforclient from %s = %+v, want Åsa's knee plan by Coach Carter", yesterday, workouts)
	}
	var later []pipeWorkout
	w.callJSON(t, "getworkoutsforclient", map[string]any{"userid": asa[0].ID, "from": tomorrow}, &later)
	if len(later) != 0 {
		t.Errorf("getworkoutsforclient from %s = %+v, want none", tomorrow, later)
	}
	raw := string(w.call(t, "getworkoutsforclient", map[string]any{"userid": asa[0].ID}))
	for _, field := range []string{`"Id"`, `"Name"`, `"Description"`, `"LastChangedAt"`, `"Owner"`, `"Executor"`, `"ExerciseCount"`, `"Exercises"`} {
		if !strings.Contains(raw, field) {
			t.Errorf("getworkoutsforclient = %s, want the original's field %s", raw, field)
		}
	}

	// openworkout: the window shows the plan.
	w.call(t, "openWorkout", map[string]any{"id": strconv.FormatInt(plan.ID, 10)})
	p.waitFor(t, "the plan", `location.pathname === "/app/workouts/`+strconv.FormatInt(plan.ID, 10)+`" && document.getElementById("workout-title") && !document.getElementById("view").hasAttribute("aria-busy")`)
	if got := p.text(t, "#workout-title"); got != "Åsa's knee plan" {
		t.Errorf("openworkout shows %q, want Åsa's knee plan", got)
	}
	p.screenshot(t, "openworkout")

	// hide minimises the window and takes it out of the taskbar, as the original's did;
	// show brings it back, into the taskbar and to the front.
	w.call(t, "hide", nil)
	d.waitWindow(t, "iconic")
	d.waitTaskbar(t, false)
	w.call(t, "show", nil)
	d.waitWindow(t, "normal")
	d.waitTaskbar(t, true)
	if got := p.text(t, "#workout-title"); got != "Åsa's knee plan" {
		t.Errorf("after show the window shows %q, want the plan still", got)
	}
	p.screenshot(t, "show")

	// close: the reply comes first, then the process exits 0, the pipe is gone and the
	// lock is free.
	if got := string(w.call(t, "Close", nil)); got != `{"ok":true}` {
		t.Errorf("close = %q, want {\"ok\":true}", got)
	}
	if code := w.waitExit(t, 30*time.Second); code != 0 {
		t.Errorf("after close the wrapper exited with status %d, want 0", code)
	}
	if _, err := os.Stat(w.pipePath()); !os.IsNotExist(err) {
		t.Errorf("after close the pipe %s is still there (%v)", w.pipePath(), err)
	}
	if !d.lockFree(t) {
		t.Error("after close the instance lock is still held")
	}
	d.waitWindow(t, "none")
	d.checkNoPersonalData(t, w, "Åsa", "Ørnø", "1950-07-01", "72.5", "Lund")
}
