package webwrapper

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"

	"github.com/partnergate/partnergate/i18n"
)

// close ends the wrapper over the pipe and waits for it to exit 0.
func (w *wrapper) close(t *testing.T) {
	t.Helper()
	w.call(t, "close", nil)
	if code := w.waitExit(t, 30*time.Second); code != 0 {
		t.Errorf("after close the wrapper exited with status %d, want 0", code)
	}
}

// end ends the wrapper as the operating system does when the user logs off (SIGTERM): the
// program saves and exits 0, and, unlike close, keeps the sign-on.
func (w *wrapper) end(t *testing.T) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(t, 30*time.Second); code != 0 {
		t.Errorf("after SIGTERM the wrapper exited with status %d, want 0", code)
	}
}

// signedIn starts the wrapper with args, signs the instructor in on its window and
// waits until the page has a view.
func signedIn(t *testing.T, d *desktop, args ...string) (*wrapper, *page) {
	t.Helper()
	w := d.start(t, args...)
	p := w.attach(t)
	p.signIn(t)
	return w, p
}

// TestSecondStart: while the wrapper runs, the desktop program starts it again with a
// contact, an exercise search and a case; the second process hands them over and exits 0,
// and the FIRST window shows the person in focus, the case and the search. Two of the
// three contact parameters select nobody, and the rest still runs.
func TestSecondStart(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, nil)
	w, p := signedIn(t, d, arguments, `signon=CLINIC\asa`)
	p.screenshot(t, "signed-in")

	code, out := d.second(t, arguments, `signon=CLINIC\asa`, "id=3003", "firstname=Cleo", "lastname=Lund Ås",
		"dateofbirth=1960-03-04", "queryexercises=plank", "caseid=case-42")
	if code != 0 {
		t.Fatalf("the second start exited %d, want 0:\n%s", code, out)
	}
	p.waitFor(t, "Cleo in focus, case-42, the plank search",
		`(document.getElementById("contact-name") || {}).textContent === "Cleo Lund Ås" && (document.getElementById("case") || {}).textContent === "case-42"
		 && location.search === "?q=plank" && document.querySelector('#view [data-testid="exercises"]') && !document.getElementById("view").hasAttribute("aria-busy")`)
	if got := p.text(t, "#contact-birthdate"); got != "1960-03-04" {
		t.Errorf("the focus bar's birthdate = %q, want 1960-03-04", got)
	}
	if n := eval[int](t, p, `document.querySelectorAll('[data-testid="exercise-result"]').length`); n == 0 {
		t.Error("the plank search shows no exercise")
	}
	p.screenshot(t, "second-start")
	var cleo []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "3003"}, &cleo)
	if len(cleo) != 1 || cleo[0].Firstname != "Cleo" {
		t.Errorf("getlistofusers customid=3003 = %+v, want Cleo, created by the second start", cleo)
	}

	// id and firstname without lastname: nobody is selected or created; the search runs.
	code, out = d.second(t, arguments, "id=4004", "firstname=Dag", "queryexercises=squat")
	if code != 0 {
		t.Fatalf("the second start with two of three contact parameters exited %d, want 0:\n%s", code, out)
	}
	p.waitFor(t, "the squat search", `location.search === "?q=squat" && document.querySelector('#view [data-testid="exercises"]') && !document.getElementById("view").hasAttribute("aria-busy")`)
	if got := p.text(t, "#contact-name"); got != "Cleo Lund Ås" {
		t.Errorf("after two of three contact parameters the focus bar shows %q, want Cleo still", got)
	}
	var dag []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "4004"}, &dag)
	if len(dag) != 0 {
		t.Errorf("getlistofusers customid=4004 = %+v, want nobody", dag)
	}
	p.screenshot(t, "two-of-three")
	w.close(t)
	d.checkNoPersonalData(t, w, "Cleo", "Lund Ås", "1960-03-04", "Dag")
}

