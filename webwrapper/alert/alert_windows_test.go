package alert

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/partnergate/partnergate/internal/wintest"
)

// Show puts up a message box, as a person sees it: found from outside among the
// process's windows, with the title and the whole text (Norwegian letters and the line
// breaks included); it waits until the person presses OK. Under
// Wine, on test.sh's Xvfb.
func TestShowMessageBox(t *testing.T) {
	m := Message{Title: "Svc Webwrapper", Text: "Svc Webwrapper kan ikke starte.\n\nDetaljer: ingen nettleser – æøå"}
	done := make(chan error, 1)
	go func() { done <- Show(context.Background(), m) }()

	var box wintest.MessageBox
	deadline := time.Now().Add(30 * time.Second)
	for box == 0 {
		select {
		case err := <-done:
			t.Fatalf("Show returned %v before anyone pressed OK (under Wine the box needs an X display: test.sh gives one)", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no message box within 30 s")
		}
		if box = wintest.FindMessageBox(windows.GetCurrentProcessId()); box == 0 {
			time.Sleep(50 * time.Millisecond) // polling the desktop, which has no event for it here
		}
	}
	if got := box.Title(); got != m.Title {
		t.Errorf("the box's title = %q, want %q", got, m.Title)
	}
	if got := box.Text(); got != m.Text {
		t.Errorf("the box's text = %q, want %q", got, m.Text)
	}
	select {
	case err := <-done:
		t.Fatalf("Show returned %v while the box is open", err)
	default:
	}
	box.PressOK()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Show = %v after OK", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Show did not return within 30 s of OK")
	}
}
