package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/harness/browser"
	"github.com/partnergate/partnergate/internal/testpayload"
)

// Go on the phone (issue 36): Go installs as a web app, fits a phone of 360 px, and its
// service worker keeps the last plans seen readable offline, and nothing of a member after
// a sign-out or another member's sign-in.

// kariGo is the second member of these tests, a contact of the same clinic.
func kariGo() map[string]any {
	return map[string]any{"id": "c-31", "firstname": "Kari", "lastname": "Søndergaard", "email": "kari@example.org", "ssn": "20450115-1239"}
}

// plan is a plan the coach made for a member.
type plan struct {
	ID   int64
	Name string
}

// makePlans has the coach, signed in to the browser coach, open a main link of the clinic
// with contact in focus and make a plan from the template "Knee rehabilitation, week 1"
// under each name.
func makePlans(t *testing.T, s *stack, coach context.Context, first bool, contact map[string]any, names ...string) []plan {
	t.Helper()
	payload := mainPayload("emp-1001", contact["id"].(string), contact["firstname"].(string), contact["lastname"].(string), "1980-02-29")
	payload["contact"] = contact
	if first {
		signInFirstSight(t, s, coach, payload)
	} else {
		openLink(t, coach, s.linkURL(t, payload), "view")
	}
	waitView(t, coach, "person")
	var status struct {
		Person struct {
			ID int64 `json:"id"`
		} `json:"person"`
	}
	if a := api(t, coach, "GET", "/app/api/status", ""); a.Status != 200 || json.Unmarshal(a.Body, &status) != nil || status.Person.ID == 0 {
		t.Fatalf("status = %d %s, want the contact in focus", a.Status, a.Body)
	}
	var templates struct {
		Workouts []plan `json:"workouts"`
	}
	a := api(t, coach, "GET", "/app/api/workouts?template=true&q=Knee", "")
	json.Unmarshal(a.Body, &templates)
	tpl := int64(0)
	for _, w := range templates.Workouts {
		if w.Name == "Knee rehabilitation, week 1" {
			tpl = w.ID
		}
	}
	if tpl == 0 {
		t.Fatalf("no template Knee rehabilitation, week 1: %d %s", a.Status, a.Body)
	}
	var plans []plan
	for _, name := range names {
		body, _ := json.Marshal(map[string]any{"personId": status.Person.ID, "templateId": tpl, "title": name})
		a := api(t, coach, "POST", "/app/api/workouts", string(body))
		var p plan
		if a.Status != 201 || json.Unmarshal(a.Body, &p) != nil || p.ID == 0 {
			t.Fatalf("creating plan %q = %d %s", name, a.Status, a.Body)
		}
		plans = append(plans, p)
	}
	return plans
}

