package lifecycle

import (
	"context"
	"net/http"
	"time"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/webwrapper/alert"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/config"
	"github.com/partnergate/partnergate/webwrapper/update"
)

// checkUpdate looks for a newer wrapper without delaying anything and shows the download
// link in the page's notice banner (VER-3), in the window's language (language: the start's
// culture or the Culture setting), else the desktop's, which the page follows then too.
func (w *wrapper) checkUpdate(ctx context.Context, a *app.App, language string) {
	if !w.cfg.Bool(config.CheckForUpdates) {
		return
	}
	feed := update.FeedURL(w.cfg.String(config.UpdateSite), w.cfg.String(config.UpdatePath))
	r := <-update.Start(ctx, http.DefaultClient, feed, w.o.Version, 30*time.Second)
	if r.Err != nil {
		w.log.Info("update check", "error", r.Err)
		return
	}
	w.log.Info("update check", "offered", r.Release.Version, "newer", r.Newer)
	if !r.Newer {
		return
	}
	lang := i18n.Choose(language, alert.Language())
	text := i18n.T(lang, "webwrapper.update_notice", "version", r.Release.Version)
	if err := a.Notice(ctx, text, r.Release.URL); err != nil {
		w.log.Warn("showing the update notice", "error", err)
	}
}
