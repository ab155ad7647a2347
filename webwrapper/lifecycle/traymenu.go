package lifecycle

import (
	"context"

	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/command"
)

// trayItem is one item of the tray menu: its text key, its label and tooltip in the
// menu's language, and what choosing it does.
type trayItem struct {
	key   string
	label string
	tip   string // its key, until trayMenu puts the text there
	do    func(context.Context, *app.App) error
}

// trayMenu is the tray menu in lang: Show (the pipe's show), Sign out (signs the page out
// and forgets the sign-on, so that the next start asks for the password; the wrapper runs
// on) and Quit (the pipe's close, which signs out too).
func trayMenu(lang string) []trayItem {
	run := func(name command.Name) func(context.Context, *app.App) error {
		return func(ctx context.Context, a *app.App) error {
			_, _, err := a.Do(ctx, command.Command{Name: name})
			return err
		}
	}
	items := []trayItem{
		{key: "webwrapper.tray.show", tip: "webwrapper.tray.show_tip", do: run(command.Show)},
		{key: "webwrapper.tray.sign_out", tip: "webwrapper.tray.sign_out_tip", do: func(ctx context.Context, a *app.App) error {
			a.SignOut(ctx)
			return nil
		}},
		{key: "webwrapper.tray.quit", tip: "webwrapper.tray.quit_tip", do: run(command.Close)},
	}
	for i := range items {
		items[i].label = i18n.T(lang, items[i].key)
		items[i].tip = i18n.T(lang, items[i].tip)
	}
	return items
}