// phone starts a headless chromium that is a phone of 360×740 CSS pixels (twice as many
// device pixels, mobile, touch) set to lang.
func phone(t *testing.T, lang string) context.Context {
	t.Helper()
	ctx := browser.New(t, chromedp.WindowSize(360, 740), chromedp.Flag("lang", lang), chromedp.Flag("accept-lang", lang))
	step(t, ctx, "phone screen", chromedp.EmulateViewport(360, 740, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	return ctx
}

// fits fails the test when the page is wider than the phone: it scrolls sideways.
func fits(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	got := eval[struct {
		Scroll int `json:"scroll"`
		Inner  int `json:"inner"`
	}](t, ctx, `({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth })`)
	if got.Inner != 360 || got.Scroll > 360 {
		screenshot(t, ctx, "too-wide-"+what)
		t.Errorf("%s: the page is %d px wide in a window of %d, want it to fit 360", what, got.Scroll, got.Inner)
	}
}

// waitTrue waits until the JavaScript expression, which may be a Promise, is true: a poll,
// as waitFor's, for what only an asynchronous API answers (the caches).
func waitTrue(t *testing.T, ctx context.Context, name, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !eval[bool](t, ctx, `(async () => !!(`+expr+`))()`) {
		if time.Now().After(deadline) {
			screenshot(t, ctx, "failed-"+name)
			t.Fatalf("%s: not true after 30 s: %s", name, expr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keptOffline is the expression that Go's worker controls the page and keeps the Go shell,
// the list and each plan.
func keptOffline(plans []plan) string {
	var b strings.Builder
	b.WriteString(`navigator.serviceWorker.controller && await caches.match("/go") && await caches.match("/app/api/me/workouts")`)
	for _, p := range plans {
		b.WriteString(` && await caches.match("/app/api/workouts/` + strconv.FormatInt(p.ID, 10) + `")`)
	}
	return b.String()
}

// offline cuts the network of the page and of Go's service worker, and says so to the
// page (navigator.onLine), as a phone without signal; offline(false) gives it back. The
// worker is a target of its own, whose fetches the page's network conditions do not
// reach: its conditions are set in a DevTools session of its own (workerOf).
func offline(t *testing.T, ctx context.Context, off bool) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conditions := network.EmulateNetworkConditionsByRuleParams{
		EmulateOfflineServiceWorker: &off,
		MatchedNetworkConditions:    []*network.Conditions{{Offline: off, DownloadThroughput: -1, UploadThroughput: -1}},
	}
	for _, target := range []context.Context{ctx, workerOf(t, ctx)} {
		if _, err := chromedp.Call(target, network.Enable, network.EnableParams{}); err != nil {
			t.Fatalf("network: %v", err)
		}
		if _, err := chromedp.Call(target, network.EmulateNetworkConditionsByRule, conditions); err != nil {
			t.Fatalf("network conditions: %v", err)
		}
	}
	if _, err := chromedp.Call(c, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: off, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
		t.Fatalf("network state: %v", err)
	}
}

// workers are the DevTools sessions of Go's service worker, by the tab's context.
var workers sync.Map

// workerOf is a DevTools session of the service worker /go/sw.js of ctx's browser, the
// same one every time (network conditions belong to the session that set them).
func workerOf(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	if w, ok := workers.Load(ctx); ok {
		return w.(context.Context)
	}
	targets, err := chromedp.Targets(ctx)
	if err != nil {
		t.Fatalf("targets: %v", err)
	}
	for _, info := range targets {
		if info.Type == "service_worker" && strings.HasSuffix(info.URL, "/go/sw.js") {
			w, _ := chromedp.NewContext(ctx, chromedp.WithTargetID(info.TargetID))
			workers.Store(ctx, w)
			t.Cleanup(func() { workers.Delete(ctx) })
			return w
		}
	}
	t.Fatalf("no service worker /go/sw.js runs in the browser")
	return nil
}

// openGo opens contact's Go link in a browser that may be signed in as another member:
// Continue when asked, switch when asked; it waits for the list of plans.
func openGo(t *testing.T, s *stack, ctx context.Context, contact map[string]any) {
	t.Helper()
	p := testpayload.Go()
	p["contact"] = contact
	step(t, ctx, "open Go link", chromedp.Navigate(s.linkURL(t, p)))
	waitFor(t, ctx, "the plans or a question", `document.getElementById("ask-continue") || document.getElementById("switch-confirm") || document.getElementById("member")`)
	for _, id := range []string{"ask-continue", "switch-confirm"} {
		if eval[bool](t, ctx, `!!document.getElementById(`+strconv.Quote(id)+`)`) {
			step(t, ctx, id, chromedp.Click(chromedp.ID(id)))
		}
	}
	waitView(t, ctx, "my-plans")
}

// installable checks that Chromium finds Go installable (no installability errors) and
// reads its manifest in lang.
func installable(t *testing.T, ctx context.Context, lang string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := chromedp.Call(c, page.GetInstallabilityErrors, cdp.Empty{})
	if err != nil {
		t.Fatalf("installability: %v", err)
	}
	for _, e := range res.InstallabilityErrors {
		var args []string
		for _, a := range e.ErrorArguments {
			args = append(args, a.Name+"="+a.Value)
		}
		t.Errorf("Chromium finds Go not installable: %s %v", e.ErrorID, args)
	}
	m, err := chromedp.Call(c, page.GetAppManifest, page.GetAppManifestParams{})
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	var got struct {
		Name      string `json:"name"`
		ShortName string `json:"short_name"`
		StartURL  string `json:"start_url"`
		Display   string `json:"display"`
	}
	if err := json.Unmarshal([]byte(m.Data), &got); err != nil || len(m.Errors) > 0 {
		t.Fatalf("manifest %s: %v %+v", m.URL, err, m.Errors)
	}
	if got.Name != i18n.T(lang, "go.app_name") || got.ShortName != "Go" || got.StartURL != "/go" || got.Display != "standalone" {
		t.Errorf("manifest in %s = %+v, want Go named %q", lang, got, i18n.T(lang, "go.app_name"))
	}
}

// TestGoOnThePhone: in every language, Go's start page and a member's Go on a phone of
// 360 px show the plans and a plan without sideways scrolling, Chromium finds it installable with a manifest in
// that language, and after the network is gone a reload still shows the plan, the list and
// a plan the member never opened, saying that Go is offline.
func TestGoOnThePhone(t *testing.T) {
	s := startStack(t)
	coach := newBrowser(t)
	plans := makePlans(t, s, coach, true, zoe(), "Zoë's knee plan", "Zoë's balance plan")
	for _, lang := range i18n.Languages {
		t.Run(lang, func(t *testing.T) {
			ctx := phone(t, lang)
			// Go's start page without a session, as the home screen opens it.
			step(t, ctx, "start page", chromedp.Navigate(s.gateway.URL+"/go"), chromedp.WaitVisible(chromedp.ID("session-ended")))
			fits(t, ctx, "start page")
			screenshot(t, ctx, "0-start-"+lang)
			installable(t, ctx, lang)
			goLink(t, s, ctx, zoe())
			if got := eval[string](t, ctx, `document.documentElement.lang`); got != lang {
				t.Errorf("Go's page is in %q, want %q", got, lang)
			}
			if got := textOf(t, ctx, `[data-testid="nav-plans"]`); got != i18n.T(lang, "nav.plans") {
				t.Errorf("navigation = %q, want %q", got, i18n.T(lang, "nav.plans"))
			}
			if n := count(t, ctx, `[data-testid="my-plan"]`); n != len(plans) {
				t.Errorf("the list shows %d plans, want %d", n, len(plans))
			}
			fits(t, ctx, "plans")
			screenshot(t, ctx, "1-plans-"+lang)
			installable(t, ctx, lang)

			open := `/go/workouts/` + strconv.FormatInt(plans[0].ID, 10)
			step(t, ctx, "open plan", chromedp.Click(chromedp.CSS(`[data-testid="my-plan"][data-id="`+strconv.FormatInt(plans[0].ID, 10)+`"] .workout-link`)))
			waitView(t, ctx, "workout")
			if got := pagePath(t, ctx); got != open {
				t.Errorf("the plan opened at %s, want %s", got, open)
			}
			fits(t, ctx, "plan")
			screenshot(t, ctx, "2-plan-"+lang)
			waitTrue(t, ctx, "kept for offline", keptOffline(plans))

			offline(t, ctx, true)
			step(t, ctx, "offline reload", chromedp.Reload())
			waitView(t, ctx, "workout")
			if got := textOf(t, ctx, "#workout-title"); got != plans[0].Name {
				t.Errorf("offline the plan shows %q, want %q", got, plans[0].Name)
			}
			if n := count(t, ctx, `[data-testid="plan-exercise"]`); n < 4 {
				t.Errorf("offline the plan shows %d exercises, want the template's 4 or more", n)
			}
			step(t, ctx, "offline notice", chromedp.WaitVisible(chromedp.ID("notice")))
			if got := textOf(t, ctx, "#notice-text"); got != i18n.T(lang, "go.offline") {
				t.Errorf("offline notice = %q, want %q", got, i18n.T(lang, "go.offline"))
			}
			fits(t, ctx, "offline plan")
			screenshot(t, ctx, "3-offline-plan-"+lang)

			step(t, ctx, "offline to the list", chromedp.Click(chromedp.ID("member-plan-back")))
			waitView(t, ctx, "my-plans")
			step(t, ctx, "offline start page", chromedp.Reload())
			waitView(t, ctx, "my-plans")
			if n := count(t, ctx, `[data-testid="my-plan"]`); n != len(plans) {
				t.Errorf("offline the list shows %d plans, want %d", n, len(plans))
			}
			screenshot(t, ctx, "4-offline-plans-"+lang)
			// The other plan was never opened: the worker kept it when the list came.
			step(t, ctx, "offline other plan", chromedp.Click(chromedp.CSS(`[data-testid="my-plan"][data-id="`+strconv.FormatInt(plans[1].ID, 10)+`"] .workout-link`)))
			waitView(t, ctx, "workout")
			if got := textOf(t, ctx, "#workout-title"); got != plans[1].Name {
				t.Errorf("offline the plan never opened shows %q, want %q", got, plans[1].Name)
			}
			offline(t, ctx, false)
		})
	}
}

// memberCaches are the names of the caches Go's worker keeps a member's answers in.
func memberCaches(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `caches.keys().then((names) => names.filter((n) => n.startsWith("go-member-")))`)
}

// seesNothingOf fails the test when the page shows any of the member's texts.
func seesNothingOf(t *testing.T, ctx context.Context, what string, texts ...string) {
	t.Helper()
	shown := eval[string](t, ctx, `document.body ? document.body.innerText : ""`)
	for _, s := range texts {
		if strings.Contains(shown, s) {
			t.Errorf("%s: the page shows %q", what, s)
		}
	}
}

// TestGoOfflineKeepsOneMember: what Go keeps offline is the plans as the member last saw
// them (a change made since does not show offline), and never another member's: after a
// sign-out the browser keeps nothing of the member, offline shows nothing, and after
// another member's sign-in offline shows that member's plans only, also when the first
// signs in again without a sign-out in between.
func TestGoOfflineKeepsOneMember(t *testing.T) {
	s := startStack(t)
	coach := newBrowser(t)
	zoePlans := makePlans(t, s, coach, true, zoe(), "Zoë's knee plan")
	kariPlans := makePlans(t, s, coach, false, kariGo(), "Kari's shoulder plan")
	zoeTexts := []string{"Zoë", "Þórsdóttir", zoePlans[0].Name}
	kariTexts := []string{"Kari", "Søndergaard", kariPlans[0].Name}

	ctx := phone(t, "en")
	goLink(t, s, ctx, zoe())
	waitTrue(t, ctx, "Zoë's plans kept", keptOffline(zoePlans))

	// The coach empties the plan; offline, the member still reads it as she saw it.
	a := api(t, coach, "PUT", "/app/api/workouts/"+strconv.FormatInt(zoePlans[0].ID, 10), `{"title":"Emptied","notes":"","items":[]}`)
	if a.Status != 200 {
		t.Fatalf("emptying the plan = %d %s", a.Status, a.Body)
	}
	offline(t, ctx, true)
	step(t, ctx, "offline plan", chromedp.Navigate(s.gateway.URL+"/go/workouts/"+strconv.FormatInt(zoePlans[0].ID, 10)))
	waitView(t, ctx, "workout")
	if got, n := textOf(t, ctx, "#workout-title"), count(t, ctx, `[data-testid="plan-exercise"]`); got != zoePlans[0].Name || n < 4 {
		t.Errorf("offline the plan shows %q with %d exercises, want %q as last seen", got, n, zoePlans[0].Name)
	}
	offline(t, ctx, false)
	step(t, ctx, "online plan", chromedp.Reload())
	waitFor(t, ctx, "the emptied plan", `document.getElementById("workout-title")?.textContent === "Emptied"`)

	// Sign-out: nothing of Zoë is kept, and offline Go shows nothing.
	step(t, ctx, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signed-out")))
	if kept := eval[[]string](t, ctx, `caches.keys()`); len(kept) != 0 {
		t.Errorf("after sign-out the browser keeps the caches %q", kept)
	}
	offline(t, ctx, true)
	_ = chromedp.Do(ctx, chromedp.Navigate(s.gateway.URL+"/go")) // fails: nothing to show
	seesNothingOf(t, ctx, "offline after sign-out", zoeTexts...)
	if n := count(t, ctx, "#my-plans, #member"); n != 0 {
		t.Errorf("offline after sign-out Go shows %d parts of the member's page", n)
	}
	screenshot(t, ctx, "1-offline-after-signout")
	offline(t, ctx, false)

	// Kari signs in on the same phone: offline shows her plans, nothing of Zoë's.
	goLink(t, s, ctx, kariGo())
	waitTrue(t, ctx, "Kari's plans kept", keptOffline(kariPlans))
	kariCaches := memberCaches(t, ctx)
	offline(t, ctx, true)
	step(t, ctx, "offline reload as Kari", chromedp.Reload())
	waitView(t, ctx, "my-plans")
	if got := textOf(t, ctx, `[data-testid="my-plan"] .workout-link`); got != kariPlans[0].Name {
		t.Errorf("offline Kari's list shows %q, want %q", got, kariPlans[0].Name)
	}
	seesNothingOf(t, ctx, "offline as Kari", zoeTexts...)
	step(t, ctx, "Zoë's plan offline as Kari", chromedp.Navigate(s.gateway.URL+"/go/workouts/"+strconv.FormatInt(zoePlans[0].ID, 10)))
	waitFor(t, ctx, "Zoë's plan not shown", `document.getElementById("view") && !document.getElementById("view").hasAttribute("aria-busy") && !document.getElementById("loading")`)
	seesNothingOf(t, ctx, "Zoë's plan offline as Kari", zoeTexts...)
	screenshot(t, ctx, "2-offline-as-kari")
	offline(t, ctx, false)

	// Zoë's link again, without a sign-out: the worker drops Kari's answers at the first
	// answer of Zoë's session.
	openGo(t, s, ctx, zoe())
	waitTrue(t, ctx, "Zoë's plans kept again", keptOffline(zoePlans)+` && !(await caches.match("/app/api/workouts/`+strconv.FormatInt(kariPlans[0].ID, 10)+`"))`)
	if zoeCaches := memberCaches(t, ctx); len(kariCaches) != 1 || len(zoeCaches) != 1 || zoeCaches[0] == kariCaches[0] {
		t.Errorf("the member caches were %q as Kari and are %q as Zoë, want one each, not the same", kariCaches, zoeCaches)
	}
	offline(t, ctx, true)
	step(t, ctx, "offline reload as Zoë", chromedp.Reload())
	waitView(t, ctx, "my-plans")
	seesNothingOf(t, ctx, "offline as Zoë after Kari", kariTexts...)
	screenshot(t, ctx, "3-offline-as-zoe")
}
