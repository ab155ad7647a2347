package app

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/engine/enginetest"
	"github.com/partnergate/partnergate/webwrapper/signon"
)

// start runs an App on a fake window and stops it with the test.
func start(t *testing.T, o Options) (*App, *enginetest.Engine) {
	t.Helper()
	eng := enginetest.New()
	if err := eng.Start(context.Background(), engine.Options{URL: "http://app/"}); err != nil {
		t.Fatal(err)
	}
	if o.Version == "" {
		o.Version = "2.1.5.0"
	}
	a := New(eng, o)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-a.Done() })
	go a.Run(ctx)
	return a, eng
}

func cmd(t *testing.T, name string, args map[string]any) command.Command {
	t.Helper()
	c, err := command.New(name, args, command.FromPipe)
	if err != nil {
		t.Fatalf("command.New(%s): %v", name, err)
	}
	return c
}

func signIn(eng *enginetest.Engine, id int64) {
	eng.Emit("signedIn", map[string]any{"account": map[string]any{"id": id, "username": "inst"}, "organization": map[string]any{"id": 1}})
}

// waitRestores waits until the window was brought to the front n times: a command
// waiting for a sign-in does that first.
func waitRestores(t *testing.T, eng *enginetest.Engine, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, r := eng.Minimized(); r >= n {
			return
		}
	}
	t.Fatalf("window not brought to the front %d times", n)
}

// waitState waits until the app has taken in the page's events up to a sign-in state:
// events arrive on their own goroutine.
func waitState(t *testing.T, a *App, signedIn bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		a.mu.Lock()
		got := a.signedIn
		a.mu.Unlock()
		if got == signedIn {
			return
		}
	}
	t.Fatalf("signed in never became %v", signedIn)
}

type reply struct {
	out []byte
	has bool
	err error
}

func do(a *App, c command.Command) <-chan reply { return doCtx(context.Background(), a, c) }

func doCtx(ctx context.Context, a *App, c command.Command) <-chan reply {
	ch := make(chan reply, 1)
	go func() {
		out, has, err := a.Do(ctx, c)
		ch <- reply{out, has, err}
	}()
	return ch
}

func TestOrderAndSignInWait(t *testing.T) {
	a, eng := start(t, Options{})
	eng.Handle("openWorkout", func([]any) (any, error) { return map[string]any{"id": 12}, nil })
	eng.Handle("getListOfUsers", func([]any) (any, error) { return []any{}, nil })

	first := do(a, cmd(t, "openworkout", map[string]any{"id": "12"}))
	waitRestores(t, eng, 1) // the first command waits for the sign-in, window in front
	second := do(a, cmd(t, "getlistofusers", nil))
	if v := <-do(a, cmd(t, "version", nil)); string(v.out) != "2.1.5.0" || !v.has || v.err != nil {
		t.Errorf("version during the wait = %q, %v, %v; want 2.1.5.0 at once", v.out, v.has, v.err)
	}
	if got := eng.Calls(); len(got) != 0 {
		t.Fatalf("calls before the sign-in: %+v", got)
	}
	signIn(eng, 7)
	if r := <-first; r.err != nil || r.has {
		t.Errorf("openworkout = %q, %v, %v; want no reply", r.out, r.has, r.err)
	}
	if r := <-second; r.err != nil || string(r.out) != "[]" {
		t.Errorf("getlistofusers = %q, %v; want []", r.out, r.err)
	}
	var fns []string
	for _, c := range eng.Calls() {
		fns = append(fns, c.Fn)
	}
	if want := []string{"openWorkout", "getListOfUsers"}; !reflect.DeepEqual(fns, want) {
		t.Errorf("calls = %q, want %q", fns, want)
	}
}

// A command waits for the sign-in as long as its sender does, beyond the page call's
// limit: the original blocked until someone signed in. Its sender giving up ends it.
func TestSignInWaitHasNoLimit(t *testing.T) {
	a, eng := start(t, Options{Wait: 10 * time.Millisecond})
	eng.Handle("getListOfUsers", func([]any) (any, error) { return []any{}, nil })
	waiting := do(a, cmd(t, "getlistofusers", nil))
	waitRestores(t, eng, 1)
	time.Sleep(100 * time.Millisecond) // ten times the page call's limit
	signIn(eng, 7)
	if r := <-waiting; r.err != nil || string(r.out) != "[]" {
		t.Errorf("getlistofusers signed in after a long wait = %q, %v; want []", r.out, r.err)
	}
	// A sign-out makes commands wait again; a sender that hangs up ends its command.
	eng.Emit("signedOut", map[string]any{})
	waitState(t, a, false)
	ctx, cancel := context.WithCancel(context.Background())
	gone := doCtx(ctx, a, cmd(t, "getlistofusers", nil))
	cancel()
	if r := <-gone; !errors.Is(r.err, context.Canceled) {
		t.Errorf("a command whose sender hung up = %v, want context.Canceled", r.err)
	}
	if got := eng.Calls(); len(got) != 1 {
		t.Errorf("calls = %+v, want the one after the sign-in", got)
	}
}

