package webwrapper

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/pipe"
	"github.com/partnergate/partnergate/webwrapper/signon"
)

// links is the desktop user's signon.json, as the wrapper keeps it.
func (d *desktop) links() *signon.Store {
	return signon.Open(filepath.Join(filepath.Dir(d.home), "config", "Svc", "Svc Webwrapper", signon.FileName))
}

// waitCredential waits until the wrapper keeps a device sign-on for external other than
// before, and returns it.
func (d *desktop) waitCredential(t *testing.T, external, before string) string {
	t.Helper()
	var secret string
	poll(t, 30*time.Second, "a device sign-on in signon.json", func() (bool, string) {
		l, s, ok, err := d.links().Credential(external)
		secret = s
		return ok && err == nil && s != before, fmt.Sprintf("link %+v, kept %v, %v", l, ok, err)
	})
	return secret
}

// wantRefused presents credential to the service's device sign-in as external of the
// installation inst, as someone with a copy of it would, and wants it refused.
func wantRefused(t *testing.T, service, what, credential, external, inst string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"credential": credential, "externalUser": external, "installation": inst})
	res, err := http.Post(service+"/app/device/signin", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var refused struct{ Code string }
	_ = json.NewDecoder(res.Body).Decode(&refused)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || refused.Code != "device_signon_invalid" {
		t.Errorf("%s = %d %q, want 401 device_signon_invalid", what, res.StatusCode, refused.Code)
	}
}

// endSessions deletes every session of the service, as their end (12 hours, a night)
// would: what signs the wrapper in next is its device sign-on or nothing.
func endSessions(t *testing.T, database string) {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+database+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, `DELETE FROM sessions`); err != nil {
		t.Fatalf("ending the service's sessions: %v", err)
	}
}

// TestDeviceSignOn is B-SSO's morning: the program's user signs in with the password
// once; the wrapper ends as at shutdown (SIGTERM) and the night ends every session of the
// service; the next start is signed in without the password, by the device sign-on,
// which turned into its next one. A copy of the used one presented again ends it: the
// next start asks for the password, and that sign-in gets a new one. close signs out and
// forgets it: the start after asks for the password.
func TestDeviceSignOn(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, nil)
	const external = `CLINIC\asa`
	w, _ := signedIn(t, d, arguments, "signon="+external)
	first := d.waitCredential(t, external, "")
	if l, _, _ := d.links().Get(external); l.Username != "instructor" {
		t.Errorf("the link is %+v, want the instructor's account", l)
	}
	w.end(t)
	endSessions(t, s.Database)

	w = d.start(t, arguments, "signon="+external)
	p := w.attach(t)
	p.waitFor(t, "a page at the next morning's start", pageShown)
	p.screenshot(t, "next-morning")
	if eval[bool](t, p, `!!document.getElementById("password")`) {
		w.close(t)
		t.Fatal("the start after the service's sessions ended asks for the password: the device sign-on did not sign in")
	}
	if got := p.text(t, "#account"); got != "Coach Carter" {
		t.Errorf("signed in as %q, want Coach Carter", got)
	}
	var nobody []pipePerson
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "none"}, &nobody)
	second := d.waitCredential(t, external, first)
	if !strings.Contains(s.AppLogs.String(), `"by":"device"`) {
		t.Error("the service's log has no sign-in by the device sign-on")
	}

	// The wrapper left open past its session's end (a night): the service's sessions end
	// while it runs. The page's next call finds the session ended, and the device sign-on
	// signs the window in again: the command after it runs signed in, without the password.
	endSessions(t, s.Database)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	_, _ = pipe.Call(ctx, w.pipePath(), "getlistofusers", map[string]any{"customid": "none"}) // finds the session ended
	cancel()
	third := d.waitCredential(t, external, second)
	w.callJSON(t, "getlistofusers", map[string]any{"customid": "none"}, &nobody)
	p.waitFor(t, "the page signed in again", pageShown)
	p.screenshot(t, "signed-in-again")
	if eval[bool](t, p, `!!document.getElementById("password")`) {
		t.Error("the wrapper whose session ended asks for the password: the device sign-on did not sign it in again")
	}
	if got := p.text(t, "#account"); got != "Coach Carter" {
		t.Errorf("signed in again as %q, want Coach Carter", got)
	}
	for _, secret := range []string{first, second, third} {
		if strings.Contains(w.out.String(), secret) || strings.Contains(s.AppLogs.String(), secret) {
			t.Error("a device sign-on's secret is in a log")
		}
	}

	// Someone with a copy of the first, used credential tries it: refused, and the
	// desktop's device sign-on has ended with it (reuse detection). The next start asks
	// for the password, and the sign-in gets a new device sign-on.
	inst, err := d.links().Installation()
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, s.Gateway.URL, "a used credential again", first, external, inst)
	w.end(t)
	endSessions(t, s.Database)
	w = d.start(t, arguments, "signon="+external)
	p = w.attach(t)
	p.waitFor(t, "a page after the reuse", pageShown)
	p.screenshot(t, "after-reuse")
	if !eval[bool](t, p, `!!document.getElementById("password")`) {
		w.close(t)
		t.Fatalf("the start after a used credential came again is signed in as %q, want the sign-in page", p.text(t, "#account"))
	}
	if _, _, ok, _ := d.links().Credential(external); ok {
		t.Error("the refused device sign-on is still kept")
	}
	p.signIn(t)
	d.waitCredential(t, external, second)

	// close signs out and forgets the device sign-on: the next start asks for the
	// password, though the service's sessions are ended again.
	w.close(t)
	if _, ok, _ := d.links().Get(external); ok {
		t.Error("after close signon.json still links the external user")
	}
	endSessions(t, s.Database)
	w = d.start(t, arguments, "signon="+external)
	p = w.attach(t)
	p.waitFor(t, "a page after close", pageShown)
	p.screenshot(t, "after-close")
	if !eval[bool](t, p, `!!document.getElementById("password")`) {
		t.Errorf("the start after close is signed in as %q, want the sign-in page", p.text(t, "#account"))
	}
	w.end(t)
}

// TestRememberOffEndsDeviceSignOn: the IT department turns RememberLoggedInUser off on a
// computer whose wrapper kept a device sign-on. The next start forgets the link and ends
// the device sign-on at the service as well: it asks for the password, and a copy of the
// kept credential (a backup of the profile) no longer signs anyone in.
func TestRememberOffEndsDeviceSignOn(t *testing.T) {
	s := startStack(t)
	d := newDesktop(t, s, nil)
	const external = `CLINIC\asa`
	w, _ := signedIn(t, d, arguments, "signon="+external)
	kept := d.waitCredential(t, external, "")
	inst, err := d.links().Installation()
	if err != nil {
		t.Fatal(err)
	}
	w.end(t)

	c := d.userConfig(t)
	c.SetBool(config.RememberLoggedInUser, false)
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	w = d.start(t, arguments, "signon="+external)
	p := w.attach(t)
	p.waitFor(t, "a page after RememberLoggedInUser was turned off", pageShown)
	if !eval[bool](t, p, `!!document.getElementById("password")`) {
		t.Errorf("the start with RememberLoggedInUser off is signed in as %q, want the sign-in page", p.text(t, "#account"))
	}
	if _, ok, _ := d.links().Get(external); ok {
		t.Error("with RememberLoggedInUser off signon.json still links the external user")
	}
	wantRefused(t, s.Gateway.URL, "the kept credential after RememberLoggedInUser was turned off", kept, external, inst)
	w.end(t)
}
