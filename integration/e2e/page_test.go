package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/internal/testpayload"
)

// The helpers of the application tests: they drive the single-page application the way a
// person or a desktop wrapper does, and wait for what the page shows, never for a time.

// waitFor waits until the JavaScript expression is truthy in the page, across document
// loads: a poll whose document goes away (the login page's script moving on to the
// application) is started again in the next one, until the step's 30 s are up.
func waitFor(t *testing.T, ctx context.Context, name, expr string) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("step %s: %v", name, time.Since(start)) }()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := chromedp.Do(c, chromedp.Poll[chromedp.Void]("!!("+expr+")", chromedp.WithPollingInterval(50*time.Millisecond)))
		if err == nil {
			return
		}
		if c.Err() == nil && documentWentAway(err) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		screenshot(t, ctx, "failed-"+name)
		t.Fatalf("%s: %v (page %s)", name, err, loc)
	}
}

// documentWentAway reports whether err is the DevTools protocol's answer to a script run
// in a document that a navigation replaced.
func documentWentAway(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed")
}

// waitView waits until the application shows the view whose data-testid is testid.
func waitView(t *testing.T, ctx context.Context, testid string) {
	t.Helper()
	waitFor(t, ctx, "view "+testid, `document.querySelector('#view [data-testid="`+testid+`"]') && !document.getElementById("view").hasAttribute("aria-busy")`)
}

// eval evaluates expr (awaiting a Promise) and decodes its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		screenshot(t, ctx, "failed-eval")
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// fill replaces what the input with this id holds by typing text, as a person who selects
// all and types does: the page's input handlers see every key. (chromedp.Clear empties the
// value attribute, which the application's inputs do not use.)
func fill(t *testing.T, ctx context.Context, id, text string) {
	t.Helper()
	eval[bool](t, ctx, `(document.getElementById(`+strconv.Quote(id)+`).value = "", true)`)
	step(t, ctx, "type into "+id, chromedp.SendKeys(chromedp.ID(id), text))
}

// pagePath is the page's path and query ("/app/exercises?q=plank").
func pagePath(t *testing.T, ctx context.Context) string {
	t.Helper()
	return eval[string](t, ctx, `location.pathname + location.search`)
}

// count is how many elements match the CSS selector.
func count(t *testing.T, ctx context.Context, selector string) int {
	t.Helper()
	return eval[int](t, ctx, `document.querySelectorAll(`+strconv.Quote(selector)+`).length`)
}

// textOf is the trimmed text of the first element matching the CSS selector, "" when none.
func textOf(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	return eval[string](t, ctx, `(document.querySelector(`+strconv.Quote(selector)+`)?.textContent ?? "").trim()`)
}

// idIn returns the number after prefix in path ("/app/workouts/12" → 12).
func idIn(t *testing.T, path, prefix string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(strings.TrimPrefix(path, prefix), 10, 64)
	if !strings.HasPrefix(path, prefix) || err != nil {
		t.Fatalf("path %q is not %s<id>", path, prefix)
	}
	return id
}

// svcError is a window.svcApp rejection as the page sees it (SvcAppError).
type svcError struct {
	Name    string `json:"name"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Fields  []struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	} `json:"fields"`
	Status int `json:"status"`
}

func (e *svcError) Error() string {
	return fmt.Sprintf("%s %s (%d): %s", e.Name, e.Code, e.Status, e.Message)
}

// svcAnswer is how svc's wrapper hands back a call's outcome.
type svcAnswer struct {
	OK    bool            `json:"ok"`
	Value json.RawMessage `json:"value"`
	Error *svcError       `json:"error"`
}

// svc calls a window.svcApp function through the DevTools protocol, as a desktop wrapper
// does: call is the JavaScript expression ("svcApp.openWorkout(3)"); its resolved value
// is decoded into out (when not nil), a rejection comes back as *svcError.
func svc(t *testing.T, ctx context.Context, call string, out any) *svcError {
	t.Helper()
	res := eval[svcAnswer](t, ctx, `(async () => {
	try {
		const value = await (`+call+`);
		return { ok: true, value: value === undefined ? null : value };
	} catch (e) {
		return { ok: false, error: { name: e?.name, code: e?.code, message: e?.message, fields: e?.fields, status: e?.status } };
	}
})()`)
	if !res.OK {
		if res.Error == nil {
			res.Error = &svcError{Message: "rejected without an error"}
		}
		return res.Error
	}
	if out != nil {
		if err := json.Unmarshal(res.Value, out); err != nil {
			t.Fatalf("%s resolved to %s: %v", call, res.Value, err)
		}
	}
	return nil
}

// mustSvc is svc for a call that must resolve.
func mustSvc(t *testing.T, ctx context.Context, call string, out any) {
	t.Helper()
	if err := svc(t, ctx, call, out); err != nil {
		screenshot(t, ctx, "failed-svcapp")
		t.Fatalf("%s rejected: %v", call, err)
	}
}

// hostEvent is one call of window.svcHost.
type hostEvent struct {
	Seq   int             `json:"seq"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// host records the events the page tells window.svcHost, a function of one JSON string
// that is there before the page's scripts run, as a desktop wrapper injects it. It hands
// each message to Go (chromedp.ExposeFunc) with its number in the tab's order: the
// exposed function runs each call in its own goroutine, so arrival order is not the
// page's.
type host struct {
	mu     sync.Mutex
	events []hostEvent   // by Seq
	more   chan struct{} // closed and replaced on each event
}

const hostScript = `window.svcHost = (message) => {
	const seq = Number(sessionStorage.getItem("svcHostSeq") || 0) + 1;
	sessionStorage.setItem("svcHostSeq", String(seq));
	return window.svcHostRecord({ seq, message });
};`

func installHost(t *testing.T, ctx context.Context) *host {
	t.Helper()
	h := &host{more: make(chan struct{})}
	record := func(_ context.Context, call struct {
		Seq     int    `json:"seq"`
		Message string `json:"message"`
	}) (chromedp.Void, error) {
		e := hostEvent{Seq: call.Seq}
		if err := json.Unmarshal([]byte(call.Message), &e); err != nil {
			return chromedp.Void{}, err
		}
		h.mu.Lock()
		h.events = append(h.events, e)
		sort.Slice(h.events, func(i, j int) bool { return h.events[i].Seq < h.events[j].Seq })
		close(h.more)
		h.more = make(chan struct{})
		h.mu.Unlock()
		return chromedp.Void{}, nil
	}
	step(t, ctx, "install svcHost", chromedp.ExposeFunc("svcHostRecord", record),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: hostScript})
			return err
		}))
	return h
}

