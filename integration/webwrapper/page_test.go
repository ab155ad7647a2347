package webwrapper

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/partnergate/partnergate/internal/harness"
)

// debugAddr is the DevTools address Debug=True opens (the interface's LIM-3).
const debugAddr = "127.0.0.1:9223"

// page is the wrapper's window as the test reads it over the DevTools port.
type page struct {
	ctx context.Context
}

// shots counts each test's screenshots, for their order in the folder (a test may attach
// to several windows); the tests run one after another.
var shots = map[string]int{}

// attach connects to the wrapper's browser and returns its application window, the page
// target on the stack's origin. Leaving it detaches and keeps the window open.
func (w *wrapper) attach(t *testing.T) *page {
	t.Helper()
	return w.attachTo(t, w.d.stack.Gateway.URL+"/")
}

// attachTo is attach to the window whose page is on origin (a directory's login form for
// one that starts at AdfsUrl).
func (w *wrapper) attachTo(t *testing.T, origin string) *page {
	t.Helper()
	var id string
	poll(t, 60*time.Second, "the wrapper's window on "+origin, func() (bool, string) {
		select {
		case <-w.exited:
			t.Fatalf("the wrapper exited: %v\n%s", w.err, w.out.String())
		default:
		}
		res, err := http.Get("http://" + debugAddr + "/json/list")
		if err != nil {
			return false, err.Error()
		}
		defer res.Body.Close()
		var targets []struct{ ID, Type, URL string }
		if err := json.NewDecoder(res.Body).Decode(&targets); err != nil {
			return false, err.Error()
		}
		for _, x := range targets {
			if x.Type == "page" && strings.HasPrefix(x.URL, origin) {
				id = x.ID
				return true, ""
			}
		}
		return false, fmt.Sprintf("targets %+v", targets)
	})
	actx, cancelAlloc := remote.NewAllocator(context.Background(), "http://"+debugAddr)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithTargetID(target.ID(id)), chromedp.WithDetachOnCancel())
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run binds the attachment's life to its context: ctx, not a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("attaching to the wrapper's window: %v", err)
	}
	return &page{ctx: ctx}
}

// do runs actions with a time limit, failing the test with the step's name.
func (p *page) do(t *testing.T, name string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		p.screenshot(t, "failed-"+name)
		t.Fatalf("%s: %v (page %s)", name, err, p.location())
	}
}

// waitFor waits until the JavaScript expression is truthy in the page.
func (p *page) waitFor(t *testing.T, name, expr string) {
	t.Helper()
	p.do(t, name, chromedp.Poll[chromedp.Void]("!!("+expr+")", chromedp.WithPollingInterval(50*time.Millisecond)))
}

// eval evaluates expr (awaiting a Promise) and decodes its value.
func eval[T any](t *testing.T, p *page, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.screenshot(t, "failed-eval")
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// text is the trimmed text of the first element matching selector, "" without one.
func (p *page) text(t *testing.T, selector string) string {
	t.Helper()
	return strings.TrimSpace(eval[string](t, p, `(document.querySelector(`+jsString(selector)+`) || {textContent: ""}).textContent`))
}

func (p *page) location() string {
	c, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(c, chromedp.Location())
	return loc
}

// screenshot saves what the window shows to
// integration/artifacts/webwrapper/<test>-<nn>-<name>.png.
func (p *page) screenshot(t *testing.T, name string) {
	t.Helper()
	shots[t.Name()]++
	c, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	buf, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	harness.SaveArtifact(t, "webwrapper", fmt.Sprintf("%s-%02d-%s.png", strings.ReplaceAll(t.Name(), "/", "_"), shots[t.Name()], strings.ReplaceAll(name, " ", "-")), buf)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// signIn signs the instructor in on the sign-in page the window shows.
func (p *page) signIn(t *testing.T) {
	t.Helper()
	p.do(t, "password sign-in",
		chromedp.WaitVisible(chromedp.ID("password")),
		chromedp.SendKeys(chromedp.ID("login"), "instructor"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("view")))
	p.waitFor(t, "the first view", `document.querySelector("#view [data-testid]") && !document.getElementById("view").hasAttribute("aria-busy")`)
}
