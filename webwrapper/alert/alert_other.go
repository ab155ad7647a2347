//go:build !windows

package alert

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

// The desktop notification service (Desktop Notifications Specification 1.2).
const (
	notifyName  = "org.freedesktop.Notifications"
	notifyPath  = "/org/freedesktop/Notifications"
	notifyIface = "org.freedesktop.Notifications"
)

// show sends m to the desktop's notification service as a critical notification that
// does not expire, so that it stays until the person closes it, as a message box does.
// It does not start a session bus where there is none (dbus-launch's autolaunch).
func show(ctx context.Context, m Message) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // D-Bus activation of the service
	defer cancel()
	conn, err := dbus.SessionBusPrivateNoAutoStartup(dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("desktop notification: no session bus: %w", err)
	}
	defer conn.Close()
	if err := conn.Auth(nil); err != nil {
		return fmt.Errorf("desktop notification: session bus: %w", err)
	}
	if err := conn.Hello(); err != nil {
		return fmt.Errorf("desktop notification: session bus: %w", err)
	}
	obj := conn.Object(notifyName, notifyPath)
	body := m.Text
	var caps []string
	if err := obj.CallWithContext(ctx, notifyIface+".GetCapabilities", 0).Store(&caps); err != nil {
		return fmt.Errorf("desktop notification: %w", err)
	}
	if slices.Contains(caps, "body-markup") {
		body = escapeMarkup(body) // a path's & or < is text, not markup
	}
	hints := map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(2))} // critical
	var id uint32
	err = obj.CallWithContext(ctx, notifyIface+".Notify", 0,
		m.Title, uint32(0), "dialog-error", m.Title, body, []string{}, hints, int32(0)).Store(&id)
	if err != nil {
		return fmt.Errorf("desktop notification: %w", err)
	}
	return nil
}

// escapeMarkup writes text for a body that the service reads as markup (a subset of
// XML): the three characters it reads as markup as entities.
func escapeMarkup(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
