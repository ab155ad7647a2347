// Package alert tells a person why the wrapper cannot do what it was started for (it
// cannot start, or it refused what a program gave it): a message box on Windows (user32
// MessageBoxW), a desktop notification elsewhere (org.freedesktop.Notifications on the
// session bus). The wrapper is a GUI program, without a console: without this a failure
// shows nowhere but in its log (docs/webwrapper.md, Failures a person sees).
package alert

import (
	"context"
	"strings"
)

// Message is what a person sees: a title and a text saying what happened and what to do.
// It never carries a person's data: the wrapper's errors never quote a value.
type Message struct {
	Title string
	Text  string
}

// Show shows m. On Windows it returns when the person has closed the box; elsewhere as
// soon as the desktop's notification service has taken it, or with an error when there is
// none (no session bus, no service): the log is then all there is.
func Show(ctx context.Context, m Message) error {
	// NUL ends a C string: a Windows API or a D-Bus string cannot carry one.
	m.Title = strings.ReplaceAll(m.Title, "\x00", "")
	m.Text = strings.ReplaceAll(m.Text, "\x00", "")
	return show(ctx, m)
}
