package webwrapper

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/webwrapper/pipe"
)

// minimize minimises the wrapper's window as the person does, from outside the wrapper
// (the DevTools port), and waits until the window manager shows it iconic.
func (d *desktop) minimize(t *testing.T, p *page) {
	t.Helper()
	c, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	win, err := chromedp.CallBrowser(c, browser.GetWindowForTarget, browser.GetWindowForTargetParams{TargetID: chromedp.FromContext(p.ctx).Target.TargetID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(c, browser.SetWindowBounds, browser.SetWindowBoundsParams{
		WindowID: win.WindowID, Bounds: &browser.Bounds{WindowState: browser.WindowStateMinimized},
	}); err != nil {
		t.Fatal(err)
	}
	d.waitWindow(t, "iconic")
}

// hangUp writes one pipe request and hangs up at once, without reading, as the original's
// sample client sends show, hide, close, log and openworkout.
func (w *wrapper) hangUp(t *testing.T, request string) {
	t.Helper()
	conn, err := net.Dial("unix", w.pipePath())
	if err != nil {
		t.Fatal(err)
	}
	if err := pipe.WriteMessage(conn, []byte(request)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// TestWindowComesWhenCalled: a client that writes selectperson before the sign-in,
// behind a command that waits for it, and hangs up at once, loses nothing: once the
// instructor signs in, the window shows the person. Then, with the window minimised by
// the person, a second start without arguments, selectperson and openworkout each bring it
// back (normal and active, as the window manager reports it); getlistofusers leaves it
// where it is.
func TestWindowComesWhenCalled(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, nil)
	w := d.start(t, arguments)
	p := w.attach(t)
	p.do(t, "sign-in page", chromedp.WaitVisible(chromedp.ID("password")))

	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := pipe.Call(ctx, w.pipePath(), "getlistofusers", map[string]any{"customid": "none"})
		waiting <- err
	}()
	w.hangUp(t, `{"Method":"SelectPerson","Args":{"userid":"0","customId":"9001","firstName":"Hege","lastName":"Vik","source":"EHR"}}`)
	p.signIn(t)
	if err := <-waiting; err != nil {
		t.Fatalf("the waiting getlistofusers = %v", err)
	}
	// The header names the person before the person view (and its plan form) has loaded.
	p.waitFor(t, "Hege in focus: the command of the client that hung up ran",
		`(document.getElementById("contact-name") || {}).textContent === "Hege Vik"
		&& document.getElementById("new-plan-template")`)
	p.screenshot(t, "hung-up-client")

	plan := eval[struct {
		ID int64 `json:"id"`
	}](t, p, `(() => {
	const o = [...document.getElementById("new-plan-template").options].find((o) => o.text === "Knee rehabilitation, week 1");
	return svcApp.createWorkout({title: "Hege's plan", templateId: Number(o.value)});
})()`)

	d.minimize(t, p)
	if code, out := d.second(t); code != 0 {
		t.Fatalf("a second start without arguments exited %d:\n%s", code, out)
	}
	d.waitWindow(t, "normal")

	d.minimize(t, p)
	w.call(t, "getlistofusers", map[string]any{"customid": "9001"})
	if state, _ := d.windowState(t); state != "iconic" {
		t.Errorf("after getlistofusers the window is %s, want it left minimised", state)
	}
	w.call(t, "selectperson", map[string]any{"userid": 0, "customid": "9002", "firstname": "Ola", "lastname": "Vik"})
	d.waitWindow(t, "normal")
	p.waitFor(t, "Ola in focus", `(document.getElementById("contact-name") || {}).textContent === "Ola Vik"`)

	d.minimize(t, p)
	w.hangUp(t, `{"Method":"OpenWorkout","Args":{"id":"`+strconv.FormatInt(plan.ID, 10)+`"}}`)
	d.waitWindow(t, "normal")
	p.waitFor(t, "the plan", `location.pathname === "/app/workouts/`+strconv.FormatInt(plan.ID, 10)+`"`)
	p.screenshot(t, "openworkout-restored")
	w.close(t)
}
