package webwrapper

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/webwrapper/pipe"
)

// TestTwoSessions: one user with two desktop sessions side by side (two displays), as a
// terminal server gives them. Each session has a wrapper of its own: the second
// session's first start becomes its running wrapper instead of handing its arguments to
// the first session's window, a later start goes to its own session's wrapper, and a
// program of one session cannot drive the other session's wrapper through its pipe.
func TestTwoSessions(t *testing.T) {
	s := startStack(t)
	a := newDesktop(t, s, nil)
	wa := a.start(t, arguments)
	pa := wa.attach(t)
	pa.signIn(t)

	b := a.otherSession(t, nil)
	wb := b.start(t, arguments)
	if wb.cmd.Process.Pid == wa.cmd.Process.Pid {
		t.Fatal("the second session's start is the first session's wrapper")
	}
	b.waitWindow(t, "normal") // on the second session's own screen
	if v := string(wb.call(t, "version", nil)); !fourPart.MatchString(v) {
		t.Errorf("the second session's wrapper answers version %q", v)
	}

	// A later start in the second session goes to its wrapper: the first session's window
	// does not show its search.
	if code, out := b.second(t, arguments, "queryexercises=plank"); code != 0 {
		t.Fatalf("a later start in the second session exited %d:\n%s", code, out)
	}
	// One in the first session goes to the first session's window.
	if code, out := a.second(t, arguments, "queryexercises=squat"); code != 0 {
		t.Fatalf("a later start in the first session exited %d:\n%s", code, out)
	}
	pa.waitFor(t, "the first session's search", `location.search === "?q=squat"`)
	if got := eval[string](t, pa, `location.search`); strings.Contains(got, "plank") {
		t.Errorf("the first session's window shows %q: the second session's arguments landed there", got)
	}

	// The pipe: a program of the first session reaches its wrapper; one of the second
	// session is hung up on at the first session's pipe.
	if out, code := wa.svcpipe(t, "version"); code != 0 || !fourPart.MatchString(out) {
		t.Errorf("svcpipe of the first session at its wrapper = %q, exit %d; want the version", out, code)
	}
	wrong := *wa
	wrong.d = b // svcpipe with the second session's environment, at the first session's pipe
	if out, code := wrong.svcpipe(t, "version"); code == 0 {
		t.Errorf("svcpipe of the second session at the first session's pipe = %q, exit 0; want it refused", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pipe.Call(ctx, wb.pipePath(), "close", nil); err != nil {
		t.Errorf("close of the second session's wrapper = %v", err)
	}
	wb.waitExit(t, 30*time.Second)
	wa.close(t)
}
