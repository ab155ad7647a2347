//go:build linux

package lifecycle

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/engine/enginetest"
)

// Without a DBus session bus (Xvfb, a bare X server) the wrapper starts no tray and says
// so, and closing it is quiet: systray v1.12.2 closed its nil DBus connection at Quit,
// a nil-pointer panic that the tray used to recover from and log.
func TestTrayWithoutDBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+wintest.TempDir(t)+"/no-bus")
	eng := enginetest.New()
	if err := eng.Start(context.Background(), engine.Options{URL: "http://app/"}); err != nil {
		t.Fatal(err)
	}
	var logs harness.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := app.New(eng, app.Options{Version: "2.1.5.0", Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	stop := startTray(ctx, a, log, "en")
	stop()
	cancel()
	<-a.Done()
	got := logs.String()
	if strings.Contains(got, "panic") || strings.Contains(got, "nil pointer") || !strings.Contains(got, "no tray") {
		t.Errorf("log = %q, want \"no tray\" and no panic", got)
	}
}

// TestTrayMenu: the tray menu is in the wrapper's language, and its "Sign out" signs the
// page out while the wrapper runs on.
func TestTrayMenu(t *testing.T) {
	var labels []string
	for _, it := range trayMenu("nb") {
		labels = append(labels, it.label)
	}
	if got := strings.Join(labels, "|"); got != "Vis|Logg ut|Avslutt" {
		t.Errorf("the Norwegian tray menu = %s", got)
	}
	for _, lang := range []string{"en", "nb", "sv", "da", "de"} {
		for _, it := range trayMenu(lang) {
			if it.label == "" || it.label == it.key {
				t.Errorf("%s: %s has no text", lang, it.key)
			}
		}
	}
	eng := enginetest.New()
	if err := eng.Start(context.Background(), engine.Options{URL: "http://app/"}); err != nil {
		t.Fatal(err)
	}
	eng.Handle("signOut", func([]any) (any, error) { return nil, nil })
	a := app.New(eng, app.Options{Version: "2.1.5.0"})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-a.Done() }()
	go a.Run(ctx)
	eng.Emit("signedIn", map[string]any{"account": map[string]any{"id": 7, "username": "inst"}})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		// signOut is called only while someone is signed in: wait for the page's sign-in.
		if err := trayMenu("en")[1].do(ctx, a); err != nil {
			t.Fatal(err)
		}
		if calls := eng.Calls(); len(calls) > 0 && calls[len(calls)-1].Fn == "signOut" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Sign out did not sign the page out")
		}
	}
	select {
	case <-a.Done():
		t.Error("the wrapper ended at the tray's Sign out")
	default:
	}
}
