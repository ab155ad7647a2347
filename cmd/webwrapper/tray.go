//go:build linux || windows

package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"fyne.io/systray"

	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/command"
)

// startTray shows the tray menu (MinimizeOnExit keeps the wrapper there while its window
// is closed): Show opens the window again, Quit ends the wrapper. Without a tray host (a
// desktop without one, Xvfb) systray logs an error and the wrapper runs on.
func startTray(ctx context.Context, a *app.App, log *slog.Logger) (stop func()) {
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		// systray v1.12.2 on Linux closes a nil DBus connection at Quit when it found no
		// session bus at start (Xvfb, a bare X server); that panic must not end the wrapper
		// before it saves its settings.
		defer func() {
			if r := recover(); r != nil {
				log.Warn("tray", "error", fmt.Sprint(r))
			}
		}()
		// The Windows tray's message loop must stay on the thread that made its window.
		runtime.LockOSThread()
		systray.Run(func() {
			systray.SetTitle(product)
			systray.SetTooltip(product)
			show := systray.AddMenuItem("Show", "Show the window")
			quit := systray.AddMenuItem("Quit", "Close the wrapper")
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