// close does not wait behind a command waiting for the sign-in: it answers, the waiting
// command ends with an error, and Run returns.
func TestCloseWhileWaiting(t *testing.T) {
	a, eng := start(t, Options{})
	waiting := do(a, cmd(t, "getlistofusers", nil))
	waitRestores(t, eng, 1)
	if r := <-do(a, cmd(t, "close", nil)); r.err != nil || string(r.out) != `{"ok":true}` {
		t.Fatalf("close while a command waits = %q, %v", r.out, r.err)
	}
	if r := <-waiting; r.err == nil || !strings.Contains(r.err.Error(), "closing") {
		t.Errorf("the waiting command = %v, want the wrapper is closing", r.err)
	}
	<-a.Done()
}

// close signs the page out and forgets the external user's link, as the original did, so
// that the next start asks for the password; log answers nothing and turns logging on.
func TestCloseSignsOut(t *testing.T) {
	links := signon.Open(filepath.Join(wintest.TempDir(t), signon.FileName))
	logged := make(chan struct{}, 1)
	a, eng := start(t, Options{Links: links, External: `DOMAIN\asa`, EnableLog: func() { logged <- struct{}{} }})
	eng.Handle("getListOfUsers", func([]any) (any, error) { return []any{}, nil })
	eng.Handle("signOut", func([]any) (any, error) { return nil, nil })
	signIn(eng, 7)
	if r := <-do(a, cmd(t, "getlistofusers", nil)); r.err != nil {
		t.Fatal(r.err)
	}
	if _, ok, _ := links.Get(`DOMAIN\asa`); !ok {
		t.Fatal("no link after the sign-in")
	}
	if r := <-do(a, cmd(t, "Log", nil)); r.err != nil || r.has {
		t.Errorf("log = %q, %v, %v; want no reply", r.out, r.has, r.err)
	}
	select {
	case <-logged:
	default:
		t.Error("log did not turn logging on")
	}
	if r := <-do(a, cmd(t, "close", nil)); r.err != nil || string(r.out) != `{"ok":true}` {
		t.Fatalf("close = %q, %v", r.out, r.err)
	}
	var fns []string
	for _, c := range eng.Calls() {
		fns = append(fns, c.Fn)
	}
	if want := []string{"getListOfUsers", "signOut"}; !reflect.DeepEqual(fns, want) {
		t.Errorf("calls = %q, want %q", fns, want)
	}
	if _, ok, _ := links.Get(`DOMAIN\asa`); ok {
		t.Error("the sign-on link is still there after close")
	}
	<-a.Done()
}

