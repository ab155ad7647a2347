//go:build linux || windows

package lifecycle

import (
	"context"
	"log/slog"
	"runtime"
	"time"

	"fyne.io/systray"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/command"
)

// startTray shows the tray menu (MinimizeOnExit keeps the wrapper there while its window
// is closed), in lang: Show opens the window again, Quit ends the wrapper. Without a tray host (no
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
			show := systray.AddMenuItem(i18n.T(lang, "webwrapper.tray.show"), i18n.T(lang, "webwrapper.tray.show_tip"))
			quit := systray.AddMenuItem(i18n.T(lang, "webwrapper.tray.quit"), i18n.T(lang, "webwrapper.tray.quit_tip"))
			go func() {
				for {
					var c command.Command
					select {
					case <-show.ClickedCh:
						c = command.Command{Name: command.Show}
					case <-quit.ClickedCh:
						c = command.Command{Name: command.Close}
					case <-a.Done():
						return
					}
					if _, _, err := a.Do(ctx, c); err != nil {
						log.Warn("tray", "command", string(c.Name), "error", err)
					}
				}
			}()
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
