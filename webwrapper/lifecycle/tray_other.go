//go:build !linux && !windows

package lifecycle

import (
	"context"
	"log/slog"

	"github.com/partnergate/partnergate/webwrapper/app"
)

// startTray does nothing where fyne.io/systray needs cgo (macOS): the window closed under
// MinimizeOnExit comes back with the pipe's show.
func startTray(context.Context, *app.App, *slog.Logger, string) (stop func()) { return func() {} }