func TestMapping(t *testing.T) {
	workout := map[string]any{
		"id": 12, "name": "Knee", "description": "d", "lastChangedAt": "2026-11-01T08:00:00Z",
		"owner": "Demo Instructor", "ownerId": 5, "executor": "Åsa Ørnø", "personId": 3, "template": false, "exerciseCount": 1,
		"exercises": []any{map[string]any{"id": 40, "exerciseId": 9, "name": "Squat", "sets": 3,
			"data": []any{map[string]any{"key": "sets", "value": "3", "unit": ""}}}},
	}
	tests := []struct {
		name  string
		cmd   string
		args  map[string]any
		fn    string
		want  []any // the call's arguments, as JSON would carry them
		page  any
		reply string // "" no reply
	}{
		{"selectperson", "SelectPerson", map[string]any{"userId": "0", "customId": "1001", "firstName": "Åsa", "lastName": "Ørnø", "source": "EHR"},
			"selectPerson", []any{map[string]any{"userid": 0.0, "customid": "1001", "firstname": "Åsa", "lastname": "Ørnø", "source": "EHR"}},
			map[string]any{"person": map[string]any{"id": 3, "customId": "1001", "firstname": "Åsa", "lastname": "Ørnø", "birthDate": "", "gender": "female"}, "created": true, "matched": 0},
			`{"Id":3,"CustomId":"1001","DateOfBirth":"0001-01-01T00:00:00","Firstname":"Åsa","Lastname":"Ørnø","Email":"","gender":"female","created":true,"matched":0}`},
		{"queryexercises", "queryexercises", map[string]any{"text": "hip"}, "queryExercises", []any{"hip"}, []any{}, "[]"},
		{"queryworkouts", "queryworkouts", map[string]any{"text": ""}, "queryWorkouts", []any{""}, []any{}, "[]"},
		{"getworkoutsforclient by custom id", "GetWorkoutsForClient", map[string]any{"customId": "1001", "from": "2026-01-31"},
			"getWorkoutsForClient", []any{map[string]any{"customId": "1001", "from": "2026-01-31"}}, []any{workout},
			`[{"Id":12,"Name":"Knee","Description":"d","LastChangedAt":"2026-11-01T08:00:00Z","Owner":5,"Executor":3,"ExerciseCount":1,"Exercises":[{"Id":40,"Name":"Squat","Data":[{"Key":"sets","Value":"3","Unit":""}]}],"OwnerName":"Demo Instructor","ExecutorName":"Åsa Ørnø"}]`},
		{"getworkoutsforclient by user id", "getworkoutsforclient", map[string]any{"userid": "42"},
			"getWorkoutsForClient", []any{map[string]any{"userId": 42.0}}, []any{}, "[]"},
		{"openworkout", "OpenWorkout", map[string]any{"id": "12"}, "openWorkout", []any{12.0}, workout, ""},
		{"getlistofusers", "getlistofusers", map[string]any{"customid": "1001"}, "getListOfUsers", []any{map[string]any{"customId": "1001"}},
			[]any{map[string]any{"id": 3, "customId": "1001", "firstname": "Åsa", "lastname": "Ørnø", "email": "a@example.com", "birthDate": "1950-07-01",
				"middlename": "", "mobile": "+47", "partnerIds": []any{"c-1"}, "ID": 9}},
			`[{"Id":3,"CustomId":"1001","DateOfBirth":"1950-07-01T00:00:00","Firstname":"Åsa","Lastname":"Ørnø","Email":"a@example.com","middlename":"","mobile":"+47","partnerIds":["c-1"]}]`},
		{"getlistofusers without custom id", "getlistofusers", nil, "getListOfUsers", []any{map[string]any{"customId": ""}}, []any{}, "[]"},
		{"setcustomid", "setcustomid", map[string]any{"userid": 3, "customid": "77"}, "setCustomId", []any{3.0, "77"},
			map[string]any{"id": 3, "customId": "77"}, `{"Id":3,"CustomId":"77","DateOfBirth":"0001-01-01T00:00:00","Firstname":"","Lastname":"","Email":""}`},
		{"setcase", "setcase", map[string]any{"caseid": "C-1"}, "setCase", []any{"C-1"}, map[string]any{"caseId": "C-1"}, `{"caseId":"C-1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, eng := start(t, Options{})
			signIn(eng, 7)
			eng.Handle(tt.fn, func([]any) (any, error) { return tt.page, nil })
			r := <-do(a, cmd(t, tt.cmd, tt.args))
			if r.err != nil {
				t.Fatalf("Do = %v", r.err)
			}
			if got := string(r.out); got != tt.reply || r.has != (tt.reply != "") {
				t.Errorf("reply = %q (has %v), want %q", got, r.has, tt.reply)
			}
			calls := eng.Calls()
			if len(calls) != 1 || calls[0].Fn != tt.fn {
				t.Fatalf("calls = %+v, want one of %s", calls, tt.fn)
			}
			raw, _ := json.Marshal(calls[0].Args)
			var got []any
			_ = json.Unmarshal(raw, &got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s(%s), want %v", tt.fn, raw, tt.want)
			}
		})
	}
}

func TestPageError(t *testing.T) {
	a, eng := start(t, Options{})
	signIn(eng, 7)
	eng.Handle("openWorkout", func([]any) (any, error) {
		return nil, &engine.PageError{Code: "not_found", Message: "No such workout.", Status: 404}
	})
	eng.Handle("setCustomId", func([]any) (any, error) {
		return nil, &engine.PageError{Code: "invalid_argument", Message: "Invalid.", Fields: []engine.FieldError{{Field: "customId", Reason: "too long"}}}
	})
	eng.Handle("getListOfUsers", func([]any) (any, error) { return nil, errors.New("browser gone") })
	tests := []struct {
		c    command.Command
		want string
	}{
		{cmd(t, "openworkout", map[string]any{"id": 99}), "not_found: No such workout."},
		{cmd(t, "setcustomid", map[string]any{"userid": 3, "customid": "x"}), "invalid_argument: Invalid. (customId: too long)"},
		{cmd(t, "getlistofusers", nil), "browser gone"},
	}
	for _, tt := range tests {
		if r := <-do(a, tt.c); r.err == nil || r.err.Error() != tt.want {
			t.Errorf("%s = %v, want %q", tt.c.Name, r.err, tt.want)
		}
	}
}

func TestPageTimeout(t *testing.T) {
	a, eng := start(t, Options{Wait: 50 * time.Millisecond})
	signIn(eng, 7)
	// The fake cannot see the call's context; a page that answers after the limit looks
	// the same to the queue as the real engine giving up at it.
	eng.Handle("getListOfUsers", func([]any) (any, error) { time.Sleep(100 * time.Millisecond); return nil, context.DeadlineExceeded })
	if r := <-do(a, cmd(t, "getlistofusers", nil)); r.err == nil || r.err.Error() != "Timeout. No response." {
		t.Errorf("a page that does not answer = %v, want the original's timeout", r.err)
	}
}

func TestWindowCommands(t *testing.T) {
	a, eng := start(t, Options{})
	if r := <-do(a, cmd(t, "hide", nil)); r.err != nil || r.has {
		t.Errorf("hide = %q, %v", r.out, r.err)
	}
	if m, _ := eng.Minimized(); !m {
		t.Errorf("hide did not minimize")
	}
	if r := <-do(a, cmd(t, "show", nil)); r.err != nil || r.has {
		t.Errorf("show = %q, %v", r.out, r.err)
	}
	if m, n := eng.Minimized(); m || n != 1 {
		t.Errorf("after show minimized %v, restores %d", m, n)
	}
	if r := <-do(a, cmd(t, "close", nil)); r.err != nil || string(r.out) != `{"ok":true}` {
		t.Errorf("close = %q, %v", r.out, r.err)
	}
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after close")
	}
	if r := <-do(a, cmd(t, "show", nil)); r.err == nil {
		t.Errorf("show after close = nil error")
	}
}

func TestWindowClosed(t *testing.T) {
	t.Run("not signed in ends", func(t *testing.T) {
		a, eng := start(t, Options{MinimizeOnExit: true, Relaunch: func(context.Context) (engine.Engine, error) { return nil, errors.New("no") }})
		_ = eng.Close()
		<-a.Done()
	})
	t.Run("signed in with MinimizeOnExit stays and show reopens", func(t *testing.T) {
		second := enginetest.New()
		a, eng := start(t, Options{MinimizeOnExit: true, Relaunch: func(context.Context) (engine.Engine, error) { return second, nil }})
		signIn(eng, 7)
		eng.Handle("getListOfUsers", func([]any) (any, error) { return []any{}, nil })
		if r := <-do(a, cmd(t, "getlistofusers", nil)); r.err != nil { // the sign-in is in
			t.Fatal(r.err)
		}
		_ = eng.Close()
		for a.Window() != nil {
			time.Sleep(time.Millisecond)
		}
		select {
		case <-a.Done():
			t.Fatal("Run returned although signed in with MinimizeOnExit")
		default:
		}
		if r := <-do(a, cmd(t, "hide", nil)); r.err != nil {
			t.Errorf("hide with the window closed = %v", r.err)
		}
		if r := <-do(a, cmd(t, "show", nil)); r.err != nil || a.Window() != second {
			t.Errorf("show = %v, window %v; want the relaunched one", r.err, a.Window())
		}
		second.Handle("getListOfUsers", func([]any) (any, error) { return []any{}, nil })
		if r := <-do(a, cmd(t, "getlistofusers", nil)); r.err != nil {
			t.Errorf("getlistofusers on the new window = %v (still signed in)", r.err)
		}
	})
}

func TestSignOnLinks(t *testing.T) {
	links := signon.Open(filepath.Join(wintest.TempDir(t), signon.FileName))
	a, eng := start(t, Options{Links: links, Wait: 50 * time.Millisecond})
	eng.Handle("getListOfUsers", func([]any) (any, error) { return []any{}, nil })
	if r := <-do(a, command.Command{Name: command.SignOn, Args: map[string]any{"user": `DOMAIN\asa`}}); r.err != nil || r.has {
		t.Fatalf("signon = %q, %v", r.out, r.err)
	}
	signIn(eng, 7)
	if r := <-do(a, cmd(t, "getlistofusers", nil)); r.err != nil {
		t.Fatalf("after the first sign-in: %v", r.err)
	}
	if l, ok, _ := links.Get(`domain\ASA`); !ok || l.AccountID != 7 || l.Username != "inst" {
		t.Errorf("link = %+v, %v; want account 7", l, ok)
	}

	// Another start of the same external user on a session of another account waits.
	b, eng2 := start(t, Options{Links: links, External: `DOMAIN\asa`, Wait: 50 * time.Millisecond})
	eng2.Handle("getListOfUsers", func([]any) (any, error) { return []any{}, nil })
	signIn(eng2, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if r := <-doCtx(ctx, b, cmd(t, "getlistofusers", nil)); r.err == nil {
		t.Errorf("account 8 served the user linked to 7")
	}
	// Signing out ends the link; the next sign-in links anew.
	eng2.Emit("signedOut", map[string]any{})
	signIn(eng2, 8)
	if r := <-do(b, cmd(t, "getlistofusers", nil)); r.err != nil {
		t.Errorf("after sign-out and sign-in: %v", r.err)
	}
	if l, _, _ := links.Get(`DOMAIN\asa`); l.AccountID != 8 {
		t.Errorf("link after re-sign-in = %+v, want account 8", l)
	}
}

func TestNotice(t *testing.T) {
	a, eng := start(t, Options{})
	shown := make(chan []any, 1)
	eng.Handle("showNotice", func(args []any) (any, error) { shown <- args; return nil, nil })
	done := make(chan error, 1)
	go func() {
		done <- a.Notice(context.Background(), "Version 2.1.6.0 is available.", "https://example.com/x.msi")
	}()
	select {
	case <-shown:
		t.Fatal("notice shown before the sign-in")
	case <-time.After(20 * time.Millisecond):
	}
	signIn(eng, 7)
	if err := <-done; err != nil {
		t.Fatalf("Notice = %v", err)
	}
	if got := <-shown; !reflect.DeepEqual(got, []any{"Version 2.1.6.0 is available.", "https://example.com/x.msi"}) {
		t.Errorf("showNotice%q", got)
	}
	if _, n := eng.Minimized(); n != 0 {
		t.Errorf("the notice brought the window to the front %d times", n)
	}
}

// The window comes when called, as the original's did: a signed-in wrapper whose window
// is minimised restores it (to the front, active) for selectperson, openworkout and the
// queries; the data commands leave it where it is.
func TestWindowComesWhenCalled(t *testing.T) {
	a, eng := start(t, Options{})
	for _, fn := range []string{"selectPerson", "openWorkout", "queryExercises", "queryWorkouts", "getListOfUsers", "getWorkoutsForClient"} {
		eng.Handle(fn, func([]any) (any, error) {
			if fn == "selectPerson" {
				return map[string]any{"person": map[string]any{"id": 3}}, nil
			}
			return []any{}, nil
		})
	}
	signIn(eng, 7)
	waitState(t, a, true)
	for _, tt := range []struct {
		c     command.Command
		comes bool
	}{
		{cmd(t, "selectperson", map[string]any{"userid": 0, "customid": "1", "firstname": "A", "lastname": "B"}), true},
		{cmd(t, "openworkout", map[string]any{"id": 12}), true},
		{cmd(t, "queryexercises", map[string]any{"text": "knee"}), true},
		{cmd(t, "queryworkouts", map[string]any{"text": "knee"}), true},
		{cmd(t, "getlistofusers", map[string]any{"customid": "1"}), false},
		{cmd(t, "getworkoutsforclient", map[string]any{"customid": "1"}), false},
	} {
		if r := <-do(a, cmd(t, "hide", nil)); r.err != nil {
			t.Fatal(r.err)
		}
		_, before := eng.Minimized()
		if r := <-do(a, tt.c); r.err != nil {
			t.Fatalf("%s = %v", tt.c.Name, r.err)
		}
		minimized, after := eng.Minimized()
		if came := after > before && !minimized; came != tt.comes {
			t.Errorf("%s with the window minimised: restored %v, want %v", tt.c.Name, came, tt.comes)
		}
	}
}
