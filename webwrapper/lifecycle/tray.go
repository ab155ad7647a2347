//go:build linux || windows

package lifecycle

import (
	"context"
	"log/slog"
	"runtime"
	"time"

	"fyne.io/systray"

	"github.com/partnergate/partnergate/webwrapper/app"
)

// startTray shows the tray menu (MinimizeOnExit keeps the wrapper there while its window
// is closed), in lang: Show opens the window again, Sign out signs out and forgets the
// sign-on (the next start asks for the password) while the wrapper runs on, Quit is close. Without a tray host (no
// DBus session bus on Linux: Xvfb, a bare X server) there is no menu and the wrapper runs
// on: systray is not started at all then, since systray v1.12.2 leaves its DBus connection
// nil when it finds no bus and closes that nil connection at Quit, a nil-pointer panic.
func startTray(ctx context.Context, a *app.App, log *slog.Logger, lang string) (stop func()) {
	if err := trayHost(); err != nil {
		log.Info("no tray: show opens the window again", "reason", err.Error())
		return func() {}
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		// The Windows tray's message loop must stay on the thread that made its window.
		runtime.LockOSThread()
		systray.Run(func() {
			systray.SetTitle(product)
			systray.SetTooltip(product)
			for _, it := range trayMenu(lang) {
				m := systray.AddMenuItem(it.label, it.tip)
				go func() {
					for {
						select {
						case <-m.ClickedCh:
							if err := it.do(ctx, a); err != nil {
								log.Warn("tray", "item", it.key, "error", err)
							}
						case <-a.Done():
							return
						}
					}
				}()
			}
		}, nil)
	}()
	return func() {
		systray.Quit()
		select {
		case <-ended:
		case <-time.After(2 * time.Second): // a tray that never started has nothing to end
		}
	}
}
