package webwrapper

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/site"
)

// userConfig is the session's user.config, the one file of that name under the config
// folder.
func (d *desktop) userConfig(t *testing.T) *config.Config {
	t.Helper()
	var found []string
	filepath.WalkDir(filepath.Join(filepath.Dir(d.home), "config"), func(path string, e os.DirEntry, err error) error {
		if err == nil && e.Name() == "user.config" {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("user.config files under the config folder: %q, want one", found)
	}
	c, err := config.Load(d.exe+".config", found[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bounds is the window's position and size as the page sees them, and its zoom.
type bounds struct{ Left, Top, Width, Height int }

// near reports whether b is within a few pixels of c: the window manager's frame moves
// and grows a window by a pixel or two.
func (b bounds) near(c bounds) bool {
	for _, d := range []int{b.Left - c.Left, b.Top - c.Top, b.Width - c.Width, b.Height - c.Height} {
		if d > 4 || d < -4 {
			return false
		}
	}
	return true
}

func (p *page) bounds(t *testing.T) (bounds, float64) {
	t.Helper()
	v := eval[struct {
		Left, Top, Width, Height int
		Ratio                    float64
	}](t, p, `({Left: screenX, Top: screenY, Width: outerWidth, Height: outerHeight, Ratio: devicePixelRatio})`)
	return bounds{v.Left, v.Top, v.Width, v.Height}, v.Ratio
}

// TestGeometryAndZoom: the window opens where the settings say, with their zoom; moved and
// resized by the person, it is saved at exit and opens there at the next start.
func TestGeometryAndZoom(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, map[string]string{"Left": "40", "Top": "30", "Width": "900", "Height": "700", "ZoomFactor": "1.25"})
	w := d.start(t)
	p := w.attach(t)
	p.do(t, "sign-in page", chromedp.WaitVisible(chromedp.ID("password")))
	d.waitWindow(t, "normal")
	b, zoom := p.bounds(t)
	if !b.near(bounds{40, 30, 900, 700}) || zoom != 1.25 {
		t.Errorf("window at start = %+v zoom %v, want 900x700 zoom 1.25 (the settings)", b, zoom)
	}
	p.screenshot(t, "start")

	// The person moves and resizes the window.
	c, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	win, err := chromedp.CallBrowser(c, browser.GetWindowForTarget, browser.GetWindowForTargetParams{TargetID: chromedp.FromContext(p.ctx).Target.TargetID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(c, browser.SetWindowBounds, browser.SetWindowBoundsParams{
		WindowID: win.WindowID, Bounds: &browser.Bounds{Left: new(int64(120)), Top: new(int64(90)), Width: 1000, Height: 760},
	}); err != nil {
		t.Fatal(err)
	}
	var moved bounds
	poll(t, 10*time.Second, "the window moved", func() (bool, string) {
		moved, _ = p.bounds(t)
		return moved.near(bounds{120, 90, 1000, 760}), fmt.Sprintf("%+v", moved)
	})
	w.close(t)

	u := d.userConfig(t)
	for name, want := range map[string]int{"Left": moved.Left, "Top": moved.Top, "Width": moved.Width, "Height": moved.Height} {
		if got, ok := u.Int(name); !ok || got-want > 4 || want-got > 4 {
			t.Errorf("user.config %s = %d (%v), want %d", name, got, ok, want)
		}
	}
	if got := u.Zoom(); got != 1.25 {
		t.Errorf("user.config zoom = %v, want 1.25", got)
	}

	w = d.start(t)
	p = w.attach(t)
	p.do(t, "sign-in page", chromedp.WaitVisible(chromedp.ID("password")))
	again, zoom := p.bounds(t)
	if !again.near(moved) || zoom != 1.25 {
		t.Errorf("window at the next start = %+v zoom %v, want %+v zoom 1.25 (where it was left)", again, zoom, moved)
	}
	p.screenshot(t, "restored")
	w.close(t)
}

// TestUpdateNotice: issue 35. The wrapper checks its update site, the deployment's own:
// the site the build makes (webwrapper/site) served by Caddyfile.example's own route in a
// real Caddy, named by the UpdateSite setting. A wrapper older than the site's build shows
// the newer version's download link in the page's notice banner; the same wrapper against
// a site of its own version (the newest) shows none.
func TestUpdateNotice(t *testing.T) {
	s := startStack(t)
	dir := t.TempDir()
	siteURL := serveSite(t, dir)
	publish(t, dir, "2.1.5.9")
	settings := map[string]string{"CheckForUpdates": "True", "UpdateSite": siteURL, "Culture": "de-DE"}

	d := newDesktop(t, s, settings)
	w, p := signedIn(t, d)
	p.waitFor(t, "the update notice", `document.getElementById("notice-link") && !document.getElementById("notice").hidden`)
	if got, want := p.text(t, "#notice-text"), i18n.T("de", "webwrapper.update_notice", "version", "2.1.5.9"); got != want {
		t.Errorf("the notice says %q, want %q: the new version, in the window's German", got, want)
	}
	if got := eval[string](t, p, `document.getElementById("notice-link").href`); got != siteURL+"SvcWebwrapper-2.1.5.9.msi" {
		t.Errorf("the notice links %q, want the site's installer %s", got, siteURL+"SvcWebwrapper-2.1.5.9.msi")
	}
	p.screenshot(t, "update-notice")
	current := strings.TrimSpace(string(w.call(t, "version", nil)))
	w.close(t)

	// The site's newest build is this wrapper's own version: nothing to offer.
	publish(t, dir, current)
	d = newDesktop(t, s, settings)
	w, p = signedIn(t, d)
	poll(t, 60*time.Second, "the update check's answer", func() (bool, string) {
		return strings.Contains(w.out.String(), `msg="update check" offered=`+current+` newer=false`), w.out.String()
	})
	if shown := eval[bool](t, p, `!document.getElementById("notice").hidden`); shown {
		t.Errorf("the notice banner shows %q, want none for the newest version", p.text(t, "#notice"))
	}
	p.screenshot(t, "no-update-notice")
	w.close(t)
}

// publish makes the site of a build of version in dir, as scripts/build-windows.sh does
// (the installer a stand-in: the wrapper only links to it).
func publish(t *testing.T, dir, version string) {
	t.Helper()
	msi := filepath.Join(t.TempDir(), "built.msi")
	if err := os.WriteFile(msi, []byte("installer "+version), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := site.Write(dir, msi, version); err != nil {
		t.Fatal(err)
	}
}

// serveSite serves dir as the desktop wrapper's site with Caddyfile.example's own route,
// cut from the file, in a Caddy of its own, and returns the site's address.
func serveSite(t *testing.T, dir string) string {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "\tredir /webwrapper /webwrapper/ 308\n")
	block := strings.Index(text, "\thandle_path /webwrapper/* {\n")
	if start < 0 || block < start {
		t.Fatal("Caddyfile.example has no webwrapper site route (redir, then handle_path /webwrapper/*): update this test with it")
	}
	end := block + strings.Index(text[block:], "\n\t}\n") + len("\n\t}\n")
	route := strings.ReplaceAll(text[start:end], "{$PARTNERGATE_DEMO_DATA:./data}/webwrapper", "{{.Vars.site}}")
	c := harness.StartCaddy(t, harness.Config{
		Caddyfile: "{\n\tadmin {{.Admin}}\n}\nhttp://127.0.0.1:{{.Port}} {\n" + route + "}\n",
		Vars:      map[string]string{"site": dir},
	})
	return c.URL + "/webwrapper/"
}

// TestCaseExport: the first start brings a contact and a case before anyone has signed
// in; the commands wait for the sign-in, then the window shows the person and the case.
// A plan exported from the window is archived under that case, and its PDF reads back
// with the plan and the person.
func TestCaseExport(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext is missing: apt-get install -y poppler-utils (scripts/test-deps.sh does)")
	}
	s := startStack(t)
	d := newDesktop(t, s, nil)
	w := d.start(t, arguments, "id=7001", "firstname=Nora", "lastname=Lie", "dateofbirth=1999-09-09", "caseid=case-77")
	p := w.attach(t)
	p.signIn(t)
	p.waitFor(t, "Nora and case-77", `(document.getElementById("contact-name") || {}).textContent === "Nora Lie" && (document.getElementById("case") || {}).textContent === "case-77"
		&& document.getElementById("new-plan-template")`)
	p.screenshot(t, "person-and-case")

	plan := eval[struct {
		ID int64 `json:"id"`
	}](t, p, `(() => {
	const o = [...document.getElementById("new-plan-template").options].find((o) => o.text === "Knee rehabilitation, week 1");
	return svcApp.createWorkout({title: "Nora's knee plan", templateId: Number(o.value)});
})()`)
	w.call(t, "openworkout", map[string]any{"id": plan.ID})
	p.waitFor(t, "the plan's export form", `document.getElementById("export-button") && document.getElementById("export-case-id") && !document.getElementById("view").hasAttribute("aria-busy")`)
	if got := eval[string](t, p, `document.getElementById("export-case-id").value`); got != "case-77" {
		t.Errorf("export case field = %q, want case-77 from the arguments", got)
	}
	p.do(t, "export", chromedp.Click(chromedp.ID("export-button")))
	p.waitFor(t, "exported", `document.getElementById("export-done") && document.querySelector('#case-exports [data-testid="case-export"]')`)
	p.screenshot(t, "exported")

	pdf := eval[struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}](t, p, `(async () => {
	const a = document.querySelector('#case-exports [data-testid="case-export"] a.export-link');
	const r = await fetch(a.href, { credentials: "same-origin" });
	const bytes = new Uint8Array(await r.arrayBuffer());
	let s = "";
	for (const b of bytes) s += String.fromCharCode(b);
	return { status: r.status, body: btoa(s) };
})()`)
	body, err := base64.StdEncoding.DecodeString(pdf.Body)
	if err != nil || pdf.Status != 200 || !bytes.HasPrefix(body, []byte("%PDF")) {
		t.Fatalf("the case's PDF = %d, %d bytes, %v; want a PDF", pdf.Status, len(body), err)
	}
	cmd := exec.Command("pdftotext", "-", "-")
	cmd.Stdin = bytes.NewReader(body)
	text, err := cmd.Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	for _, want := range []string{"Nora's knee plan", "Nora Lie", "case-77"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the PDF's text lacks %q:\n%s", want, text)
		}
	}
	w.close(t)
}

// closeWindow closes the wrapper's window as the person does, from the DevTools port:
// its last window closed, the browser ends.
func (w *wrapper) closeWindow(t *testing.T, p *page) {
	t.Helper()
	id := chromedp.FromContext(p.ctx).Target.TargetID
	res, err := http.Get("http://" + debugAddr + "/json/close/" + string(id))
	if err != nil {
		t.Fatalf("closing the window: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("closing the window: %s", res.Status)
	}
}

// pageShown is true once the window shows the sign-in form or an application view.
const pageShown = `document.getElementById("password") || (document.querySelector("#view [data-testid]") && !document.getElementById("view").hasAttribute("aria-busy"))`

// TestMinimizeOnExit: with MinimizeOnExit, closing the window while signed in keeps the
// program running with its pipe; show brings the window back, still signed in.
func TestMinimizeOnExit(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, map[string]string{"MinimizeOnExit": "True"})
	w, p := signedIn(t, d, arguments, `signon=CLINIC\asa`)
	w.call(t, "selectperson", map[string]any{"userid": 0, "customid": "8001", "firstname": "Siri", "lastname": "Berg"})
	p.waitFor(t, "Siri in focus", `(document.getElementById("contact-name") || {}).textContent === "Siri Berg"`)
	p.screenshot(t, "before-close")

	w.closeWindow(t, p)
	d.waitWindow(t, "none")
	if v := string(w.call(t, "version", nil)); !fourPart.MatchString(v) {
		t.Errorf("version with the window closed = %q, want the version: the program keeps running", v)
	}
	select {
	case <-w.exited:
		t.Fatalf("the wrapper exited when its window closed: %v\n%s", w.err, w.out.String())
	default:
	}

	w.call(t, "show", nil)
	d.waitWindow(t, "normal")
	p = w.attach(t)
	p.waitFor(t, "a page after show", pageShown)
	p.screenshot(t, "after-show")
	if eval[bool](t, p, `!!document.getElementById("password")`) {
		w.close(t)
		t.Fatal("the window shown again asks for the password: the kept session was not restored")
	}
	var siri []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "8001"}, &siri)
	if len(siri) != 1 {
		t.Errorf("getlistofusers after show = %+v, want Siri", siri)
	}
	w.close(t)
}

// TestSignOnRestart: the program's user signed in once; the next start with the same
// signon is signed in without the password, and a start with another signon asks. close,
// as the original's, signs out and forgets the link: the start after it asks again.
func TestSignOnRestart(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, nil)
	w, p := signedIn(t, d, arguments, `signon=CLINIC\asa`)
	p.screenshot(t, "first-sign-in")
	w.end(t)

	// Another external user on the same computer is asked to sign in.
	w = d.start(t, arguments, `signon=CLINIC\bo`)
	p = w.attach(t)
	p.waitFor(t, "a page at the start as another user", pageShown)
	p.screenshot(t, "another-signon")
	if !eval[bool](t, p, `!!document.getElementById("password")`) {
		t.Errorf("a start with another signon is signed in as %q, want the sign-in page", p.text(t, "#account"))
	}
	w.end(t)

	w = d.start(t, arguments, `signon=clinic\ASA`)
	p = w.attach(t)
	p.waitFor(t, "a page at the restart", pageShown)
	p.screenshot(t, "restart")
	if eval[bool](t, p, `!!document.getElementById("password")`) {
		w.close(t)
		t.Fatal("the restart with the same signon asks for the password: the kept session was not restored")
	}
	if got := p.text(t, "#account"); got != "Coach Carter" {
		t.Errorf("signed in as %q, want Coach Carter", got)
	}
	var nobody []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "none"}, &nobody)
	w.close(t)

	w = d.start(t, arguments, `signon=CLINIC\asa`)
	p = w.attach(t)
	p.waitFor(t, "a page after close", pageShown)
	p.screenshot(t, "after-close")
	if !eval[bool](t, p, `!!document.getElementById("password")`) {
		t.Errorf("the start after close is signed in as %q, want the sign-in page (close signs out)", p.text(t, "#account"))
	}
	w.end(t)
}

// TestCloseWindowEnds: without MinimizeOnExit, closing the window ends the program as close
// does: exit 0, the pipe gone, the lock free, the window's place saved.
func TestCloseWindowEnds(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, nil)
	w, p := signedIn(t, d)
	p.screenshot(t, "before-close")
	w.closeWindow(t, p)
	if code := w.waitExit(t, 30*time.Second); code != 0 {
		t.Errorf("after its window closed the wrapper exited with status %d, want 0", code)
	}
	if _, err := os.Stat(w.pipePath()); !os.IsNotExist(err) {
		t.Errorf("after the window closed the pipe %s is still there (%v)", w.pipePath(), err)
	}
	if !d.lockFree(t) {
		t.Error("after the window closed the instance lock is still held")
	}
	if width, ok := d.userConfig(t).Int("Width"); !ok || width < 1096 || width > 1104 {
		t.Errorf("user.config Width = %d (%v), want the window's 1100", width, ok)
	}
}