// writeLatin1 writes text to path in ISO-8859-1.
func writeLatin1(t *testing.T, path, text string) {
	t.Helper()
	b, err := charmap.ISO8859_1.NewEncoder().String(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

func inputXML(attrs, customNo, first, last, born string) string {
	x := `<?xml version="1.0" encoding="ISO-8859-1"?>
<exorinput ` + attrs + `>
  <source_customerno>` + customNo + `</source_customerno>
  <firstname>` + first + `</firstname>
  <lastname>` + last + `</lastname>
`
	if born != "" {
		x += "  <born>" + born + "</born>\n"
	}
	return x + "</exorinput>\n"
}

// TestInputXML: the desktop program writes input.xml in ISO-8859-1 and starts the wrapper
// with its path (relative to its own folder) while the wrapper runs: the first window
// shows the person and the exercise search, and the file is deleted; with delete="false"
// it is kept; without born nothing runs and the file is kept.
func TestInputXML(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, nil)
	d.notifications(t)
	w, p := signedIn(t, d)

	file := filepath.Join(d.home, "export", "input.xml")
	writeLatin1(t, file, inputXML(`exercisequery="knee"`, "5005", "Åsa", "Ørnø", "1950-07-01"))
	if code, out := d.second(t, filepath.Join("export", "input.xml")); code != 0 {
		t.Fatalf("the second start with input.xml exited %d, want 0:\n%s", code, out)
	}
	p.waitFor(t, "Åsa in focus, the knee search",
		`(document.getElementById("contact-name") || {}).textContent === "Åsa Ørnø" && location.search === "?q=knee" && document.querySelector('#view [data-testid="exercises"]')`)
	poll(t, 10*time.Second, "input.xml deleted", func() (bool, string) {
		_, err := os.Stat(file)
		return os.IsNotExist(err), "the file is still there"
	})
	p.screenshot(t, "input-xml")

	kept := filepath.Join(d.home, "export", "kept.xml")
	writeLatin1(t, kept, inputXML(`delete="false"`, "5006", "Åke", "Öberg", "1961-02-03"))
	if code, out := d.second(t, kept); code != 0 {
		t.Fatalf("the second start with delete=false exited %d, want 0:\n%s", code, out)
	}
	p.waitFor(t, "Åke in focus", `(document.getElementById("contact-name") || {}).textContent === "Åke Öberg"`)
	p.screenshot(t, "input-xml-kept")

	// Without born nothing runs and the file stays; the valid file after it shows that
	// the wrapper has read it (one queue, in order).
	bad := filepath.Join(d.home, "export", "noborn.xml")
	writeLatin1(t, bad, inputXML(`delete="true"`, "5007", "Ivar", "Ås", ""))
	if code, out := d.second(t, bad); code != 0 {
		t.Fatalf("the second start with a file without born exited %d, want 0:\n%s", code, out)
	}
	next := filepath.Join(d.home, "export", "next.xml")
	writeLatin1(t, next, inputXML(``, "5008", "Eir", "Ødegård", "1990-12-31"))
	if code, out := d.second(t, next); code != 0 {
		t.Fatalf("the second start with the next file exited %d, want 0:\n%s", code, out)
	}
	p.waitFor(t, "Eir in focus", `(document.getElementById("contact-name") || {}).textContent === "Eir Ødegård"`)
	for _, f := range []string{kept, bad} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v, want the file kept", filepath.Base(f), err)
		}
	}
	var ivar []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "5007"}, &ivar)
	if len(ivar) != 0 {
		t.Errorf("getlistofusers customid=5007 = %+v, want nobody: the file without born runs nothing", ivar)
	}
	// The person is told, once (the good files tell nothing): the file kept, what to do,
	// the reason, and none of its values.
	n := d.shown(t, 1)[0]
	if want := i18n.T("en", "webwrapper.alert.refused_xml", "file", bad); !strings.HasPrefix(n.Body, want) || !strings.Contains(n.Body, "born") {
		t.Errorf("the desktop showed\n%s\nwant first\n%s\nand the reason (born)", n.Body, want)
	}
	for _, v := range []string{"5007", "Ivar", "Ås"} {
		if strings.Contains(n.Body, v) {
			t.Errorf("the notification holds the person's %q:\n%s", v, n.Body)
		}
	}
	w.close(t)
	d.checkNoPersonalData(t, w, "Åsa", "Ørnø", "Åke", "Öberg", "Ivar", "Ødegård", "1950-07-01")
}
