//go:build linux

package lifecycle

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/engine/enginetest"
)

// The tray's menu is in the window's language: read from a session bus of the test's own
// as a tray host reads it (com.canonical.dbusmenu on the StatusNotifierItem's menu), the
// items are "Vis", "Logg ut" and "Avslutt" in Norwegian.
func TestTrayMenuLanguage(t *testing.T) {
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatal("the tray's test needs a session bus: apt-get install -y dbus (scripts/test-deps.sh does)")
	}
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile",
		"--address=unix:path="+filepath.Join(t.TempDir(), "bus"), "--print-address=1")
	out, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Process.Kill(); _ = bus.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon gave no address: %v", err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", strings.TrimSpace(addr))

	eng := enginetest.New()
	if err := eng.Start(context.Background(), engine.Options{URL: "http://app/"}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := app.New(eng, app.Options{Version: "2.1.5.0", Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-a.Done() }()
	go a.Run(ctx)
	stop := startTray(ctx, a, log, "nb")
	defer stop()

	conn, err := dbus.SessionBusPrivateNoAutoStartup()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Auth(nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.Hello(); err != nil {
		t.Fatal(err)
	}
	menu := conn.Object(fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", os.Getpid()), "/StatusNotifierItem/menu")
	want := []string{i18n.T("nb", "webwrapper.tray.show"), i18n.T("nb", "webwrapper.tray.sign_out"), i18n.T("nb", "webwrapper.tray.quit")}
	var got []string
	for deadline := time.Now().Add(20 * time.Second); ; {
		// The items' properties, as a tray host reads them after the layout (ids 1 to 3,
		// the tray's three items). GetLayout itself is left out: systray v1.12.2 answers it
		// with a data race of its own (refresh writes the menu's version unlocked).
		var items []struct {
			ID    int32
			Props map[string]dbus.Variant
		}
		got = nil
		err := menu.Call("com.canonical.dbusmenu.GetGroupProperties", 0, []int32{1, 2, 3}, []string{"label"}).Store(&items)
		for _, it := range items {
			if l, ok := it.Props["label"].Value().(string); ok {
				got = append(got, l)
			}
		}
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tray's menu items = %q (%v), want %q", got, err, want)
		}
		time.Sleep(50 * time.Millisecond) // the menu is exported a moment after the tray starts
	}
	if want[0] != "Vis" || want[1] != "Logg ut" || want[2] != "Avslutt" {
		t.Errorf("the Norwegian items are %q", want)
	}
}
