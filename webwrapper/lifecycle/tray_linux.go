package lifecycle

import (
	"fmt"

	"github.com/godbus/dbus/v5"
)

// trayHost tells whether a tray can be shown: systray talks to the tray host over the
// session bus. dbus.SessionBus is the shared connection systray itself uses, so a bus
// found here is the one the tray gets.
func trayHost() error {
	if _, err := dbus.SessionBus(); err != nil {
		return fmt.Errorf("no DBus session bus: %v", err)
	}
	return nil
}