// wait waits until the n-th (from 1) event named name and every event before it have
// arrived, and decodes its data into data (when not nil).
func (h *host) wait(t *testing.T, name string, n int, data any) {
	t.Helper()
	e := h.await(t, name, n)
	if data != nil {
		if err := json.Unmarshal(e.Data, data); err != nil {
			t.Fatalf("host event %s data %s: %v", name, e.Data, err)
		}
	}
}

func (h *host) await(t *testing.T, name string, n int) hostEvent {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		seen := 0
		for i, e := range h.events {
			if e.Seq != i+1 {
				break // one before it is still on its way
			}
			if e.Event == name {
				if seen++; seen == n {
					h.mu.Unlock()
					return e
				}
			}
		}
		more := h.more
		h.mu.Unlock()
		select {
		case <-more:
		case <-deadline.C:
			t.Fatalf("host event %s #%d did not arrive; events: %s", name, n, h.names())
		}
	}
}

// names lists the events in the page's order.
func (h *host) names() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var names []string
	for _, e := range h.events {
		names = append(names, e.Event)
	}
	return strings.Join(names, " ")
}

// signInFirstSight opens a main-client link of an employee the service does not know,
// signs in with the instructor's password on the first-sight page, confirms the link and
// waits for the application's first view.
func signInFirstSight(t *testing.T, s *stack, ctx context.Context, payload map[string]any) {
	t.Helper()
	step(t, ctx, "open main link", chromedp.Navigate(s.linkURL(t, payload)), chromedp.WaitVisible(chromedp.ID("password")))
	linkAtFirstSight(t, ctx)
}

// linkAtFirstSight signs in with the instructor's password on the first-sight page the
// browser shows, confirms the link and waits for the application's first view.
func linkAtFirstSight(t *testing.T, ctx context.Context) {
	t.Helper()
	step(t, ctx, "sign in at first sight",
		chromedp.Clear(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), "instructor"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("link-confirm")))
	step(t, ctx, "confirm link", chromedp.Click(chromedp.ID("link-confirm")), chromedp.WaitVisible(chromedp.ID("view")))
}

// signInWithPassword signs in on the sign-in page, as an instructor without a link does.
func signInWithPassword(t *testing.T, s *stack, ctx context.Context) {
	t.Helper()
	step(t, ctx, "password sign-in", chromedp.Navigate(s.gateway.URL+"/app/signin"),
		chromedp.WaitVisible(chromedp.ID("password")),
		chromedp.SendKeys(chromedp.ID("login"), "instructor"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("view")))
}

// goLink opens a Go link for the contact and waits for the member's list of plans.
func goLink(t *testing.T, s *stack, ctx context.Context, contact map[string]any) {
	t.Helper()
	p := testpayload.Go()
	p["contact"] = contact
	openLink(t, ctx, s.linkURL(t, p), "member")
	waitView(t, ctx, "my-plans")
}

// queryOf returns the query parameter name of a page path.
func queryOf(t *testing.T, path, name string) string {
	t.Helper()
	u, err := url.Parse(path)
	if err != nil {
		t.Fatalf("page path %q: %v", path, err)
	}
	return u.Query().Get(name)
}
