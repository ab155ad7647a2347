package lifecycle

import (
	"context"
	"time"

	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/config"
)

// trackBounds reads the window's bounds now and then, since a window the user closed
// can no longer be asked at exit.
func (w *wrapper) trackBounds(ctx context.Context, a *app.App) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		w.readBounds(ctx, a)
		select {
		case <-ctx.Done():
			return
		case <-a.Done():
			return
		case <-t.C:
		}
	}
}

func (w *wrapper) readBounds(ctx context.Context, a *app.App) {
	eng := a.Window()
	if eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, max, err := eng.Bounds(ctx)
	if err != nil || b.Width <= 0 || b.Height <= 0 {
		return
	}
	w.mu.Lock()
	w.bounds, w.max, w.known = b, max, true
	w.mu.Unlock()
}

// shutdown saves the geometry and zoom (B-CFG-USER) and ends the browser.
func (w *wrapper) shutdown(a *app.App) {
	w.readBounds(context.Background(), a)
	w.mu.Lock()
	if w.known {
		w.cfg.SetInt(config.Left, w.bounds.Left)
		w.cfg.SetInt(config.Top, w.bounds.Top)
		w.cfg.SetInt(config.Width, w.bounds.Width)
		w.cfg.SetInt(config.Height, w.bounds.Height)
		w.cfg.SetBool(config.Maximized, w.max)
	}
	w.mu.Unlock()
	w.cfg.SetFloat(config.ZoomFactor, w.cfg.Zoom())
	if err := w.cfg.Save(); err != nil {
		w.log.Warn("saving the user settings", "error", err)
	}
	if eng := a.Window(); eng != nil {
		_ = eng.Close()
	}
}
