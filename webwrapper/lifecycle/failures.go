package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/webwrapper/alert"
	"github.com/partnergate/partnergate/webwrapper/engine"
)

// A failure a person must see: the wrapper cannot start, or refused what a program gave it
// (docs/webwrapper.md, Failures a person sees). The text is in the wrapper's language, says
// what to do, and carries the error, whose text never quotes a value, and where the log is.
type teller struct {
	show    func(context.Context, alert.Message) error
	logs    *logs
	culture []string // the start's culture, then the Culture setting, as they become known
	fileLog bool     // Log or Debug: a failure to start is written to the log file too
}

// language is the texts' language: the start's culture, else the Culture setting (as for
// the window), else the desktop's.
func (t *teller) language() string {
	return i18n.Choose(slices.Concat(t.culture, []string{alert.Language()})...)
}

// message is the text of key with its arguments, err's text and where the log file is.
func (t *teller) message(key string, err error, args ...string) alert.Message {
	lang := t.language()
	parts := []string{i18n.T(lang, key, args...)}
	if err != nil {
		parts = append(parts, i18n.T(lang, "webwrapper.alert.details", "error", err.Error()))
	}
	if f := t.logs.file(); f != "" {
		parts = append(parts, i18n.T(lang, "webwrapper.alert.log", "folder", filepath.Dir(f)))
	}
	return alert.Message{Title: product, Text: strings.Join(parts, "\n\n")}
}

// tell shows the message of key and waits until the person has seen it (Windows: closed
// the box). A desktop that cannot show it leaves the log.
func (t *teller) tell(ctx context.Context, key string, err error, args ...string) {
	if serr := t.show(context.WithoutCancel(ctx), t.message(key, err, args...)); serr != nil {
		t.logs.logger.Warn("telling the user", "error", serr)
	}
}

// fail logs why the wrapper cannot start, tells the person, and returns code.
func (t *teller) fail(ctx context.Context, code int, key string, err error, args ...string) int {
	if t.fileLog {
		t.logs.enable()
	}
	t.logs.logger.Error("cannot start", "error", err)
	t.tell(ctx, key, err, args...)
	return code
}

// startFailure is the text of a failure to open the window: no browser, or one that did
// not start.
func startFailure(err error) (key string, args []string) {
	if errors.Is(err, engine.ErrNoBrowser) {
		return "webwrapper.alert.no_browser", []string{"browsers", strings.Join(engine.Browsers(runtime.GOOS), ", ")}
	}
	return "webwrapper.alert.browser_failed", nil
}

// refused tells the person that a start's command line or input.xml was refused, without
// holding up the wrapper: nothing of it runs.
func (t *teller) refused(ctx context.Context, log *slog.Logger, xml string, err error) {
	key, args := "webwrapper.alert.refused_args", []string(nil)
	if xml != "" {
		key, args = "webwrapper.alert.refused_xml", []string{"file", xml}
	}
	m := t.message(key, err, args...)
	go func() {
		if serr := t.show(context.WithoutCancel(ctx), m); serr != nil {
			log.Warn("telling the user", "error", serr)
		}
	}()
}
